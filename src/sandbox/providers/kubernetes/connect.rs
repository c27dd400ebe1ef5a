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
            refuse_plugins(&file, options.context.as_deref())?;
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

/// Refuses a kubeconfig whose chosen user gets its credentials from a program (`exec`) or an
/// auth provider: the console runs no program named in a file, with its own environment, on
/// its own host. A token, a token file or a client certificate is what it reads.
fn refuse_plugins(file: &Kubeconfig, context: Option<&str>) -> Result<(), KubernetesError> {
    let Some(name) = context.or(file.current_context.as_deref()) else {
        return Ok(());
    };
    let user = file
        .contexts
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.as_deref());
    let Some(info) = user.and_then(|user| {
        file.auth_infos
            .iter()
            .find(|a| a.name == user)
            .and_then(|a| a.auth_info.as_ref())
    }) else {
        return Ok(());
    };
    let how = if info.exec.is_some() {
        "a program (exec)"
    } else if info.auth_provider.is_some() {
        "an auth provider"
    } else {
        return Ok(());
    };
    Err(KubernetesError::Credentials(format!(
        "the kubeconfig's user {:?} gets its credentials from {how}, which the console does not \
         run; give it a token, a token file or a client certificate",
        user.unwrap_or_default()
    )))
}

/// The CA certificates of a PEM text, as DER.
fn certificates(pem: &str) -> Result<Vec<Vec<u8>>, KubernetesError> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .map(|certificate| certificate.map(|c| c.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| KubernetesError::Credentials(format!("the CA certificate: {e}")))
}
