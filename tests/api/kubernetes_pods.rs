//! Pods for the Kubernetes API fake made as deploy/kubernetes makes them, one real container
//! per claim on the local dockerd: the runtime image (`sandbox-runtime:local` here) serving
//! `deploy/kubernetes/runtime/server.py`, mounted read-only at /opt/sandbox-runtime, as
//! `python3 /opt/sandbox-runtime/server.py`, uid 65534, read-only root with /home/user and /tmp
//! writable, no capabilities, `no-new-privileges`, 512 MiB, one CPU, on an internal network
//! (the host reaches it; nothing beyond). A pod is handed out once its runtime answers `GET /`
//! (the template's readiness probe) and removed with its claim, as the controller does.
//! Every container and the network carry this test's owner label; all are removed when the
//! `Containers` is dropped.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use bollard::{
    models::{ContainerCreateBody, HostConfig, NetworkCreateRequest},
    query_parameters::{
        ListContainersOptionsBuilder, LogsOptionsBuilder, RemoveContainerOptionsBuilder,
    },
    Docker,
};
use futures_util::{future::BoxFuture, StreamExt};
use sandbox_console::sandbox::providers::docker::owner_of;

use crate::fakes::kubernetes::{PodMaker, Pods};

pub const PORT: u16 = 8888;
/// On every container and on the network: which test's they are.
const NETWORK_LABEL: &str = "sandbox-console.test-network";

/// The test's handle: removes every pod left and the network when dropped.
pub struct Containers {
    maker: Maker,
}

/// What the fake holds (clones share the record of the pods made).
#[derive(Clone)]
struct Maker {
    docker: Docker,
    network: String,
    labels: HashMap<String, String>,
    /// Claim → container id.
    made: Arc<Mutex<HashMap<String, String>>>,
    /// How long the runtime lets a command run (the deployment's default is 300 s).
    exec_timeout_secs: u32,
}

impl Containers {
    /// A network for the pods; `exec_timeout_secs` for their runtime.
    pub async fn new(exec_timeout_secs: u32) -> Containers {
        let docker = Docker::connect_with_local_defaults().expect("dockerd (make docker)");
        let network = format!("sandbox-console-test-{:016x}", rand::random::<u64>());
        let labels = HashMap::from([
            ("sandbox-console.managed".to_owned(), "1".to_owned()),
            (NETWORK_LABEL.to_owned(), network.clone()),
            (
                "sandbox-console.owner".to_owned(),
                owner_of(std::process::id()).unwrap(),
            ),
        ]);
        docker
            .create_network(NetworkCreateRequest {
                name: network.clone(),
                internal: Some(true),
                labels: Some(labels.clone()),
                ..Default::default()
            })
            .await
            .expect("a network for the pods");
        Containers {
            maker: Maker {
                docker,
                network,
                labels,
                made: Arc::new(Mutex::new(HashMap::new())),
                exec_timeout_secs,
            },
        }
    }

    /// For the fake's options.
    pub fn pods(&self) -> Pods {
        Pods(Arc::new(self.maker.clone()))
    }

    /// Pods alive now.
    pub fn live(&self) -> usize {
        self.maker.made.lock().unwrap().len()
    }
}

