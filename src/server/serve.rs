//! The accept loop of both listeners: what `axum::serve` does, plus the limits it lacks.
//! Every connection must send a request's headers within `header_read` (counted from the
//! accept, or from the first byte after an idle spell), a keep-alive connection idle for
//! `idle` is closed, a request body that stalls for `body_stall` or takes longer than
//! `body_total` fails, a client that leaves an answer unread for `body_stall` is cut off,
//! and at most `max_connections` are served at once, at most `max_per_address` of them from
//! one client address: one more is answered `503` at once and closed, never queued. On stop, the listener closes, idle connections close, and requests in flight get
//! up to `drain` to finish.

use std::{
    convert::Infallible,
    future::Future,
    io,
    net::SocketAddr,
    pin::{pin, Pin},
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use axum::{body::Body, extract::ConnectInfo, Router};
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto::Builder,
    service::TowerToHyperService,
};
use ipnet::IpNet;
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::{watch, Notify, Semaphore},
    time::{sleep_until, timeout, Instant},
};
use tower::ServiceExt;
use tower_http::timeout::TimeoutBody;

use super::{client_address::client_address, per_address::PerAddress};

/// Connections answered `503` at the same time when the cap is reached; beyond it they are
/// closed without an answer (each of them holds a descriptor until it is written).
const MAX_OVERFLOW_ANSWERS: usize = 32;

/// The answer to a connection over the cap.
const OVERFLOW: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
retry-after: 1\r\ncache-control: no-store\r\nconnection: close\r\ncontent-length: 46\r\n\r\n\
the console is at its connection limit: retry\n";

#[derive(Clone, Debug)]
pub struct Limits {
    pub header_read: Duration,
    pub idle: Duration,
    /// Longest pause in a request body, and longest a client may leave an answer unread.
    pub body_stall: Duration,
    /// Longest a whole request body may take.
    pub body_total: Duration,
    pub max_connections: usize,
    /// Connections one peer address may hold at once (trusted proxies excepted).
    pub max_per_address: usize,
    pub drain: Duration,
    /// Peers whose `X-Forwarded-For` is believed (see [`client_address`]).
    pub trusted_proxies: Arc<[IpNet]>,
}

/// Serves `router` on `listener` until `stop` resolves, then drains (see the module doc).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    stop: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let overflow = Arc::new(Semaphore::new(MAX_OVERFLOW_ANSWERS));
    let per_address = PerAddress::default();
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut stop = pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors, or a connection reset before accept: wait a little
                    // rather than spin.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let refused = |stream: TcpStream| {
            if let Ok(answering) = overflow.clone().try_acquire_owned() {
                tokio::spawn(async move {
                    refuse(stream).await;
                    drop(answering);
                });
            }
        };
        let Some(held) =
            per_address.take(peer.ip(), &limits.trusted_proxies, limits.max_per_address)
        else {
            refused(stream);
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            refused(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let stop_rx = stop_rx.clone();
        let limits = limits.clone();
        tokio::spawn(async move {
            connection(stream, peer, router, limits, stop_rx).await;
            drop((slot, held));
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Every connection task holds one slot: all slots back means all connections are done.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if timeout(limits.drain, slots.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!(
            left = limits.max_connections - slots.available_permits(),
            "requests still in flight after the drain time; closing them"
        );
    }
    Ok(())
}

/// The most of a refused connection's request head read before it is answered.
const MAX_REFUSED_HEAD: usize = 16 * 1024;

/// How long a refused connection's request head is waited for before it is answered anyway:
/// a client that sends nothing still hears 503 at once.
const REFUSED_HEAD_WAIT: Duration = Duration::from_millis(500);

/// Answers 503 and closes, within 2 s. The answer follows the request's head when one comes
/// within half a second: an answer sent before a client has written its request is one most
/// clients drop as unexpected. What the client sends after it is read (briefly) before the
/// close: closing a socket with unread input sends a reset, which can make the client drop the
/// answer.
async fn refuse(mut stream: TcpStream) {
    let answer = async {
        let mut buffer = [0u8; 4096];
        let head = async {
            let mut head = Vec::new();
            while head.len() < MAX_REFUSED_HEAD && !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buffer).await? {
                    0 => break,
                    n => head.extend_from_slice(&buffer[..n]),
                }
            }
            Ok::<_, io::Error>(())
        };
        if let Ok(read) = timeout(REFUSED_HEAD_WAIT, head).await {
            read?;
        }
        stream.write_all(OVERFLOW).await?;
        stream.shutdown().await?;
        while stream.read(&mut buffer).await? > 0 {}
        Ok::<_, io::Error>(())
    };
    let _ = timeout(Duration::from_secs(2), answer).await;
}

/// Where a connection is: waiting for a request's headers (since when), serving requests, or
/// idle between them (since when).
#[derive(Clone, Copy, Debug)]
enum Phase {
    AwaitingHead(Instant),
    Busy,
    Idle(Instant),
}

#[derive(Debug)]
struct State {
    /// Requests whose answer is not yet written in full.
    in_flight: usize,
    phase: Phase,
    /// Since when a write to the client has been waiting (a client that does not read).
    write_blocked: Option<Instant>,
}

#[derive(Debug)]
struct Activity {
    state: Mutex<State>,
    changed: Notify,
}

impl Activity {
    fn new() -> Arc<Self> {
        Arc::new(Activity {
            state: Mutex::new(State {
                in_flight: 0,
                phase: Phase::AwaitingHead(Instant::now()),
                write_blocked: None,
            }),
            changed: Notify::new(),
        })
    }

    fn update(&self, change: impl FnOnce(&mut State) -> bool) {
        let changed = change(&mut self.state.lock().expect("connection state lock"));
        if changed {
            self.changed.notify_one();
        }
    }

    fn snapshot(&self) -> (Phase, Option<Instant>) {
        let state = self.state.lock().expect("connection state lock");
        (state.phase, state.write_blocked)
    }

    /// The first bytes after an idle spell start the clock for the next request's headers.
    fn bytes_read(&self) {
        self.update(|state| {
            let idle = matches!(state.phase, Phase::Idle(_));
            if idle {
                state.phase = Phase::AwaitingHead(Instant::now());
            }
            idle
        });
    }

    fn request_started(self: &Arc<Self>) -> InFlight {
        self.update(|state| {
            state.in_flight += 1;
            state.phase = Phase::Busy;
            true
        });
        InFlight(self.clone())
    }

    fn write_pending(&self) {
        self.update(|state| {
            let new = state.write_blocked.is_none();
            if new {
                state.write_blocked = Some(Instant::now());
            }
            new
        });
    }

    fn write_done(&self) {
        // Nothing to wake the watchdog for: a later deadline is recomputed when it wakes.
        self.update(|state| {
            state.write_blocked = None;
            false
        });
    }
}

/// One request whose answer is not yet written in full; the connection is idle again when
/// the last one is dropped (with its response body, so a long answer keeps it busy).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.update(|state| {
            state.in_flight -= 1;
            if state.in_flight == 0 {
                state.phase = Phase::Idle(Instant::now());
            }
            true
        });
    }
}

