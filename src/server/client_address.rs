//! Which client a request comes from: the TCP peer, or the address a trusted proxy names.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

/// One `X-Forwarded-For` entry: an address, with or without a port (`203.0.113.7:4711`,
/// `[2001:db8::1]:443`, `[2001:db8::1]`), as proxies write them.
fn forwarded_ip(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|at| at.ip()))
        .or_else(|| {
            entry
                .strip_prefix('[')
                .and_then(|rest| rest.strip_suffix(']'))
                .and_then(|ip| ip.parse::<IpAddr>().ok())
        })
}

/// The client a request comes from: the TCP peer, unless the peer is a trusted proxy; then
/// `X-Forwarded-For` is read from its right end (each proxy appends the address it saw) and
/// the first address that is not a trusted proxy is the client. A forged entry further left
/// is never reached; an entry that is not an address stops the walk at the last proxy seen.
/// The client's port is not forwarded: a forwarded address has port 0.
pub fn client_address(
    peer: SocketAddr,
    headers: &http::HeaderMap,
    trusted: &[IpNet],
) -> SocketAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(&ip.to_canonical()));
    if !is_trusted(&peer.ip()) {
        return peer;
    }
    let mut seen = peer.ip();
    let values = headers
        .get_all("x-forwarded-for")
        .iter()
        .collect::<Vec<_>>();
    for value in values.into_iter().rev() {
        let Ok(text) = value.to_str() else { break };
        for entry in text.rsplit(',') {
            let Some(ip) = forwarded_ip(entry) else {
                return SocketAddr::new(seen, 0);
            };
            if !is_trusted(&ip) {
                return SocketAddr::new(ip, 0);
            }
            seen = ip;
        }
    }
    SocketAddr::new(seen, if seen == peer.ip() { peer.port() } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(peer: &str, forwarded: &[&str], trusted: &[&str]) -> String {
        let mut headers = http::HeaderMap::new();
        for value in forwarded {
            headers.append("x-forwarded-for", value.parse().unwrap());
        }
        let trusted: Vec<IpNet> = trusted.iter().map(|net| net.parse().unwrap()).collect();
        client_address(peer.parse().unwrap(), &headers, &trusted).to_string()
    }

    #[test]
    fn only_a_trusted_proxy_names_the_client() {
        // No trusted proxies: the header is anyone's to write and is ignored.
        assert_eq!(
            from("127.0.0.1:5000", &["203.0.113.7"], &[]),
            "127.0.0.1:5000"
        );
        // A trusted peer: the rightmost address it was not told by another trusted proxy.
        let proxies = ["127.0.0.0/8", "10.0.0.0/8"];
        assert_eq!(
            from("127.0.0.1:5000", &["203.0.113.7"], &proxies),
            "203.0.113.7:0"
        );
        // A client that forges the header gets its own address appended: the forgery is left
        // of it and never read.
        assert_eq!(
            from(
                "127.0.0.1:5000",
                &["198.51.100.1, 203.0.113.7, 10.1.2.3"],
                &proxies
            ),
            "203.0.113.7:0"
        );
        // Several header lines are one list, in order.
        assert_eq!(
            from("127.0.0.1:5000", &["198.51.100.1", "203.0.113.7"], &proxies),
            "203.0.113.7:0"
        );
        // Entries with ports, as some proxies write them.
        assert_eq!(
            from("127.0.0.1:5000", &["203.0.113.7:4711"], &proxies),
            "203.0.113.7:0"
        );
        assert_eq!(
            from(
                "127.0.0.1:5000",
                &["[2001:db8::1]:443, 10.0.0.2:80"],
                &proxies
            ),
            "[2001:db8::1]:0"
        );
        assert_eq!(
            from("127.0.0.1:5000", &["[2001:db8::1]"], &proxies),
            "[2001:db8::1]:0"
        );
        // Garbage stops the walk at the last proxy seen.
        assert_eq!(
            from("127.0.0.1:5000", &["nonsense, 10.1.2.3"], &proxies),
            "10.1.2.3:0"
        );
        // A trusted peer without the header is itself the client.
        assert_eq!(from("10.9.9.9:41000", &[], &proxies), "10.9.9.9:41000");
        // An untrusted peer's header is ignored, whatever it says.
        assert_eq!(
            from("192.0.2.1:41000", &["203.0.113.7"], &proxies),
            "192.0.2.1:41000"
        );
        // IPv4 peers seen on a dual-stack socket match IPv4 ranges.
        assert_eq!(
            from("[::ffff:127.0.0.1]:5000", &["203.0.113.7"], &proxies),
            "203.0.113.7:0"
        );
    }
}
