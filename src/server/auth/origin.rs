//! Which `Origin` a state-changing browser request may come from: the console's public URL
//! (`--public-url`), compared by scheme, host and port. Without one, the listen address
//! stands in: `http://<listen>`, also under the loopback names when it is a loopback address;
//! a wildcard listen address (`0.0.0.0`) cannot name the host browsers use, so there the
//! request's own `Host` is taken for the host, and the scheme and port must still match.

use std::net::SocketAddr;

use url::Url;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginPolicy {
    scheme: String,
    port: u16,
    hosts: Hosts,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Hosts {
    /// Exactly these (lowercase; IPv6 in brackets).
    Listed(Vec<String>),
    /// The request's `Host` header's host (wildcard listen address, no public URL).
    FromHostHeader,
}

impl OriginPolicy {
    /// From `--public-url` when given (an error says what is wrong with it), else from the
    /// address the server is bound to.
    pub fn new(public_url: Option<&str>, bound: SocketAddr) -> Result<Self, String> {
        if let Some(text) = public_url {
            let url = Url::parse(text.trim())
                .map_err(|e| format!("--public-url {text:?} is not a URL: {e}"))?;
            let scheme = url.scheme().to_owned();
            if scheme != "http" && scheme != "https" {
                return Err(format!(
                    "--public-url must be http:// or https://, not {scheme}://"
                ));
            }
            let host = url
                .host_str()
                .ok_or_else(|| format!("--public-url {text:?} has no host"))?
                .to_ascii_lowercase();
            let port = url
                .port_or_known_default()
                .ok_or_else(|| format!("--public-url {text:?} has no port"))?;
            return Ok(OriginPolicy {
                scheme,
                port,
                hosts: Hosts::Listed(vec![host]),
            });
        }
        let ip = bound.ip();
        let hosts = if ip.is_unspecified() {
            Hosts::FromHostHeader
        } else if ip.is_loopback() {
            Hosts::Listed(
                ["localhost", "127.0.0.1", "[::1]"]
                    .map(str::to_owned)
                    .into_iter()
                    .chain([bracketed(&bound)])
                    .collect(),
            )
        } else {
            Hosts::Listed(vec![bracketed(&bound)])
        };
        Ok(OriginPolicy {
            scheme: "http".into(),
            port: bound.port(),
            hosts,
        })
    }

    /// Does the browser-sent `Origin` name this console? `host_header` is the request's
    /// `Host`, used only when the policy has no host of its own.
    pub fn allows(&self, origin: &str, host_header: Option<&str>) -> bool {
        let Ok(url) = Url::parse(origin) else {
            return false;
        };
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return false;
        };
        if url.scheme() != self.scheme || port != self.port || url.path() != "/" {
            return false;
        }
        let host = host.to_ascii_lowercase();
        match &self.hosts {
            Hosts::Listed(hosts) => hosts.contains(&host),
            Hosts::FromHostHeader => host_header
                .and_then(|h| Url::parse(&format!("http://{h}")).ok())
                .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                .is_some_and(|h| h == host),
        }
    }

    /// Whether this policy had to take the host from requests (worth a warning at start).
    pub fn trusts_host_header(&self) -> bool {
        self.hosts == Hosts::FromHostHeader
    }
}

fn bracketed(address: &SocketAddr) -> String {
    match address {
        SocketAddr::V4(v4) => v4.ip().to_string(),
        SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_public_url_decides_scheme_host_and_port() {
        let policy = OriginPolicy::new(
            Some("https://Sandbox.Example.com/"),
            bound("127.0.0.1:3000"),
        )
        .unwrap();
        assert!(policy.allows("https://sandbox.example.com", None));
        assert!(policy.allows("https://sandbox.example.com:443", Some("evil.example")));
        for refused in [
            "http://sandbox.example.com",
            "https://sandbox.example.com:8443",
            "https://evil.example",
            "https://sandbox.example.com.evil.example",
            "http://127.0.0.1:3000",
            "null",
            "",
        ] {
            assert!(
                !policy.allows(refused, Some("sandbox.example.com")),
                "{refused}"
            );
        }
    }

    #[test]
    fn without_one_the_listen_address_and_loopback_names_stand_in() {
        let policy = OriginPolicy::new(None, bound("127.0.0.1:3000")).unwrap();
        assert!(policy.allows("http://127.0.0.1:3000", None));
        assert!(policy.allows("http://localhost:3000", None));
        assert!(!policy.allows("http://localhost:3001", None));
        assert!(!policy.allows("https://localhost:3000", None));
        assert!(
            !policy.allows("http://evil.example:3000", Some("evil.example:3000")),
            "a Host header naming the attacker's site is not enough"
        );
    }

    #[test]
    fn a_wildcard_listen_address_takes_the_host_but_not_the_port_from_the_request() {
        let policy = OriginPolicy::new(None, bound("0.0.0.0:3000")).unwrap();
        assert!(policy.trusts_host_header());
        assert!(policy.allows("http://console.lan:3000", Some("console.lan:3000")));
        assert!(!policy.allows("http://console.lan:3000", Some("other.lan:3000")));
        assert!(!policy.allows("http://console.lan:8080", Some("console.lan:8080")));
    }

    #[test]
    fn a_bad_public_url_is_refused_with_a_reason() {
        assert!(
            OriginPolicy::new(Some("sandbox.example.com"), bound("127.0.0.1:1"))
                .unwrap_err()
                .contains("not a URL")
        );
        assert!(OriginPolicy::new(Some("ftp://x"), bound("127.0.0.1:1"))
            .unwrap_err()
            .contains("http"));
    }
}
