//! A client of the Kubernetes API from the settings: the pod's own service account, a
//! kubeconfig file, or a URL with a bearer token (and the cluster's CA). Never retries on its
//! own (a busy answer is the run's to judge), and every call has the request timeout.

use std::time::Duration;

use kube::{
    config::{KubeConfigOptions, Kubeconfig},
    Client, Config,
};

use super::{config::KubernetesConfig, error::KubernetesError};

/// The client, and the API server it talks to (for messages and the health card).
pub async fn client(config: &KubernetesConfig) -> Result<(Client, String), KubernetesError> {
    let mut kube_config = match config.credentials.as_str() {
        "kubeconfig" => {
            let file = Kubeconfig::read_from(config.kubeconfig_path.trim())
                .map_err(|e| KubernetesError::Credentials(format!("the kubeconfig file: {e}")))?;
            let options = KubeConfigOptions {
                context: Some(config.kubeconfig_context.trim())
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned),
                ..KubeConfigOptions::default()
            };
            Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| KubernetesError::Credentials(format!("the kubeconfig file: {e}")))?
        }
        "token" => {
            let url =
                config.api_url.trim().parse::<http::Uri>().map_err(|e| {
                    KubernetesError::Credentials(format!("the API server URL: {e}"))
                })?;
            let mut own = Config::new(url);
            own.auth_info.token = Some(config.token.clone().into());
            own.accept_invalid_certs = config.insecure_skip_tls_verify;
            if !config.ca_cert.trim().is_empty() {
                own.root_cert = Some(certificates(&config.ca_cert)?);
            }
            own
        }
        _ => Config::incluster().map_err(|e| {
            KubernetesError::Credentials(format!(
                "the console does not run in a pod with a service account ({e})"
            ))
        })?,
    };
    kube_config.default_namespace = config.namespace.trim().to_owned();
    kube_config.default_retry = false;
    let timeout = Duration::from_secs(config.request_timeout_secs.into());
    kube_config.connect_timeout = Some(timeout.min(Duration::from_secs(10)));
    // Reads: a watch sends a bookmark or an event well within this, or is resumed.
    kube_config.read_timeout = Some(timeout.max(Duration::from_secs(30)));
    kube_config.write_timeout = Some(timeout);
    let server = kube_config.cluster_url.to_string();
    let client = Client::try_from(kube_config)
        .map_err(|e| KubernetesError::Credentials(format!("cannot set up the client: {e}")))?;
    Ok((client, server))
}

/// The CA certificates of a PEM text, as DER.
fn certificates(pem: &str) -> Result<Vec<Vec<u8>>, KubernetesError> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .map(|certificate| certificate.map(|c| c.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| KubernetesError::Credentials(format!("the CA certificate: {e}")))
}
