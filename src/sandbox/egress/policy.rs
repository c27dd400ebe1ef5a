//! An allow-list as an admin writes it, parsed and checked: which names and ports a sandbox
//! may reach, the names the console resolves itself, and the addresses it never connects to.

use std::{
    collections::BTreeMap,
    net::{IpAddr, Ipv4Addr, SocketAddr},
};

/// Ports a rule without one allows.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];
/// Rules and static names one provider may have.
pub const MAX_LINES: usize = 256;

/// The names one rule matches.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pattern {
    /// Exactly this name.
    Exact(String),
    /// `*.example.com`: any name with one label or more before `.example.com`.
    Below(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    pattern: Pattern,
    ports: Vec<u16>,
}

/// A provider's network policy in allow-list mode.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Policy {
    rules: Vec<Rule>,
    /// Names resolved by the console before any DNS, to the address the admin gave.
    statics: BTreeMap<String, IpAddr>,
    /// Bytes both ways one run may move; the run is cut past it.
    pub max_bytes: u64,
    /// Addresses the console itself listens on: never reachable from a sandbox.
    pub console: Vec<SocketAddr>,
}

/// Why the console will not connect to an address it resolved.
pub fn forbidden(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return forbidden_v4(v4);
            }
            let first = v6.segments()[0];
            if v6.is_unspecified() {
                Some("an unspecified address")
            } else if v6.is_loopback() {
                Some("a loopback address")
            } else if first & 0xfe00 == 0xfc00 {
                // fc00::/7, with the cloud metadata address fd00:ec2::254 in it.
                Some("a private address")
            } else if first & 0xffc0 == 0xfe80 {
                Some("a link-local address")
            } else if v6.is_multicast() {
                Some("a multicast address")
            } else if first == 0x64 && v6.segments()[1] == 0xff9b {
                // NAT64: the IPv4 address is in the last 32 bits.
                let [.., a, b] = v6.segments();
                forbidden_v4(Ipv4Addr::from((u32::from(a) << 16) | u32::from(b)))
            } else {
                None
            }
        }
    }
}

fn forbidden_v4(v4: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = v4.octets();
    if v4.is_unspecified() || a == 0 {
        Some("an unspecified address")
    } else if v4.is_loopback() {
        Some("a loopback address")
    } else if v4.is_link_local() {
        // 169.254.169.254 is the cloud metadata service.
        Some("a link-local address (cloud metadata lives there)")
    } else if v4.is_private() || (a == 100 && (64..128).contains(&b)) || (a == 192 && b == 0) {
        Some("a private address")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("a benchmarking address")
    } else if v4.is_multicast() || a >= 240 || v4.is_broadcast() {
        Some("a multicast or reserved address")
    } else if v4.is_documentation() {
        Some("a documentation address")
    } else {
        None
    }
}

/// A host name as DNS writes it: lower case, no trailing dot, valid labels.
fn host_name(text: &str) -> Result<String, String> {
    let name = text.trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() || name.len() > 253 {
        return Err(format!("'{text}' is not a host name"));
    }
    for label in name.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            return Err(format!("'{text}' is not a host name"));
        }
    }
    Ok(name)
}

/// The meaningful lines of a textarea, with their numbers (from 1).
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

/// Parses `allowed_hosts`: one `host`, `host:port` or `*.domain[:port]` a line.
pub fn parse_allowed(text: &str) -> Result<Vec<(String, Vec<u16>)>, String> {
    let mut out = Vec::new();
    for (number, line) in lines(text) {
        let at = |e: String| format!("line {number}: {e}");
        if out.len() == MAX_LINES {
            return Err(at(format!("at most {MAX_LINES} hosts")));
        }
        let (host, ports) = match line.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') => {
                let port: u16 = port
                    .parse()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| at(format!("'{port}' is not a port (1-65535)")))?;
                (host, vec![port])
            }
            Some(_) => {
                return Err(at(format!(
                    "'{line}' is an address: give it a name under Static hosts and allow the name"
                )))
            }
            None => (line, DEFAULT_PORTS.to_vec()),
        };
        if host.parse::<IpAddr>().is_ok() {
            return Err(at(format!(
                "'{host}' is an address: give it a name under Static hosts and allow the name"
            )));
        }
        let pattern = match host.strip_prefix("*.") {
            Some(domain) => format!("*.{}", host_name(domain).map_err(at)?),
            None if host.contains('*') => {
                return Err(at(format!(
                    "'{host}': a wildcard is allowed only as the first label, as in *.example.com"
                )))
            }
            None => host_name(host).map_err(at)?,
        };
        out.push((pattern, ports));
    }
    Ok(out)
}