/// A response body that holds its request's `InFlight` until it has been written.
struct Guarded {
    inner: Body,
    guard: Option<InFlight>,
}

impl http_body::Body for Guarded {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.guard = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A request body that must arrive in full within a total time, whatever pace it keeps (a
/// byte every few seconds would never trip the per-chunk stall timeout).
struct Deadline<B> {
    inner: Pin<Box<B>>,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl<B> http_body::Body for Deadline<B>
where
    B: http_body::Body,
    B::Error: Into<axum::BoxError>,
{
    type Data = B::Data;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if self.sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err("the request body did not arrive in time".into())));
        }
        self.inner.as_mut().poll_frame(cx).map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let activity = Activity::new();
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let service = {
        let activity = activity.clone();
        tower::service_fn(move |mut request: hyper::Request<Incoming>| {
            let guard = activity.request_started();
            let client = client_address(peer, request.headers(), &limits.trusted_proxies);
            request.extensions_mut().insert(ConnectInfo(client));
            let request = request.map(|body| {
                Body::new(Deadline {
                    inner: Box::pin(TimeoutBody::new(limits.body_stall, body)),
                    sleep: Box::pin(tokio::time::sleep(limits.body_total)),
                })
            });
            let router = router.clone();
            async move {
                let response = router
                    .oneshot(request)
                    .await
                    .unwrap_or_else(|never| match never {});
                let response = response.map(|inner| {
                    Body::new(Guarded {
                        inner,
                        guard: Some(guard),
                    })
                });
                Ok::<_, Infallible>(response)
            }
        })
    };
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(None);
    builder.http2().timer(TokioTimer::new());
    let mut conn =
        pin!(builder.serve_connection_with_upgrades(io, TowerToHyperService::new(service)));
    // Set when this connection is being closed gracefully for being idle: by then it must be
    // gone (a client may not keep it open by not reading).
    let mut close_by: Option<Instant> = None;
    let mut draining = false;
    loop {
        let (phase, write_blocked) = activity.snapshot();
        let far = Instant::now() + Duration::from_secs(3600);
        let deadline = [
            match phase {
                Phase::AwaitingHead(since) => Some(since + limits.header_read),
                Phase::Idle(since) if !draining => Some(since + limits.idle),
                _ => None,
            },
            write_blocked.map(|since| since + limits.body_stall),
            close_by,
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(far);
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, %peer, "connection ended with an error");
                }
                return;
            }
            _ = stop.changed(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
            () = activity.changed.notified() => {}
            () = sleep_until(deadline) => {
                let (phase, write_blocked) = activity.snapshot();
                let now = Instant::now();
                if write_blocked.is_some_and(|since| now - since >= limits.body_stall) {
                    tracing::debug!(%peer, "closing a connection whose client stopped reading");
                    return;
                }
                if close_by.is_some_and(|at| now >= at) {
                    return;
                }
                match phase {
                    Phase::AwaitingHead(since) if now - since >= limits.header_read => {
                        tracing::debug!(%peer, "closing a connection that sent no complete request headers in time");
                        return;
                    }
                    Phase::Idle(since) if now - since >= limits.idle && !draining => {
                        draining = true;
                        close_by = Some(now + limits.body_stall);
                        conn.as_mut().graceful_shutdown();
                    }
                    _ => {}
                }
            }
        }
    }
}

/// The connection's socket, telling `Activity` when bytes arrive.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bytes_read();
        }
        polled
    }
}

impl Watched {
    /// Tells `Activity` whether the client takes what is written.
    fn track<T>(&self, polled: Poll<T>) -> Poll<T> {
        match polled {
            Poll::Pending => self.activity.write_pending(),
            Poll::Ready(_) => self.activity.write_done(),
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.track(polled)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.track(polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.track(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overflow_answer_is_well_formed() {
        let text = std::str::from_utf8(OVERFLOW).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(body.len(), length);
    }
}
