"""Offline checks of the deployment files (run by scripts/deploy.sh check, in its tool venv).

Beyond the schemas (Kubernetes' own JSON schemas through kubernetes-validate, the compose
specification through check-jsonschema, hadolint, `caddy validate`, run by deploy.sh), this
checks what the files must agree on among themselves and with the console: probes on the
console's /readyz and /healthz, the port the image exposes, the Secret keys the Deployment
reads, selectors that select the pods, non-root everywhere, replicas that share one database
and key, the proxy balancing over every replica without sticky sessions, and the agent-sandbox
objects against their documented v1beta1 fields (extensions/api/v1beta1/*_types.go; their CRD
schemas are not vendored here), and the objects the `kubernetes` provider uses against its
source (deploy_check_provider.py). `--self-test` breaks each rule once and expects a complaint.

Usage: deploy_check.py ROOT [--self-test]
"""

import copy
import io
import json
import os
import re
import subprocess
import sys

import yaml
from dockerfile_parse import DockerfileParser
import kubernetes_validate

import deploy_check_provider

# Versions validated against: the oldest with the native preStop sleep, and the newest the
# validator knows.
KUBERNETES_VERSIONS = ["1.30.0", kubernetes_validate.utils.latest_version()]
CONSOLE_PORT = 3000


class Problems:
    def __init__(self):
        self.items = []

    def add(self, where, what):
        self.items.append(f"{where}: {what}")

    def need(self, condition, where, what):
        if not condition:
            self.add(where, what)


# --- Dockerfile ---------------------------------------------------------------------------


def dockerfile_stages(text):
    # Parsed from memory: without a file object the parser writes its content to ./Dockerfile,
    # which from the repository's root overwrote the real one with each broken variant.
    parser = DockerfileParser(fileobj=io.BytesIO(text.encode()))
    stages, current = [], None
    for instruction in parser.structure:
        if instruction["instruction"] == "FROM":
            current = {"from": instruction["value"], "lines": []}
            stages.append(current)
        elif current is not None:
            current["lines"].append((instruction["instruction"], instruction["value"]))
    args = {}
    for instruction in parser.structure:
        if instruction["instruction"] == "ARG" and "=" in instruction["value"]:
            name, value = instruction["value"].split("=", 1)
            args.setdefault(name.strip(), value.strip())
        if instruction["instruction"] == "FROM":
            break
    return stages, args


def check_dockerfile(text, problems):
    where = "Dockerfile"
    stages, args = dockerfile_stages(text)
    problems.need(len(stages) >= 3, where, "a multi-stage build (build, base, image) is expected")
    if not stages:
        return
    final = stages[-1]
    lines = final["lines"]
    kinds = [kind for kind, _ in lines]
    users = [value for kind, value in lines if kind == "USER"]
    problems.need(users, where, "the final stage sets no USER")
    for user in users:
        uid = user.split(":")[0]
        problems.need(uid.isdigit() and int(uid) != 0, where, f"USER {user} is not a numeric non-root user")
    health = [value for kind, value in lines if kind == "HEALTHCHECK"]
    problems.need(
        health and "probe" in health[0] and "[" in health[0], where,
        "the final stage needs HEALTHCHECK CMD [\"…sandbox-console\", \"probe\", …] (exec form)",
    )
    entry = [value for kind, value in lines if kind == "ENTRYPOINT"]
    problems.need(entry and entry[0].startswith("["), where, "ENTRYPOINT must be in exec form")
    # The final stage must work on a minimal base (no shell, no package manager).
    problems.need("RUN" not in kinds, where, "the final stage must not RUN (it is built on minimal bases)")
    exposed = [value for kind, value in lines if kind == "EXPOSE"]
    problems.need(exposed == [str(CONSOLE_PORT)], where, f"the image must EXPOSE {CONSOLE_PORT}")
    env = " ".join(value for kind, value in lines if kind == "ENV")
    problems.need(
        f"SANDBOX_CONSOLE_LISTEN=0.0.0.0:{CONSOLE_PORT}" in env, where,
        f"the image must listen on 0.0.0.0:{CONSOLE_PORT}",
    )
    problems.need(
        any(kind == "COPY" and "--from=binary" in value for kind, value in lines), where,
        "the final stage must copy the binary from the `binary` stage",
    )
    # Every image a stage starts from has a tag (no implicit :latest).
    names = {stage["from"].split(" AS ")[-1].split(" as ")[-1].strip() for stage in stages}
    for stage in stages:
        image = stage["from"].split()[0]
        image = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), image)
        if image in names or image == "scratch":
            continue
        problems.need(":" in image and not image.endswith(":latest"), where, f"FROM {image} needs a pinned tag")