/// Parses `static_hosts`: one `name address` a line.
pub fn parse_static(text: &str) -> Result<BTreeMap<String, IpAddr>, String> {
    let mut out = BTreeMap::new();
    for (number, line) in lines(text) {
        let at = |e: String| format!("line {number}: {e}");
        if out.len() == MAX_LINES {
            return Err(at(format!("at most {MAX_LINES} names")));
        }
        let mut words = line.split_whitespace();
        let (Some(name), Some(address), None) = (words.next(), words.next(), words.next()) else {
            return Err(at(format!("'{line}' is not 'name address'")));
        };
        let name = host_name(name).map_err(at)?;
        let address: IpAddr = address
            .parse()
            .map_err(|_| at(format!("'{address}' is not an IPv4 or IPv6 address")))?;
        if out.insert(name.clone(), address).is_some() {
            return Err(at(format!("'{name}' is listed twice")));
        }
    }
    Ok(out)
}

impl Policy {
    /// Builds the policy from the three fields; each error names its field's line.
    pub fn parse(allowed: &str, statics: &str, max_bytes: u64) -> Result<Policy, String> {
        let rules = parse_allowed(allowed)?
            .into_iter()
            .map(|(pattern, ports)| Rule {
                pattern: match pattern.strip_prefix("*.") {
                    Some(domain) => Pattern::Below(domain.to_owned()),
                    None => Pattern::Exact(pattern),
                },
                ports,
            })
            .collect();
        Ok(Policy {
            rules,
            statics: parse_static(statics)?,
            max_bytes,
            console: Vec::new(),
        })
    }

    /// A policy for a sandbox of the console's own that may reach a few known destinations
    /// only (an environment build: the package index and registry): each name on its port,
    /// at the address the console resolved for it.
    pub fn destinations(
        list: &[(String, u16, IpAddr)],
        max_bytes: u64,
        console: Vec<SocketAddr>,
    ) -> Policy {
        let mut policy = Policy {
            max_bytes,
            console,
            ..Policy::default()
        };
        for (name, port, address) in list {
            policy.rules.push(Rule {
                pattern: Pattern::Exact(name.clone()),
                ports: vec![*port],
            });
            policy.statics.insert(name.clone(), *address);
        }
        policy
    }

    /// Whether a name is one the sandbox's DNS answers: allowed on some port, or static.
    pub fn knows(&self, name: &str) -> bool {
        self.statics.contains_key(name) || self.rules.iter().any(|r| r.matches(name))
    }

    /// Whether the program may connect to `name` on `port`.
    pub fn allows(&self, name: &str, port: u16) -> bool {
        self.rules
            .iter()
            .any(|r| r.matches(name) && r.ports.contains(&port))
    }