impl Maker {
    fn body(&self) -> ContainerCreateBody {
        let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("deploy/kubernetes/runtime/server.py");
        let tmpfs = "rw,nosuid,nodev,size=256m,mode=1777".to_owned();
        // The image has no /home/user: docker makes it (0755, root) for the working folder and
        // copies that onto the tmpfs. The pod's user owns it here, as it can write to the
        // emptyDir (0777) a kubelet mounts there.
        let home = format!("{tmpfs},uid=65534,gid=65534");
        let memory = 512 * 1024 * 1024;
        ContainerCreateBody {
            image: Some(
                std::env::var("SANDBOX_RUNTIME_IMAGE")
                    .unwrap_or_else(|_| "sandbox-runtime:local".into()),
            ),
            cmd: Some(vec![
                "python3".into(),
                "/opt/sandbox-runtime/server.py".into(),
            ]),
            user: Some("65534:65534".into()),
            working_dir: Some("/home/user".into()),
            env: Some(vec![
                "PATH=/usr/local/bin:/usr/bin:/bin".into(),
                "SANDBOX_BASE_DIR=/home/user".into(),
                format!("SANDBOX_RUNTIME_PORT={PORT}"),
                format!("SANDBOX_EXEC_TIMEOUT_SECONDS={}", self.exec_timeout_secs),
            ]),
            labels: Some(self.labels.clone()),
            host_config: Some(HostConfig {
                network_mode: Some(self.network.clone()),
                init: Some(true),
                readonly_rootfs: Some(true),
                tmpfs: Some(HashMap::from([
                    ("/home/user".to_owned(), home),
                    ("/tmp".to_owned(), tmpfs),
                ])),
                binds: Some(vec![format!(
                    "{}:/opt/sandbox-runtime/server.py:ro",
                    server.display()
                )]),
                cap_drop: Some(vec!["ALL".into()]),
                security_opt: Some(vec!["no-new-privileges".into()]),
                memory: Some(memory),
                memory_swap: Some(memory),
                pids_limit: Some(256),
                nano_cpus: Some(1_000_000_000),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    async fn start(self, claim: String) -> IpAddr {
        let created = self
            .docker
            .create_container(None, self.body())
            .await
            .expect("a runtime container");
        self.made
            .lock()
            .unwrap()
            .insert(claim.clone(), created.id.clone());
        self.docker
            .start_container(&created.id, None)
            .await
            .expect("the runtime container starts");
        let inspected = self
            .docker
            .inspect_container(&created.id, None)
            .await
            .unwrap();
        let address: IpAddr = inspected
            .network_settings
            .and_then(|s| s.networks)
            .and_then(|n| n.get(&self.network).and_then(|e| e.ip_address.clone()))
            .filter(|ip| !ip.is_empty())
            .expect("an address on the test's network")
            .parse()
            .unwrap();
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let url = format!("http://{address}:{PORT}/");
        let ready = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                match client
                    .get(&url)
                    .timeout(Duration::from_secs(2))
                    .send()
                    .await
                {
                    Ok(answer) if answer.status().is_success() => return,
                    _ => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        })
        .await;
        if ready.is_err() {
            panic!(
                "the runtime did not answer its readiness probe within 60 s; its log:\n{}",
                self.logs(&created.id).await
            );
        }
        address
    }

    async fn logs(&self, id: &str) -> String {
        let options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .build();
        let mut text = String::new();
        let mut logs = self.docker.logs(id, Some(options));
        while let Some(Ok(line)) = logs.next().await {
            text.push_str(&line.to_string());
        }
        text
    }
}

async fn remove_container(docker: &Docker, id: &str) {
    let options = RemoveContainerOptionsBuilder::default().force(true).build();
    let _ = docker.remove_container(id, Some(options)).await;
}

impl PodMaker for Maker {
    fn make(&self, claim: &str) -> BoxFuture<'static, IpAddr> {
        Box::pin(self.clone().start(claim.to_owned()))
    }

    fn remove(&self, claim: &str) {
        if let Some(id) = self.made.lock().unwrap().remove(claim) {
            let docker = self.docker.clone();
            tokio::spawn(async move { remove_container(&docker, &id).await });
        }
    }
}

impl Drop for Containers {
    fn drop(&mut self) {
        let docker = self.maker.docker.clone();
        let network = self.maker.network.clone();
        // A runtime of its own: the test's may be ending with the panic that dropped this.
        std::thread::spawn(move || {
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(async move {
                    // Every container of this network's, also one whose removal the fake spawned
                    // and the test's end cut short; then the network, once nothing is attached.
                    for _ in 0..40 {
                        let filters = HashMap::from([(
                            "label".to_owned(),
                            vec![format!("{NETWORK_LABEL}={network}")],
                        )]);
                        let options = ListContainersOptionsBuilder::default()
                            .all(true)
                            .filters(&filters)
                            .build();
                        for container in docker
                            .list_containers(Some(options))
                            .await
                            .unwrap_or_default()
                        {
                            if let Some(id) = container.id {
                                remove_container(&docker, &id).await;
                            }
                        }
                        match docker.remove_network(&network).await {
                            Ok(())
                            | Err(bollard::errors::Error::DockerResponseServerError {
                                status_code: 404,
                                ..
                            }) => return,
                            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
                        }
                    }
                })
        })
        .join()
        .ok();
    }
}