# --- compose + Caddyfile -----------------------------------------------------------------------


def console_services(compose):
    return {
        name: service
        for name, service in compose.get("services", {}).items()
        if str(service.get("image", "")).startswith("sandbox-console")
    }


def check_compose(compose, caddy_json, problems):
    where = "compose.yaml"
    services = compose.get("services", {})
    consoles = console_services(compose)
    problems.need(len(consoles) >= 2, where, "at least two console replicas are expected")
    problems.need("postgres" in services, where, "a postgres service is expected")
    postgres = services.get("postgres", {})
    problems.need("healthcheck" in postgres, where, "postgres needs a healthcheck (consoles wait for it)")
    environments = {}
    for name, service in consoles.items():
        env = dict(service.get("environment") or {})
        environments[name] = env
        problems.need("ports" not in service, where, f"{name} must not publish ports (only the proxy does)")
        url = env.get("DATABASE_URL", "")
        problems.need(url.startswith("postgres://") and "@postgres:" in url, where,
                      f"{name}: DATABASE_URL must point at the postgres service")
        problems.need(":?" in env.get("SANDBOX_CONSOLE_SECRET_KEY", ""), where,
                      f"{name}: SANDBOX_CONSOLE_SECRET_KEY must come from the environment, required")
        problems.need(env.get("SANDBOX_CONSOLE_SECURE_COOKIES") == "true", where,
                      f"{name}: cookies must be Secure behind TLS")
        problems.need(env.get("SANDBOX_CONSOLE_REPLICA_NAME") == name, where,
                      f"{name}: SANDBOX_CONSOLE_REPLICA_NAME should be the service name")
        problems.need(service.get("read_only") is True, where, f"{name}: the root filesystem should be read-only")
        problems.need("ALL" in (service.get("cap_drop") or []), where, f"{name}: drop all capabilities")
        depends = service.get("depends_on") or {}
        problems.need(
            isinstance(depends, dict) and depends.get("postgres", {}).get("condition") == "service_healthy",
            where, f"{name} must wait for a healthy postgres",
        )
    shared = ["DATABASE_URL", "SANDBOX_CONSOLE_SECRET_KEY", "SANDBOX_CONSOLE_PUBLIC_URL"]
    for key in shared:
        values = {env.get(key) for env in environments.values()}
        problems.need(len(values) == 1, where, f"every replica needs the same {key}")
    proxies = [name for name, service in services.items() if "ports" in service]
    problems.need(len(proxies) == 1, where, "exactly one service (the proxy) publishes ports")
    if len(proxies) != 1:
        return
    proxy = services[proxies[0]]
    proxy_env = proxy.get("environment") or {}
    upstreams = set(str(proxy_env.get("CONSOLE_UPSTREAMS", "")).split())
    problems.need(upstreams == {f"{name}:{CONSOLE_PORT}" for name in consoles}, where,
                  "CONSOLE_UPSTREAMS must name every console replica at its port")
    depends = proxy.get("depends_on") or {}
    for name in consoles:
        problems.need(isinstance(depends, dict) and depends.get(name, {}).get("condition") == "service_healthy",
                      where, f"the proxy must wait for {name} to be healthy")
    addresses = [
        network.get("ipv4_address")
        for network in (proxy.get("networks") or {}).values()
        if isinstance(network, dict)
    ] if isinstance(proxy.get("networks"), dict) else []
    for name, env in environments.items():
        trusted = env.get("SANDBOX_CONSOLE_TRUSTED_PROXIES", "")
        problems.need(trusted and trusted in addresses, where,
                      f"{name}: SANDBOX_CONSOLE_TRUSTED_PROXIES must be the proxy's own address")
    database = (compose.get("networks") or {}).get("database") or {}
    problems.need(database.get("internal") is True, where, "the database network must be internal")
    for name, service in services.items():
        image = str(service.get("image", ""))
        if name not in consoles:
            problems.need(":" in image and not image.endswith(":latest"), where, f"{name}: pin the image tag")
    check_caddy(caddy_json, len(consoles), problems)


