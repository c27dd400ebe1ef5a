# The console's own image: the release binary (its site embedded), run as a non-root user, with
# a HEALTHCHECK on /readyz. Multi-stage; with a registry at hand:
#
#   docker build -t sandbox-console .
#
# Without one (as on the machines this project is tested on), `scripts/deploy.sh image` builds
# the same final stage on a base made from the host's own files and a binary built on the host:
#
#   docker buildx build --build-arg BASE=sandbox-console-base:local \
#     --build-arg BINARY=prebuilt --build-arg PREBUILT=target/release/sandbox-console .
#
# BuildKit builds only the stages the final one needs, so the unused ones are never pulled
# (without buildx, deploy.sh hands the classic builder this file minus those stages).
# A base given in BASE must hold what runtime-base holds: the C library, libgcc and libseccomp,
# CA certificates, and /var/lib/sandbox-console owned by 10001:10001, mode 0700.

ARG RUST_IMAGE=rust:1.95-bookworm
ARG DEBIAN_IMAGE=debian:bookworm-slim
ARG BASE=runtime-base
ARG BINARY=release

# 1. The release build: the wasm bundle, the styles, then the server that embeds them.
FROM ${RUST_IMAGE} AS release
WORKDIR /src
# The tools first (wasm target, wasm-bindgen CLI of the lockfile's version), so a source
# change does not install them again.
COPY Cargo.toml Cargo.lock ./
COPY scripts/setup.sh scripts/
RUN scripts/setup.sh
COPY . .
RUN scripts/build.sh --release \
    && install -D -m 0755 target/release/sandbox-console /out/sandbox-console

# 1'. Or a binary built on the host (scripts/deploy.sh image).
FROM scratch AS prebuilt
ARG PREBUILT=target/release/sandbox-console
COPY ${PREBUILT} /out/sandbox-console

FROM ${BINARY} AS binary

# 2. What the binary needs at run time, and its data directory.
FROM ${DEBIAN_IMAGE} AS runtime-base
# Unpinned package versions on purpose: the base tag fixes the Debian release, and its
# security updates should come in with each build.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libseccomp2 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 sandbox-console \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
        --home-dir /var/lib/sandbox-console --shell /usr/sbin/nologin sandbox-console \
    && install -d -o 10001 -g 10001 -m 0700 /var/lib/sandbox-console

# 3. The image.
FROM ${BASE}
COPY --from=binary /out/sandbox-console /usr/local/bin/sandbox-console
USER 10001:10001
WORKDIR /var/lib/sandbox-console
ENV SANDBOX_CONSOLE_LISTEN=0.0.0.0:3000 \
    SANDBOX_CONSOLE_DATA_DIR=/var/lib/sandbox-console \
    SANDBOX_CONSOLE_BUILD_DEFAULT_ENVIRONMENT=false
VOLUME ["/var/lib/sandbox-console"]
EXPOSE 3000
# `probe` asks /readyz on the listen address: 0 on 200, 1 otherwise.
HEALTHCHECK --interval=10s --timeout=6s --start-period=20s --retries=3 \
    CMD ["/usr/local/bin/sandbox-console", "probe", "--timeout", "5"]
ENTRYPOINT ["/usr/local/bin/sandbox-console"]
CMD ["serve"]
