//! Network failures in a sentence an admin can act on. Providers report errors as chains
//! (`GET http://127.0.0.1:9/healthz: error sending request …: tcp connect error: Connection
//! refused (os error 111)`); the page leads with the sentence and keeps the chain under
//! *Details*.

/// A human sentence for a failure chain, when it is one of the common network failures.
pub fn network_failure(chain: &str) -> Option<String> {
    let lower = chain.to_ascii_lowercase();
    let target = first_authority(chain);
    let at = |what: &str| match &target {
        Some(target) => format!("{what} {target}"),
        None => what.to_owned(),
    };
    if lower.contains("connection refused") {
        return Some(format!(
            "Nothing is listening on {} — is the service there running, and is the port right?",
            target.as_deref().unwrap_or("that address")
        ));
    }
    if lower.contains("dns error")
        || lower.contains("failed to lookup address")
        || lower.contains("name or service not known")
        || lower.contains("no such host")
    {
        let host = target
            .as_deref()
            .map(|t| t.rsplit_once(':').map_or(t, |(host, _)| host).to_owned());
        return Some(match host {
            Some(host) => {
                format!("The name {host} does not resolve: check its spelling, or this host's DNS.")
            }
            None => "A name does not resolve: check its spelling, or this host's DNS.".to_owned(),
        });
    }
    if lower.contains("certificate") || lower.contains("invalidcertificate") {
        return Some(format!(
            "{}: its TLS certificate is not trusted here (expired, self-signed, or for another name).",
            at("The secure connection failed to")
        ));
    }
    if lower.contains("timed out") || lower.contains("did not answer within") {
        return Some(format!(
            "{} did not answer in time: is it overloaded, or is a firewall dropping the connection?",
            target.as_deref().unwrap_or("The provider")
        ));
    }
    if lower.contains("network is unreachable") || lower.contains("no route to host") {
        return Some(format!(
            "There is no route from this host to {}: check the address and the network.",
            target.as_deref().unwrap_or("that address")
        ));
    }
    None
}

/// `host:port` of the first URL in `text` (the scheme's default port when none is given).
fn first_authority(text: &str) -> Option<String> {
    let (scheme, rest) = ["https://", "http://", "tcp://"]
        .iter()
        .filter_map(|s| text.find(s).map(|at| (at, *s)))
        .min()
        .map(|(at, s)| (s, &text[at + s.len()..]))?;
    let authority: String = rest
        .chars()
        .take_while(|c| !matches!(c, '/' | ' ' | ')' | '?' | '#' | '"' | '\''))
        .collect();
    let authority = authority
        .rsplit_once('@')
        .map_or(authority.as_str(), |(_, a)| a);
    if authority.is_empty() {
        return None;
    }
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    Some(if has_port {
        authority.to_owned()
    } else {
        let port = match scheme {
            "https://" => 443,
            "http://" => 80,
            _ => 2375,
        };
        format!("{authority}:{port}")
    })
}

#[cfg(test)]
mod tests {
    use super::network_failure;

    #[test]
    fn common_failures_read_as_sentences() {
        let refused = "Cannot reach the executor: the provider cannot be reached: GET http://127.0.0.1:9/healthz: error sending request for url (http://127.0.0.1:9/healthz): client error (Connect): tcp connect error: Connection refused (os error 111)";
        assert_eq!(
            network_failure(refused).unwrap(),
            "Nothing is listening on 127.0.0.1:9 — is the service there running, and is the port right?"
        );
        let dns = "the provider cannot be reached: GET https://api.e2b.example/health: error sending request for url (https://api.e2b.example/health): client error (Connect): dns error: failed to lookup address information: Name or service not known";
        assert_eq!(
            network_failure(dns).unwrap(),
            "The name api.e2b.example does not resolve: check its spelling, or this host's DNS."
        );
        assert!(
            network_failure("did not answer within 5s: GET http://10.0.0.1/x")
                .unwrap()
                .starts_with("10.0.0.1:80 did not answer in time")
        );
        assert_eq!(
            network_failure("the image \"x\" is not on the Docker host"),
            None
        );
    }
}