def find_handlers(node, kind):
    found = []
    if isinstance(node, dict):
        if node.get("handler") == kind:
            found.append(node)
        for value in node.values():
            found.extend(find_handlers(value, kind))
    elif isinstance(node, list):
        for value in node:
            found.extend(find_handlers(value, kind))
    return found


def check_caddy(config, replicas, problems):
    where = "Caddyfile"
    proxies = find_handlers(config, "reverse_proxy")
    problems.need(len(proxies) == 1, where, "one reverse_proxy is expected")
    if proxies:
        proxy = proxies[0]
        problems.need(len(proxy.get("upstreams", [])) == replicas, where,
                      f"the proxy must balance over all {replicas} replicas")
        policy = (proxy.get("load_balancing") or {}).get("selection_policy", {}).get("policy")
        problems.need(policy == "round_robin", where, "round-robin, no sticky sessions (replicas are stateless)")
        active = (proxy.get("health_checks") or {}).get("active") or {}
        problems.need(active.get("uri") == "/readyz", where, "the proxy must health-check /readyz")
        transport = proxy.get("transport") or {}
        problems.need(transport.get("dial_timeout") and transport.get("response_header_timeout"), where,
                      "dial and response-header timeouts are required")
    headers = find_handlers(config, "headers")
    text = json.dumps(headers)
    problems.need("Strict-Transport-Security" in text, where, "HSTS must be set by the TLS terminator")
    problems.need('"Server"' in text, where, "the proxy's Server header should be removed")
    servers = config.get("apps", {}).get("http", {}).get("servers", {})
    problems.need(any(":443" in listen for server in servers.values() for listen in server.get("listen", [])),
                  where, "the site must be served on 443 (TLS)")


# --- Kubernetes --------------------------------------------------------------------------------

TEMPLATE_FIELDS = {
    "podTemplate", "volumeClaimTemplates", "service", "networkPolicy", "networkPolicyManagement",
    "envVarsInjectionPolicy", "volumeClaimTemplatesPolicy", "generatedSecrets",
}
POOL_FIELDS = {"replicas", "sandboxTemplateRef", "updateStrategy"}
AGENT_SANDBOX = "extensions.agents.x-k8s.io/v1beta1"


# What the schemas say of one object, by its content: the self-test checks 40 variants of the
# same 13 objects, and each variant changes one of them (the validator reads its schema files
# anew on every call: 10 s of the self-test, 30 s on a loaded machine).
_SCHEMA_COMPLAINTS = {}


def validate_builtin(doc, problems, where):
    key = json.dumps(doc, sort_keys=True)
    if key not in _SCHEMA_COMPLAINTS:
        _SCHEMA_COMPLAINTS[key] = validate_versions(doc)
    if _SCHEMA_COMPLAINTS[key]:
        problems.add(where, _SCHEMA_COMPLAINTS[key])


def validate_versions(doc):
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            return f"Kubernetes {version}: {error.message} at {'.'.join(map(str, error.path))}"
        except kubernetes_validate.SchemaNotFoundError:
            return f"Kubernetes {version} has no {doc.get('apiVersion')} {doc.get('kind')}"
    return None


