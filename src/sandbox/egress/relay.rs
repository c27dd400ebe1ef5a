//! One allowed TCP connection: the console checks the name the program's first bytes carry
//! (TLS SNI, HTTP Host) against the name it looked up, resolves the name itself, refuses
//! addresses a sandbox must never reach, connects, and copies bytes both ways within the
//! run's budget. TLS is never intercepted: the bytes pass unchanged.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::TcpStream,
};

use super::{policy, session::Session};

/// How long the program has to send its first bytes before the console connects without
/// seeing them (protocols where the server speaks first).
const FIRST_BYTES_WAIT: Duration = Duration::from_millis(500);
/// The most the console reads looking for a ClientHello or a request's headers.
const MAX_PEEK: usize = 16 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The name the first bytes claim, if they are a TLS ClientHello or an HTTP request.
enum Claim {
    /// Not enough bytes yet.
    More,
    /// A TLS or HTTP start naming this host (or none: TLS without SNI).
    Name(Option<String>),
    /// Something else: nothing to check.
    Opaque,
}

fn claim(bytes: &[u8]) -> Claim {
    match bytes.first() {
        None => Claim::More,
        // A TLS handshake record.
        Some(0x16) => {
            let mut acceptor = rustls::server::Acceptor::default();
            let mut reader = bytes;
            if acceptor.read_tls(&mut reader).is_err() {
                return Claim::Opaque;
            }
            match acceptor.accept() {
                Ok(Some(accepted)) => Claim::Name(
                    accepted
                        .client_hello()
                        .server_name()
                        .map(|n| n.to_ascii_lowercase()),
                ),
                Ok(None) => Claim::More,
                Err(_) => Claim::Opaque,
            }
        }
        Some(_) if is_http(bytes) => {
            let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
                return Claim::More;
            };
            let head = String::from_utf8_lossy(&bytes[..end]);
            let host = head.lines().skip(1).find_map(|line| {
                let (key, value) = line.split_once(':')?;
                key.trim()
                    .eq_ignore_ascii_case("host")
                    .then(|| without_port(&value.trim().to_ascii_lowercase()))
            });
            Claim::Name(host)
        }
        Some(_) => Claim::Opaque,
    }
}

/// Whether the bytes start an HTTP/1 request.
fn is_http(bytes: &[u8]) -> bool {
    const METHODS: [&[u8]; 9] = [
        b"GET ",
        b"POST ",
        b"PUT ",
        b"HEAD ",
        b"DELETE ",
        b"OPTIONS ",
        b"PATCH ",
        b"CONNECT ",
        b"TRACE ",
    ];
    METHODS
        .iter()
        .any(|m| bytes.starts_with(m) || (bytes.len() < m.len() && m.starts_with(bytes)))
}

/// A Host header's host: `name:8080` is `name`, `[::1]:80` is `[::1]`.
fn without_port(host: &str) -> String {
    match host.rsplit_once(':') {
        Some((name, port))
            if !port.is_empty()
                && port.chars().all(|c| c.is_ascii_digit())
                && (!name.contains(':') || name.ends_with(']')) =>
        {
            name.to_owned()
        }
        _ => host.to_owned(),
    }
}

/// Reads the program's first bytes (at most [`MAX_PEEK`], waiting at most
/// [`FIRST_BYTES_WAIT`] for the first of them) and what name they claim.
async fn peek<S: AsyncRead + Unpin>(inbound: &mut S) -> (Vec<u8>, Claim) {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let wait = if bytes.is_empty() {
            FIRST_BYTES_WAIT
        } else {
            Duration::from_secs(5)
        };
        match tokio::time::timeout(wait, inbound.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (bytes, Claim::Opaque),
            Ok(Ok(n)) => bytes.extend_from_slice(&chunk[..n]),
            // Nothing (a server-first protocol), or a start that stalls: nothing to check.
            Err(_) => return (bytes, Claim::Opaque),
        }
        match claim(&bytes) {
            Claim::More if bytes.len() < MAX_PEEK => continue,
            Claim::More => return (bytes, Claim::Opaque),
            found => return (bytes, found),
        }
    }
}

