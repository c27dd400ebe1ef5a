//! The accept loop of both listeners: what `axum::serve` does, plus the limits it lacks.
//! Every connection must send a request's headers within `header_read` (counted from the
//! accept, or from the first byte after an idle spell), a keep-alive connection idle for
//! `idle` is closed, a request body that stalls for `body_stall` fails, and at most
//! `max_connections` are served at once: one more is answered `503` at once and closed, never
//! queued. On stop, the listener closes, idle connections close, and requests in flight get
//! up to `drain` to finish.

use std::{
    convert::Infallible,
    future::Future,
    io,
    net::SocketAddr,
    pin::{pin, Pin},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
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
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::{watch, Notify, Semaphore},
    time::{sleep_until, timeout, Instant},
};
use tower::ServiceExt;
use tower_http::timeout::TimeoutBody;

/// Connections answered `503` at the same time when the cap is reached; beyond it they are
/// closed without an answer (each of them holds a descriptor until it is written).
const MAX_OVERFLOW_ANSWERS: usize = 32;

/// The answer to a connection over the cap.
const OVERFLOW: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
retry-after: 1\r\ncache-control: no-store\r\nconnection: close\r\ncontent-length: 46\r\n\r\n\
the console is at its connection limit: retry\n";

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub header_read: Duration,
    pub idle: Duration,
    pub body_stall: Duration,
    pub max_connections: usize,
    pub drain: Duration,
}

/// Raises the soft limit on open descriptors to the hard one and returns it: each
/// connection, database handle and sandbox pipe takes one, and the usual soft limit of 1024
/// (or 256) is what let idle connections starve `/healthz`.
pub fn raise_descriptor_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(error) => {
            tracing::warn!(%error, "could not raise the open-files limit");
            rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft)
        }
    }
}

/// Descriptors kept for everything but client connections (database, sandboxes, logs).
const RESERVED_DESCRIPTORS: u64 = 128;

/// The connection cap in force: the configured one, within what the descriptor limit allows.
pub fn effective_max_connections(configured: usize, descriptor_limit: u64) -> usize {
    let room = descriptor_limit
        .saturating_sub(RESERVED_DESCRIPTORS)
        .max(16);
    configured
        .min(usize::try_from(room).unwrap_or(usize::MAX))
        .max(1)
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
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            if let Ok(answering) = overflow.clone().try_acquire_owned() {
                tokio::spawn(async move {
                    refuse(stream).await;
                    drop(answering);
                });
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let stop_rx = stop_rx.clone();
        tokio::spawn(async move {
            connection(stream, peer, router, limits, stop_rx).await;
            drop(slot);
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

async fn refuse(mut stream: TcpStream) {
    let answer = async {
        stream.write_all(OVERFLOW).await?;
        stream.shutdown().await
    };
    let _ = timeout(Duration::from_secs(1), answer).await;
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
struct Activity {
    in_flight: AtomicUsize,
    phase: Mutex<Phase>,
    changed: Notify,
}

impl Activity {
    fn set(&self, phase: Phase) {
        *self.phase.lock().expect("phase lock") = phase;
        self.changed.notify_one();
    }

    fn phase(&self) -> Phase {
        *self.phase.lock().expect("phase lock")
    }

    /// The first bytes after an idle spell start the clock for the next request's headers.
    fn bytes_read(&self) {
        let mut phase = self.phase.lock().expect("phase lock");
        if matches!(*phase, Phase::Idle(_)) {
            *phase = Phase::AwaitingHead(Instant::now());
            drop(phase);
            self.changed.notify_one();
        }
    }

    fn request_started(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.set(Phase::Busy);
        InFlight(self.clone())
    }
}

/// One request being handled; the connection is idle again when the last one is dropped.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.set(Phase::Idle(Instant::now()));
        }
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let activity = Arc::new(Activity {
        in_flight: AtomicUsize::new(0),
        phase: Mutex::new(Phase::AwaitingHead(Instant::now())),
        changed: Notify::new(),
    });
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let service = {
        let activity = activity.clone();
        tower::service_fn(move |mut request: hyper::Request<Incoming>| {
            let guard = activity.request_started();
            request.extensions_mut().insert(ConnectInfo(peer));
            let request = request.map(|body| Body::new(TimeoutBody::new(limits.body_stall, body)));
            let router = router.clone();
            async move {
                let response = router.oneshot(request).await;
                drop(guard);
                Ok::<_, Infallible>(response.unwrap_or_else(|never| match never {}))
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
    let mut draining = false;
    loop {
        let deadline = match activity.phase() {
            Phase::AwaitingHead(since) => since + limits.header_read,
            Phase::Idle(since) if !draining => since + limits.idle,
            _ => Instant::now() + Duration::from_secs(3600),
        };
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
            () = sleep_until(deadline) => match activity.phase() {
                Phase::AwaitingHead(since) if since.elapsed() >= limits.header_read => {
                    tracing::debug!(%peer, "closing a connection that sent no complete request headers in time");
                    return;
                }
                Phase::Idle(since) if since.elapsed() >= limits.idle && !draining => {
                    draining = true;
                    conn.as_mut().graceful_shutdown();
                }
                _ => {}
            },
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

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_leaves_room_for_other_descriptors() {
        assert_eq!(effective_max_connections(1024, 1_048_576), 1024);
        assert_eq!(effective_max_connections(1024, 256), 128);
        assert_eq!(effective_max_connections(1024, 100), 16);
        assert_eq!(effective_max_connections(0, 100_000), 1);
    }

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
