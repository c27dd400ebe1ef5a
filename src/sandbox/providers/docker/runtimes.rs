//! The runtimes a dockerd has registered, as the settings form offers them: each with whether
//! it is gVisor and whether it can enforce an allow-list.

use std::time::Duration;

use bollard::models::Runtime;

use super::engine::Engine;

/// How long the form waits for dockerd before it falls back to free text.
const ASK_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeChoice {
    pub name: String,
    pub gvisor: bool,
    /// The kernel's network stack runs in the container's namespace (every runtime but gVisor
    /// with its own netstack, i.e. without `--network=host`): the console's network device
    /// there is what the container uses.
    pub allow_list: bool,
}

/// Whether a registered runtime can enforce an allow-list.
pub fn allows_egress(runtime: &Runtime) -> bool {
    let path = runtime.path.clone().unwrap_or_default();
    let args = runtime.runtime_args.clone().unwrap_or_default();
    !path.ends_with("runsc") || args.iter().any(|a| a == "--network=host")
}

/// The runtimes of the dockerd at `host`, sorted by name.
pub async fn registered(host: &str) -> Result<Vec<RuntimeChoice>, String> {
    let engine = Engine::new(host);
    let ask = async {
        let docker = engine.client().await.map_err(|e| e.to_string())?;
        let info = docker.info().await.map_err(|e| e.to_string())?;
        let mut choices: Vec<RuntimeChoice> = info
            .runtimes
            .unwrap_or_default()
            .into_iter()
            .map(|(name, runtime)| RuntimeChoice {
                gvisor: runtime
                    .path
                    .as_deref()
                    .is_some_and(|p| p.ends_with("runsc")),
                allow_list: allows_egress(&runtime),
                name,
            })
            .collect();
        choices.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(choices)
    };
    tokio::time::timeout(ASK_TIMEOUT, ask)
        .await
        .map_err(|_| format!("dockerd at {host} did not answer within 1 s"))?
}