/// Where the console connects for `name`: the admin's static address (which may be anything
/// the admin chose), or the first address public DNS gives that a sandbox may reach.
pub async fn resolve(policy: &super::Policy, name: &str, port: u16) -> Result<SocketAddr, String> {
    if let Some(address) = policy.static_address(name) {
        return Ok(SocketAddr::new(address, port));
    }
    let found = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((name, port)))
        .await
        .map_err(|_| format!("could not be resolved: {name} did not resolve within 5 s"))?
        .map_err(|e| format!("could not be resolved: {e}"))?
        .collect::<Vec<_>>();
    let mut refused = None;
    for address in &found {
        match policy::forbidden(address.ip()) {
            None => return Ok(*address),
            Some(class) => {
                refused = Some(format!(
                    "is refused: {name} resolves to {}, {class}",
                    address.ip()
                ))
            }
        }
    }
    Err(refused.unwrap_or_else(|| format!("could not be resolved: {name} has no address")))
}

/// Serves one connection the pump let through (its name and port are on the allow-list).
pub async fn serve<S>(session: Arc<Session>, mut inbound: S, destination: SocketAddr)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let port = destination.port();
    let Some(name) = session.name_of(destination.ip()) else {
        session.deny("tcp", None, Some(destination.ip()), port, None);
        return;
    };
    let (first, claimed) = tokio::select! {
        found = peek(&mut inbound) => found,
        _ = session.cut.cancelled() => return,
    };
    if let Claim::Name(Some(claimed)) = &claimed {
        if claimed != &name {
            let reason = format!("is refused: the connection names {claimed}, not {name}");
            session.deny("tcp", Some(&name), None, port, Some(reason.clone()));
            if is_http(&first) {
                let body = format!("egress to {name}:{port} {reason}\n");
                let answer = format!(
                    "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = inbound.write_all(answer.as_bytes()).await;
            }
            return;
        }
    }
    let address = match resolve(&session.policy, &name, port).await {
        Ok(address) => address,
        Err(reason) => {
            session.deny("tcp", Some(&name), None, port, Some(reason));
            return;
        }
    };
    if session.policy.is_console(address) {
        let reason = "is refused: that is the console's own address".to_owned();
        session.deny("tcp", Some(&name), Some(address.ip()), port, Some(reason));
        return;
    }
    let index = session.allow(&name, address.ip(), port);
    let connected = tokio::select! {
        c = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)) => c,
        _ = session.cut.cancelled() => return,
    };
    let mut outbound = match connected {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return session.failed(index, format!("could not connect: {e}")),
        Err(_) => return session.failed(index, "could not connect within 10 s".into()),
    };
    if !first.is_empty() {
        if !session.spend(index, true, first.len()) {
            return;
        }
        if outbound.write_all(&first).await.is_err() {
            return;
        }
    }
    let (mut from_program, mut to_program) = tokio::io::split(inbound);
    let (mut from_remote, mut to_remote) = outbound.split();
    let up = copy(&session, index, true, &mut from_program, &mut to_remote);
    let down = copy(&session, index, false, &mut from_remote, &mut to_program);
    tokio::select! {
        _ = async { tokio::join!(up, down) } => {}
        _ = session.cut.cancelled() => {}
    }
}

/// Copies one direction until its end, charging the run's budget; a half-close passes on.
async fn copy<R, W>(
    session: &Session,
    index: Option<usize>,
    outbound: bool,
    from: &mut R,
    to: &mut W,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !session.spend(index, outbound, n) {
            return;
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
    let _ = to.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_and_tls_starts_name_their_host() {
        let Claim::Name(Some(host)) = claim(b"GET / HTTP/1.1\r\nHost: Files.Test:8080\r\n\r\n")
        else {
            panic!("a Host header");
        };
        assert_eq!(host, "files.test");
        assert!(matches!(claim(b"GET / HTTP/1.1\r\nHost: a"), Claim::More));
        assert!(matches!(claim(b"SSH-2.0-x\r\n"), Claim::Opaque));
        assert!(matches!(claim(b"GE"), Claim::More));
        assert_eq!(without_port("[::1]:80"), "[::1]");
        assert_eq!(without_port("a.test"), "a.test");
        assert!(matches!(claim(b"\x00\x01"), Claim::Opaque));
        assert!(matches!(claim(b"\x16\x03\x01\x00"), Claim::More));
    }
}
