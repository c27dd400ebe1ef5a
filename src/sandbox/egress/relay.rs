//! One allowed TCP connection: the console checks the names the program's bytes carry (TLS
//! SNI, the Host of every HTTP request; see [`inspect`](super::inspect)) against the name it
//! looked up, resolves the name itself, refuses
//! addresses a sandbox must never reach, connects, and copies bytes both ways within the
//! run's budget. TLS is never intercepted: the bytes pass unchanged.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::TcpStream,
};

use super::{inspect::Inspector, policy, session::Session};

/// How long the program has to send its first bytes before the console connects without
/// seeing them (protocols where the server speaks first).
const FIRST_BYTES_WAIT: Duration = Duration::from_millis(500);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Reads the program's first bytes through `inspector`: waits at most [`FIRST_BYTES_WAIT`]
/// for them (a server-first protocol sends none), then for as long as what they claim is not
/// yet known (5 s a read). Returns the bytes cleared to go out, or why the connection is
/// refused.
async fn first_bytes<S: AsyncRead + Unpin>(
    inbound: &mut S,
    inspector: &mut Inspector,
) -> Result<Vec<u8>, String> {
    let mut chunk = [0u8; 4096];
    let mut wait = FIRST_BYTES_WAIT;
    loop {
        let n = match tokio::time::timeout(wait, inbound.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => n,
            // Nothing yet (a server-first protocol), a stall, or the end: the copy goes on
            // inspecting whatever comes later.
            _ => return Ok(Vec::new()),
        };
        let cleared = inspector.feed(&chunk[..n])?;
        if !cleared.is_empty() {
            return Ok(cleared);
        }
        wait = Duration::from_secs(5);
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
    let mut inspector = Inspector::new(&name, port);
    let first = tokio::select! {
        first = first_bytes(&mut inbound, &mut inspector) => first,
        _ = session.cut.cancelled() => return,
    };
    let first = match first {
        Ok(first) => first,
        Err(reason) => {
            let reason = format!("is refused: {reason}");
            session.deny("tcp", Some(&name), None, port, Some(reason.clone()));
            if inspector.http {
                let body = format!("egress to {name}:{port} {reason}\n");
                let answer = format!(
                    "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = inbound.write_all(answer.as_bytes()).await;
            }
            return;
        }
    };
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
    let up = checked_copy(
        &session,
        index,
        &mut inspector,
        &mut from_program,
        &mut to_remote,
    );
    let down = copy(&session, index, false, &mut from_remote, &mut to_program);
    tokio::pin!(up, down);
    // A refused request ends the connection at once, both ways; a finished upload leaves the
    // answer to come.
    tokio::select! {
        refused = &mut up => match refused {
            Err(reason) => {
                let reason = format!("is refused: {reason}");
                session.deny("tcp", Some(&name), Some(address.ip()), port, Some(reason));
            }
            Ok(()) => {
                tokio::select! {
                    () = &mut down => {}
                    _ = session.cut.cancelled() => {}
                }
            }
        },
        () = &mut down => {
            tokio::select! {
                _ = &mut up => {}
                _ = session.cut.cancelled() => {}
            }
        }
        _ = session.cut.cancelled() => {}
    }
}

/// Copies the program's bytes to the remote through `inspector`, charging the run's budget:
/// `Err` with the reason when a later request is refused (nothing of it went out).
async fn checked_copy<R, W>(
    session: &Session,
    index: Option<usize>,
    inspector: &mut Inspector,
    from: &mut R,
    to: &mut W,
) -> Result<(), String>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let cleared = inspector.feed(&buffer[..n])?;
        if cleared.is_empty() {
            continue;
        }
        if !session.spend(index, true, cleared.len()) {
            return Ok(());
        }
        if to.write_all(&cleared).await.is_err() {
            return Ok(());
        }
    }
    let _ = to.shutdown().await;
    Ok(())
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