    /// The ports the rules allow `name` on.
    pub fn ports_for(&self, name: &str) -> Vec<u16> {
        let mut ports: Vec<u16> = self
            .rules
            .iter()
            .filter(|r| r.matches(name))
            .flat_map(|r| r.ports.clone())
            .collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// Every port some rule allows.
    pub fn ports(&self) -> Vec<u16> {
        let mut ports: Vec<u16> = self.rules.iter().flat_map(|r| r.ports.clone()).collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// The admin's own address for `name`, if mapped.
    pub fn static_address(&self, name: &str) -> Option<IpAddr> {
        self.statics.get(name).copied()
    }

    /// The exact names the allow-list holds (wildcards cannot be looked up ahead).
    pub fn exact_names(&self) -> Vec<&str> {
        self.rules
            .iter()
            .filter_map(|r| match &r.pattern {
                Pattern::Exact(name) => Some(name.as_str()),
                Pattern::Below(_) => None,
            })
            .collect()
    }

    /// Whether `address:port` is where the console itself listens. Addresses are compared in
    /// their canonical form (`::ffff:127.0.0.1` is `127.0.0.1`); any loopback or unspecified
    /// address (`0.0.0.0` and `::` connect to this host) on a console port is the console,
    /// whatever address it listens on; and a console on a wildcard address is taken to answer
    /// on every private or link-local address of its port too (a public address of this host
    /// reaches it only as it reaches anyone).
    pub fn is_console(&self, address: SocketAddr) -> bool {
        let ip = address.ip().to_canonical();
        let this_host = ip.is_loopback() || ip.is_unspecified();
        self.console.iter().any(|c| {
            let console = c.ip().to_canonical();
            c.port() == address.port()
                && (console == ip
                    || this_host
                    || (console.is_unspecified() && forbidden(ip).is_some()))
        })
    }
}

impl Rule {
    fn matches(&self, name: &str) -> bool {
        match &self.pattern {
            Pattern::Exact(exact) => exact == name,
            Pattern::Below(domain) => name
                .strip_suffix(domain.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_names_and_ports() {
        let policy = Policy::parse(
            "# comment\nexample.com\napi.example.org:8443\n*.cdn.example.net\n",
            "",
            1,
        )
        .unwrap();
        assert!(policy.allows("example.com", 443));
        assert!(policy.allows("example.com", 80));
        assert!(!policy.allows("example.com", 22));
        assert!(!policy.allows("www.example.com", 443));
        assert!(policy.allows("api.example.org", 8443));
        assert!(!policy.allows("api.example.org", 443));
        assert!(policy.allows("a.cdn.example.net", 443));
        assert!(policy.allows("a.b.cdn.example.net", 443));
        assert!(!policy.allows("cdn.example.net", 443));
        assert!(!policy.allows("xcdn.example.net", 443));
        assert_eq!(policy.ports(), [80, 443, 8443]);
        assert_eq!(policy.exact_names(), ["example.com", "api.example.org"]);
    }

    #[test]
    fn bad_lines_are_named_by_number() {
        for (text, error) in [
            (
                "ok.example\nbad host\n",
                "line 2: 'bad host' is not a host name",
            ),
            ("x.example:0", "line 1: '0' is not a port (1-65535)"),
            ("x.example:http", "line 1: 'http' is not a port"),
            ("10.0.0.5", "line 1: '10.0.0.5' is an address"),
            ("fd00::1", "line 1: 'fd00::1' is an address"),
            (
                "*",
                "line 1: '*': a wildcard is allowed only as the first label",
            ),
            ("a.*.example", "line 1: 'a.*.example': a wildcard"),
            ("-bad.example", "line 1: '-bad.example' is not a host name"),
        ] {
            let got = parse_allowed(text).unwrap_err();
            assert!(got.starts_with(error), "{text}: {got}");
        }
        for (text, error) in [
            ("files.test", "line 1: 'files.test' is not 'name address'"),
            (
                "files.test 1.2.3",
                "line 1: '1.2.3' is not an IPv4 or IPv6 address",
            ),
            (
                "a.test 127.0.0.1\nA.test. ::1",
                "line 2: 'a.test' is listed twice",
            ),
        ] {
            let got = parse_static(text).unwrap_err();
            assert!(got.starts_with(error), "{text}: {got}");
        }
        let statics = parse_static("Files.Test. 127.0.0.1\nv6.test ::1").unwrap();
        assert_eq!(statics["files.test"], IpAddr::from([127, 0, 0, 1]));
    }

    #[test]
    fn private_loopback_link_local_and_metadata_addresses_are_forbidden() {
        for address in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "198.18.0.2",
            "::1",
            "::",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a9fe:a9fe",
        ] {
            let ip: IpAddr = address.parse().unwrap();
            assert!(forbidden(ip).is_some(), "{address}");
        }
        for address in [
            "93.184.215.14",
            "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
            "1.1.1.1",
        ] {
            let ip: IpAddr = address.parse().unwrap();
            assert_eq!(forbidden(ip), None, "{address}");
        }
        let metadata: std::net::Ipv6Addr = "fd00:ec2::254".parse().unwrap();
        assert_eq!(forbidden(IpAddr::V6(metadata)), Some("a private address"));
    }

    #[test]
    fn the_consoles_own_address_is_recognised() {
        let mut policy = Policy {
            console: vec!["127.0.0.1:8080".parse().unwrap()],
            ..Policy::default()
        };
        assert!(policy.is_console("127.0.0.1:8080".parse().unwrap()));
        assert!(policy.is_console("127.0.0.2:8080".parse().unwrap()));
        assert!(!policy.is_console("127.0.0.1:8081".parse().unwrap()));
        // The 2026-12-06 probe's ways in: the unspecified and the v4-mapped addresses.
        for address in [
            "0.0.0.0:8080",
            "[::ffff:127.0.0.1]:8080",
            "[::]:8080",
            "[::1]:8080",
        ] {
            assert!(policy.is_console(address.parse().unwrap()), "{address}");
        }
        policy.console = vec!["10.1.2.3:3000".parse().unwrap()];
        assert!(policy.is_console("0.0.0.0:3000".parse().unwrap()));
        assert!(policy.is_console("[::ffff:10.1.2.3]:3000".parse().unwrap()));
        assert!(!policy.is_console("10.1.2.4:3000".parse().unwrap()));
        policy.console = vec!["0.0.0.0:9000".parse().unwrap()];
        assert!(policy.is_console("10.1.2.3:9000".parse().unwrap()));
        assert!(policy.is_console("127.0.0.1:9000".parse().unwrap()));
        assert!(!policy.is_console("93.184.215.14:9000".parse().unwrap()));
    }
}
