//! The docker provider's own health check: the daemon answers, the runtime and the images are
//! there, and what the pools hold.

use serde_json::{json, Map, Value};

use super::{runtimes, DockerError, DockerProvider, GVISOR_MIN_PIDS};

impl DockerProvider {
    pub(super) async fn check_daemon(&self) -> Result<Map<String, Value>, String> {
        let config = &self.shared.config;
        let docker = self
            .shared
            .engine
            .client()
            .await
            .map_err(|e| e.to_string())?;
        let unreachable = |e: bollard::errors::Error| {
            format!(
                "dockerd at {} did not answer: {e}",
                self.shared.engine.host()
            )
        };
        docker.ping().await.map_err(unreachable)?;
        let info = docker.info().await.map_err(unreachable)?;
        let runtimes = info.runtimes.unwrap_or_default();
        let Some(runtime) = runtimes.get(&config.runtime) else {
            let mut names: Vec<_> = runtimes.keys().cloned().collect();
            names.sort();
            return Err(format!(
                "runtime {:?} is not registered with dockerd (it has: {}); register it in \
                 /etc/docker/daemon.json and reload dockerd (see the docker provider's README)",
                config.runtime,
                names.join(", ")
            ));
        };
        let runtime_path = runtime.path.clone().unwrap_or_default();
        let gvisor = config.gvisor() || runtime_path.ends_with("runsc");
        // An allow-list needs the kernel's network stack in the container's namespace: every
        // runtime but gVisor with its own (netstack) stack, i.e. without --network=host.
        let mut allow_list: Vec<String> = runtimes
            .iter()
            .filter(|(_, r)| runtimes::allows_egress(r))
            .map(|(name, _)| name.clone())
            .collect();
        allow_list.sort();
        if self.shared.egress.is_some() && !allow_list.contains(&config.runtime) {
            return Err(format!(
                "runtime {:?} cannot enforce an allow-list (gVisor's own network stack never \
                 sees the console's network device); these can: {}",
                config.runtime,
                allow_list.join(", ")
            ));
        }
        if gvisor && config.pids_limit < GVISOR_MIN_PIDS {
            return Err(format!(
                "runtime {:?} is gVisor ({runtime_path}): it needs a pids limit of at least {GVISOR_MIN_PIDS}",
                config.runtime
            ));
        }
        let mut images = Vec::new();
        for image in [&config.python_image, &config.javascript_image] {
            if images.contains(image) {
                continue;
            }
            match docker.inspect_image(image).await {
                Ok(_) => images.push(image.clone()),
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                }) => {
                    return Err(DockerError::ImageMissing {
                        image: image.clone(),
                    }
                    .to_string())
                }
                Err(e) => return Err(unreachable(e)),
            }
        }
        let version = docker.version().await.map_err(unreachable)?;
        Ok(Map::from_iter([
            ("docker_host".to_owned(), json!(self.shared.engine.host())),
            ("docker_version".to_owned(), json!(info.server_version)),
            ("api_version".to_owned(), json!(version.api_version)),
            ("runtime".to_owned(), json!(config.runtime)),
            ("runtime_path".to_owned(), json!(runtime_path)),
            ("gvisor".to_owned(), json!(gvisor)),
            // What a run's container becomes afterwards: reuse needs a wipe that can be
            // verified, which gVisor (no /proc/sysvipc) does not allow.
            (
                "after_each_run".to_owned(),
                json!(match (config.fresh_container_per_run, gvisor) {
                    (true, _) => "replaced (strict)",
                    (false, false) => "wiped and reused when verified clean",
                    (false, true) => "replaced: under gVisor the wipe cannot verify System V IPC",
                }),
            ),
            ("images".to_owned(), json!(images)),
            ("allow_list_runtimes".to_owned(), json!(allow_list)),
        ]))
    }
}