def hardened(pod_spec, problems, where):
    security = pod_spec.get("securityContext") or {}
    problems.need(security.get("runAsNonRoot") is True, where, "pods must run as non-root")
    problems.need((security.get("seccompProfile") or {}).get("type") == "RuntimeDefault", where,
                  "pods need the RuntimeDefault seccomp profile")
    problems.need(pod_spec.get("automountServiceAccountToken") is False, where,
                  "no service account token in the pods")
    for container in pod_spec.get("containers", []):
        context = container.get("securityContext") or {}
        name = f"{where} container {container.get('name')}"
        problems.need(context.get("allowPrivilegeEscalation") is False, name, "allowPrivilegeEscalation: false")
        problems.need(context.get("readOnlyRootFilesystem") is True, name, "readOnlyRootFilesystem: true")
        problems.need("ALL" in ((context.get("capabilities") or {}).get("drop") or []), name, "drop ALL capabilities")
        limits = (container.get("resources") or {}).get("limits") or {}
        problems.need("memory" in limits, name, "a memory limit")


def selects(selector, labels):
    match = (selector or {}).get("matchLabels") if "matchLabels" in (selector or {}) else selector
    return bool(match) and all(labels.get(key) == value for key, value in match.items())


def check_kubernetes(folder, docs_by_file, kustomization, problems):
    listed = kustomization.get("resources", [])
    on_disk = sorted(name for name in os.listdir(folder) if name.endswith(".yaml") and name != "kustomization.yaml")
    problems.need(sorted(listed) == on_disk, "kustomization.yaml", f"resources {listed} must list {on_disk}")
    docs = [(f"{name}: {doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}", doc)
            for name, file_docs in docs_by_file.items() for doc in file_docs]
    by_kind = {}
    for where, doc in docs:
        by_kind.setdefault(doc.get("kind"), []).append((where, doc))
        if doc.get("apiVersion") == AGENT_SANDBOX:
            continue
        validate_builtin(doc, problems, where)
    namespaces = {(doc.get("metadata") or {}).get("name") for _, doc in by_kind.get("Namespace", [])}
    for where, doc in docs:
        namespace = (doc.get("metadata") or {}).get("namespace")
        if doc.get("kind") not in ("Namespace", "RuntimeClass"):
            problems.need(namespace in namespaces, where, f"namespace {namespace!r} is not one of {sorted(namespaces)}")
    images = {image["name"] for image in kustomization.get("images", [])}

    deployments = by_kind.get("Deployment", [])
    problems.need(len(deployments) == 1, "console.yaml", "one Deployment is expected")
    secrets = {(doc["metadata"]["name"]): doc for _, doc in by_kind.get("Secret", [])}
    for where, deployment in deployments:
        spec = deployment["spec"]
        pod = spec["template"]
        labels = pod["metadata"].get("labels", {})
        problems.need(selects(spec.get("selector"), labels), where, "the selector must select the pods")
        problems.need(spec.get("replicas", 1) >= 2, where, "two replicas or more")
        pod_spec = pod["spec"]
        hardened(pod_spec, problems, where)
        containers = pod_spec.get("containers", [])
        problems.need(len(containers) == 1, where, "one container")
        if not containers:
            continue
        container = containers[0]
        problems.need(container.get("image") in images, where, "the image must be one kustomization names")
        ports = {port.get("name"): port.get("containerPort") for port in container.get("ports", [])}
        problems.need(ports.get("http") == CONSOLE_PORT, where, f"port http must be {CONSOLE_PORT}")
        for probe, path in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz"), ("startupProbe", "/readyz")]:
            get = (container.get(probe) or {}).get("httpGet") or {}
            problems.need(get.get("path") == path and get.get("port") in ("http", CONSOLE_PORT), where,
                          f"{probe} must GET {path} on the http port")
        env = {item["name"]: item for item in container.get("env", [])}
        for name in ("DATABASE_URL", "SANDBOX_CONSOLE_SECRET_KEY"):
            reference = ((env.get(name) or {}).get("valueFrom") or {}).get("secretKeyRef")
            problems.need(reference is not None, where, f"{name} must come from a Secret")
        for name, item in env.items():
            reference = (item.get("valueFrom") or {}).get("secretKeyRef")
            if not reference:
                continue
            secret = secrets.get(reference["name"])
            data = {**((secret or {}).get("stringData") or {}), **((secret or {}).get("data") or {})}
            problems.need(reference.get("optional") or reference["key"] in data, where,
                          f"{name}: Secret {reference['name']} has no key {reference['key']}")
        problems.need((env.get("SANDBOX_CONSOLE_REPLICA_NAME") or {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name",
                      where, "each replica is named after its pod")
        problems.need((env.get("SANDBOX_CONSOLE_SECURE_COOKIES") or {}).get("value") == "true", where, "Secure cookies")
        # Kubernetes counts the preStop sleep inside the grace period; after SIGTERM the console
        # takes its shutdown grace plus 5 s of draining.
        grace = int(((env.get("SANDBOX_CONSOLE_SHUTDOWN_GRACE_SECS") or {}).get("value")) or 30)
        pre_stop = (((container.get("lifecycle") or {}).get("preStop") or {}).get("sleep") or {}).get("seconds", 0)
        problems.need(pod_spec.get("terminationGracePeriodSeconds", 30) > pre_stop + grace + 5, where,
                      "terminationGracePeriodSeconds must exceed the preStop sleep, the console's shutdown grace and its drain")
        strategy = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        problems.need(strategy.get("maxUnavailable") == 0, where, "rolling updates must keep every replica serving")
        for kind in ("Service", "PodDisruptionBudget", "NetworkPolicy"):
            objects = by_kind.get(kind, [])
            console_objects = [(w, d) for w, d in objects if d["metadata"].get("namespace") == deployment["metadata"]["namespace"]]
            problems.need(console_objects, where, f"a {kind} for the console is expected")
            for other_where, other in console_objects:
                selector = other["spec"].get("selector") if kind != "NetworkPolicy" else other["spec"].get("podSelector")
                problems.need(selects(selector, labels), other_where, "must select the console pods")
        for other_where, service in by_kind.get("Service", []):
            targets = {port.get("targetPort") for port in service["spec"].get("ports", [])}
            problems.need(targets <= {"http", CONSOLE_PORT}, other_where, "must target the http port")
        for other_where, policy in by_kind.get("NetworkPolicy", []):
            spec_ = policy["spec"]
            problems.need(set(spec_.get("policyTypes", [])) == {"Ingress", "Egress"}, other_where,
                          "both directions must be restricted")
            ingress_ports = {port.get("port") for rule in spec_.get("ingress", []) for port in rule.get("ports", [])}
            problems.need(ingress_ports == {CONSOLE_PORT}, other_where, f"only port {CONSOLE_PORT} may be reached")
            egress_ports = {port.get("port") for rule in spec_.get("egress", []) for port in rule.get("ports", [])}
            problems.need(53 in egress_ports and 5432 in egress_ports, other_where, "DNS and PostgreSQL must be reachable")
            problems.need(all(rule.get("ports") for rule in spec_.get("egress", [])), other_where,
                          "every egress rule must name its ports")
        for other_where, budget in by_kind.get("PodDisruptionBudget", []):
            problems.need(budget["spec"].get("minAvailable", 0) >= 1, other_where, "keep one replica up")
    for where, secret in by_kind.get("Secret", []):
        values = " ".join(str(value) for value in (secret.get("stringData") or {}).values())
        problems.need("REPLACE-ME" in values, where, "the sample Secret must hold placeholders only")

    runtime_classes = {doc["metadata"]["name"]: doc for _, doc in by_kind.get("RuntimeClass", [])}
    problems.need(runtime_classes.get("gvisor", {}).get("handler") == "runsc", "sandboxes.yaml",
                  "RuntimeClass gvisor with handler runsc is expected")
    templates = {}
    for where, template in by_kind.get("SandboxTemplate", []):
        problems.need(template.get("apiVersion") == AGENT_SANDBOX, where, f"apiVersion must be {AGENT_SANDBOX}")
        spec = template.get("spec") or {}
        templates[(template["metadata"].get("namespace"), template["metadata"]["name"])] = template
        unknown = set(spec) - TEMPLATE_FIELDS
        problems.need(not unknown, where, f"unknown SandboxTemplate fields {sorted(unknown)}")
        pod_template = spec.get("podTemplate")
        problems.need(isinstance(pod_template, dict), where, "spec.podTemplate is required")
        if not isinstance(pod_template, dict):
            continue
        # podTemplate is a core PodTemplateSpec: validated as the core type that holds one.
        validate_builtin({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "check"},
                          "template": pod_template}, problems, f"{where} spec.podTemplate")
        pod_spec = pod_template.get("spec") or {}
        problems.need(pod_spec.get("runtimeClassName") in runtime_classes, where,
                      "the pods must use a RuntimeClass defined here")
        hardened(pod_spec, problems, where)
        for container in pod_spec.get("containers", []):
            problems.need(container.get("image") in images, where, "the image must be one kustomization names")
        rules = spec.get("networkPolicy")
        if rules is not None:
            validate_builtin({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                              "metadata": {"name": "check"},
                              "spec": {"podSelector": {}, **rules}}, problems, f"{where} spec.networkPolicy")
        for field, allowed in [("networkPolicyManagement", {"Managed", "Unmanaged"}),
                               ("envVarsInjectionPolicy", {"Allowed", "Overrides", "Disallowed"}),
                               ("volumeClaimTemplatesPolicy", {"Allowed", "Overrides", "Disallowed"})]:
            if field in spec:
                problems.need(spec[field] in allowed, where, f"{field} must be one of {sorted(allowed)}")
    problems.need(templates, "sandboxes.yaml", "a SandboxTemplate is expected")
    pools = by_kind.get("SandboxWarmPool", [])
    problems.need(pools, "sandboxes.yaml", "a SandboxWarmPool is expected")
    for where, pool in pools:
        problems.need(pool.get("apiVersion") == AGENT_SANDBOX, where, f"apiVersion must be {AGENT_SANDBOX}")
        spec = pool.get("spec") or {}
        unknown = set(spec) - POOL_FIELDS
        problems.need(not unknown, where, f"unknown SandboxWarmPool fields {sorted(unknown)}")
        replicas = spec.get("replicas", 1)
        problems.need(isinstance(replicas, int) and replicas >= 0, where, "spec.replicas must be an integer >= 0")
        reference = (spec.get("sandboxTemplateRef") or {}).get("name")
        problems.need((pool["metadata"].get("namespace"), reference) in templates, where,
                      f"sandboxTemplateRef {reference!r} must name a SandboxTemplate in the same namespace")
        strategy = (spec.get("updateStrategy") or {}).get("type", "OnReplenish")
        problems.need(strategy in ("OnReplenish", "Recreate"), where, "updateStrategy.type: OnReplenish or Recreate")


# --- driver ------------------------------------------------------------------------------------


def load(root):
    with open(os.path.join(root, "Dockerfile")) as f:
        dockerfile = f.read()
    with open(os.path.join(root, "deploy/compose/compose.yaml")) as f:
        compose = yaml.safe_load(f)
    env = dict(os.environ, SITE_ADDRESS="localhost", TLS="internal")
    env.pop("CONSOLE_UPSTREAMS", None)
    # The upstreams as compose passes them to Caddy.
    services = console_services(compose)
    env["CONSOLE_UPSTREAMS"] = ((compose["services"].get("proxy") or {}).get("environment") or {}).get(
        "CONSOLE_UPSTREAMS", " ".join(f"{name}:{CONSOLE_PORT}" for name in services))
    adapted = subprocess.run(
        ["caddy", "adapt", "--adapter", "caddyfile", "--config", os.path.join(root, "deploy/compose/Caddyfile")],
        env=env, capture_output=True, text=True, check=True,
    )
    caddy_json = json.loads(adapted.stdout)
    folder = os.path.join(root, "deploy/kubernetes")
    with open(os.path.join(folder, "kustomization.yaml")) as f:
        kustomization = yaml.safe_load(f)
    docs_by_file = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".yaml") and name != "kustomization.yaml":
            with open(os.path.join(folder, name)) as f:
                docs_by_file[name] = [doc for doc in yaml.safe_load_all(f) if doc]
    generated = deploy_check_provider.generated_config_maps(folder, kustomization)
    provider = deploy_check_provider.provider_side(root)
    return dockerfile, compose, caddy_json, folder, docs_by_file, kustomization, generated, provider


