//! Admission for page work: page renders and server functions (each a few database queries)
//! run at most `slots` at once; more wait in a bounded queue for at most `wait`, and past
//! either bound are answered `503` with `Retry-After` at once. A burst of page loads then
//! queues or is refused cleanly instead of exhausting the database pool (which answered 500
//! "pool timed out"). The API (`/api/*`, `/run`), the probes, `/metrics` and static files
//! are not counted: they have limits of their own.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use axum::{
    extract::{Request, State},
    http::StatusCode,
    middleware::Next,
    response::Response,
};
use tokio::sync::Semaphore;

use crate::server::metrics::Metrics;

#[derive(Clone, Debug)]
pub struct PageAdmission {
    slots: Arc<Semaphore>,
    waiting: Arc<AtomicUsize>,
    max_waiting: usize,
    wait: Duration,
    metrics: Arc<Metrics>,
}

impl PageAdmission {
    pub fn new(slots: usize, wait: Duration, metrics: Arc<Metrics>) -> Self {
        let slots = slots.max(1);
        PageAdmission {
            slots: Arc::new(Semaphore::new(slots)),
            waiting: Arc::new(AtomicUsize::new(0)),
            max_waiting: slots * 16,
            wait,
            metrics,
        }
    }
}

/// Paths that are not page work.
fn exempt(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/metrics")
        || path.starts_with("/pkg/")
        || path.starts_with("/favicon")
}

pub async fn admit(
    State(admission): State<PageAdmission>,
    request: Request,
    next: Next,
) -> Response {
    if exempt(request.uri().path()) {
        return next.run(request).await;
    }
    let permit = match admission.slots.clone().try_acquire_owned() {
        Ok(permit) => permit,
        Err(_) => {
            if admission.waiting.fetch_add(1, Ordering::SeqCst) >= admission.max_waiting {
                admission.waiting.fetch_sub(1, Ordering::SeqCst);
                return busy(&admission);
            }
            let waited =
                tokio::time::timeout(admission.wait, admission.slots.clone().acquire_owned()).await;
            admission.waiting.fetch_sub(1, Ordering::SeqCst);
            match waited {
                Ok(Ok(permit)) => permit,
                _ => return busy(&admission),
            }
        }
    };
    let response = next.run(request).await;
    drop(permit);
    response
}

fn busy(admission: &PageAdmission) -> Response {
    admission.metrics.page_refused();
    crate::server::routes::headers::notice_page(
        StatusCode::SERVICE_UNAVAILABLE,
        "The console is busy",
        "Too many pages are loading at once. Try again in a moment.",
        "2",
    )
}
