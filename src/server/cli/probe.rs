//! `sandbox-console probe`: the container image's HEALTHCHECK. It asks the console listening
//! on `--listen` (an unspecified address is asked on loopback) for `/readyz` and exits 0 only
//! on a 200, so an orchestrator without HTTP probes of its own (Docker, compose) can tell a
//! console that lost its database from one that serves.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    time::Duration,
};

use crate::server::config::Config;

/// Where the probe asks: the listen address, with 0.0.0.0 / [::] turned into loopback.
pub fn probe_url(listen: SocketAddr, path: &str) -> anyhow::Result<String> {
    if !path.starts_with('/') || path.contains(['?', '#', ' ']) {
        anyhow::bail!("--path must be a plain absolute path such as /readyz, not {path:?}");
    }
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    Ok(format!(
        "http://{}{path}",
        SocketAddr::new(ip, listen.port())
    ))
}

/// Prints one line (what answered, or why not) and returns the exit code.
pub async fn run(config: &Config, path: &str, timeout_secs: u64) -> i32 {
    match ask(config.listen, path, timeout_secs).await {
        Ok(line) => {
            println!("{line}");
            0
        }
        Err(error) => {
            eprintln!("probe: {error:#}");
            1
        }
    }
}

async fn ask(listen: SocketAddr, path: &str, timeout_secs: u64) -> anyhow::Result<String> {
    let url = probe_url(listen, path)?;
    let timeout = Duration::from_secs(timeout_secs.clamp(1, 60));
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let response = client
        .get(&url)
        .send()
        .await
        .map_err(|error| anyhow::anyhow!("{url} did not answer: {error}"))?;
    let status = response.status();
    // The body is short JSON (`{"status":"ready",…}`); read at most a little of it.
    let body = response.text().await.unwrap_or_default();
    let body: String = body.chars().take(200).collect();
    if status == reqwest::StatusCode::OK {
        Ok(format!("{url}: {status} {body}"))
    } else {
        anyhow::bail!("{url} answered {status}: {body}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unspecified_listen_address_is_probed_on_loopback() {
        let url = |listen: &str, path| probe_url(listen.parse().unwrap(), path);
        assert_eq!(
            url("0.0.0.0:3000", "/readyz").unwrap(),
            "http://127.0.0.1:3000/readyz"
        );
        assert_eq!(
            url("[::]:8080", "/healthz").unwrap(),
            "http://[::1]:8080/healthz"
        );
        assert_eq!(
            url("10.1.2.3:3000", "/readyz").unwrap(),
            "http://10.1.2.3:3000/readyz"
        );
        assert!(url("0.0.0.0:3000", "readyz").is_err());
        assert!(url("0.0.0.0:3000", "/readyz?x=1").is_err());
    }
}