def check_all(dockerfile, compose, caddy_json, folder, docs_by_file, kustomization, generated, provider):
    problems = Problems()
    check_dockerfile(dockerfile, problems)
    check_compose(compose, caddy_json, problems)
    check_kubernetes(folder, docs_by_file, kustomization, problems)
    deploy_check_provider.check(docs_by_file, generated, provider, problems)
    return problems.items


def find(docs_by_file, kind):
    return next(doc for docs in docs_by_file.values() for doc in docs if doc.get("kind") == kind)


def self_test(loaded):
    """Each mutation must be caught: a check that cannot fail proves nothing."""
    def mutate_k8s(change):
        def apply(state):
            change(state[4])
        return apply

    def deployment_container(docs):
        return find(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]

    # Each broken variant, and words the complaint about it must contain (so a variant caught
    # by some other rule by accident does not count).
    mutations = {
        "the final stage runs as root": (
            lambda s: s.__setitem__(0, s[0].replace("USER 10001:10001", "USER 0")), "not a numeric non-root user"),
        "no HEALTHCHECK": (
            lambda s: s.__setitem__(0, re.sub(r"HEALTHCHECK[^\n]*\\\n[^\n]*\n", "", s[0])), "HEALTHCHECK"),
        "an untagged base image": (
            lambda s: s.__setitem__(0, s[0].replace("debian:bookworm-slim", "debian")), "pinned tag"),
        "a RUN in the final stage": (
            lambda s: s.__setitem__(0, s[0].replace("USER 10001:10001", "RUN true\nUSER 10001:10001")), "must not RUN"),
        "a console publishes a port": (
            lambda s: s[1]["services"]["console-a"].__setitem__("ports", ["3000:3000"]), "must not publish ports"),
        "replicas with different secret keys": (
            lambda s: s[1]["services"]["console-b"]["environment"].__setitem__(
                "SANDBOX_CONSOLE_SECRET_KEY", "${OTHER_KEY:?required}"), "same SANDBOX_CONSOLE_SECRET_KEY"),
        "a replica trusting another proxy address": (
            lambda s: s[1]["services"]["console-b"]["environment"].__setitem__(
                "SANDBOX_CONSOLE_TRUSTED_PROXIES", "172.30.0.0/24"), "the proxy's own address"),
        "a database network open to the outside": (
            lambda s: s[1]["networks"]["database"].pop("internal"), "must be internal"),
        "a replica the proxy does not balance to": (
            lambda s: s[1]["services"]["proxy"]["environment"].__setitem__("CONSOLE_UPSTREAMS", "console-a:3000"),
            "must name every console replica"),
        "a sticky proxy": (
            lambda s: find_handlers(s[2], "reverse_proxy")[0]["load_balancing"]["selection_policy"].__setitem__(
                "policy", "cookie"), "no sticky sessions"),
        "no HSTS": (
            lambda s: [h.get("response", {}).get("set", {}).pop("Strict-Transport-Security", None)
                       for h in find_handlers(s[2], "headers")], "HSTS"),
        "a readiness probe on the wrong path": (mutate_k8s(
            lambda d: deployment_container(d)["readinessProbe"]["httpGet"].__setitem__("path", "/")), "readinessProbe"),
        "an unknown field in a pod": (mutate_k8s(
            lambda d: deployment_container(d).__setitem__("imagePullPolicyy", "x")), "imagePullPolicyy"),
        "a Secret key the Deployment reads is missing": (mutate_k8s(
            lambda d: find(d, "Secret")["stringData"].pop("database-url")), "has no key database-url"),
        "a Service that selects nothing": (mutate_k8s(
            lambda d: find(d, "Service")["spec"]["selector"].__setitem__("app.kubernetes.io/component", "other")),
            "must select the console pods"),
        "a grace period shorter than the console's shutdown": (mutate_k8s(
            lambda d: find(d, "Deployment")["spec"]["template"]["spec"].__setitem__("terminationGracePeriodSeconds", 36)),
            "terminationGracePeriodSeconds"),
        "a disruption budget that lets every replica go": (mutate_k8s(
            lambda d: find(d, "PodDisruptionBudget")["spec"].__setitem__("minAvailable", 0)), "keep one replica up"),
        "a network policy opening another port": (mutate_k8s(
            lambda d: find(d, "NetworkPolicy")["spec"]["ingress"][0]["ports"].append({"protocol": "TCP", "port": 22})),
            "only port 3000"),
        "egress to every port": (mutate_k8s(
            lambda d: find(d, "NetworkPolicy")["spec"]["egress"].append({"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]})),
            "must name its ports"),
        "an object in a namespace not defined here": (mutate_k8s(
            lambda d: find(d, "Service")["metadata"].__setitem__("namespace", "default")), "is not one of"),
        "a warm pool naming no template": (mutate_k8s(
            lambda d: find(d, "SandboxWarmPool")["spec"]["sandboxTemplateRef"].__setitem__("name", "missing")),
            "must name a SandboxTemplate"),
        "an unknown SandboxTemplate field": (mutate_k8s(
            lambda d: find(d, "SandboxTemplate")["spec"].__setitem__("replicas", 1)), "unknown SandboxTemplate fields"),
        "a sandbox pod without gVisor": (mutate_k8s(
            lambda d: find(d, "SandboxTemplate")["spec"]["podTemplate"]["spec"].pop("runtimeClassName")),
            "RuntimeClass defined here"),
        "a sandbox container that may escalate": (mutate_k8s(
            lambda d: find(d, "SandboxTemplate")["spec"]["podTemplate"]["spec"]["containers"][0]["securityContext"].__setitem__(
                "allowPrivilegeEscalation", True)), "allowPrivilegeEscalation"),
        "a bad sandbox network rule": (mutate_k8s(
            lambda d: find(d, "SandboxTemplate")["spec"]["networkPolicy"].__setitem__("egress", [{"to": "everyone"}])),
            "spec.networkPolicy"),
    }
    mutations.update(deploy_check_provider.mutations(find, mutate_k8s))
    failures = []
    for name, (mutation, expected) in mutations.items():
        state = list(copy.deepcopy(loaded))
        mutation(state)
        complaints = check_all(*state)
        if not any(expected in complaint for complaint in complaints):
            failures.append(f"{name} (complaints: {complaints})")
    return len(mutations), failures


def main():
    root = sys.argv[1]
    loaded = load(root)
    problems = check_all(*loaded)
    for problem in problems:
        print(f"deploy check: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    docs = sum(len(d) for d in loaded[4].values())
    print(f"deploy check: Dockerfile, compose.yaml, Caddyfile and {docs} Kubernetes objects agree "
          f"(validated against Kubernetes {', '.join(KUBERNETES_VERSIONS)})")
    if "--self-test" in sys.argv:
        count, failures = self_test(loaded)
        if failures:
            print(f"deploy check: these broken files passed: {failures}", file=sys.stderr)
            sys.exit(1)
        print(f"deploy check: all {count} deliberately broken variants were caught, each by its own rule")


if __name__ == "__main__":
    main()
