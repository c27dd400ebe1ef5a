//! Prometheus metrics (`prometheus-client`, one registry per application, no globals):
//! executions by provider/status/source, run latency, queue waits, the active provider's
//! pool, and HTTP requests by route and status. Served by `routes::metrics`.

use std::time::Duration;

use prometheus_client::{
    encoding::{text::encode, EncodeLabelSet},
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{exponential_buckets, Histogram},
    },
    registry::Registry,
};

use crate::model::provider::PoolState;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExecutionLabels {
    provider: String,
    status: String,
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabel {
    provider: String,
}

/// A provider kind (from the registry's bounded set) and `allowed` or `denied`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EgressLabels {
    provider: String,
    verdict: &'static str,
}

/// A provider kind and `out` (from the sandbox) or `in`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EgressBytesLabels {
    provider: String,
    direction: &'static str,
}

/// Every label value comes from a bounded set: the method from the standard ones (or
/// `other`), the route from the router's own patterns (or `unmatched`), the status from the
/// three-digit codes. A caller cannot create series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    method: &'static str,
    route: String,
    status: u16,
}

/// The method as a label: one of the nine standard methods, else `other`.
fn method_label(method: &http::Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "PATCH" => "PATCH",
        "OPTIONS" => "OPTIONS",
        "CONNECT" => "CONNECT",
        "TRACE" => "TRACE",
        _ => "other",
    }
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 5 ms .. ~82 s
    Histogram::new(exponential_buckets(0.005, 2.0, 15))
}

pub struct Metrics {
    registry: Registry,
    executions: Family<ExecutionLabels, Counter>,
    egress_connections: Family<EgressLabels, Counter>,
    egress_bytes: Family<EgressBytesLabels, Counter>,
    durations: HistogramFamily<ProviderLabel>,
    queue_waits: HistogramFamily<ProviderLabel>,
    pool_size: Family<ProviderLabel, Gauge>,
    pool_busy: Family<ProviderLabel, Gauge>,
    pool_idle: Family<ProviderLabel, Gauge>,
    pool_waiting: Family<ProviderLabel, Gauge>,
    http_requests: Family<HttpLabels, Counter>,
    http_durations: HistogramFamily<HttpLabels>,
    history_retried: Counter,
    history_dropped: Counter,
    history_pending: Gauge,
    pages_refused: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let executions = Family::<ExecutionLabels, Counter>::default();
        let durations: HistogramFamily<ProviderLabel> =
            Family::new_with_constructor(latency_histogram);
        let queue_waits: HistogramFamily<ProviderLabel> =
            Family::new_with_constructor(latency_histogram);
        let egress_connections = Family::<EgressLabels, Counter>::default();
        let egress_bytes = Family::<EgressBytesLabels, Counter>::default();
        registry.register(
            "sandbox_egress_connections",
            "Connections and name lookups from sandboxes on an allow-list, by provider and verdict",
            egress_connections.clone(),
        );
        registry.register(
            "sandbox_egress_bytes",
            "Bytes sandboxes on an allow-list moved, by provider and direction",
            egress_bytes.clone(),
        );
        let pool_size = Family::<ProviderLabel, Gauge>::default();
        let pool_busy = Family::<ProviderLabel, Gauge>::default();
        let pool_idle = Family::<ProviderLabel, Gauge>::default();
        let pool_waiting = Family::<ProviderLabel, Gauge>::default();
        let http_requests = Family::<HttpLabels, Counter>::default();
        let http_durations: HistogramFamily<HttpLabels> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "sandbox_executions",
            "Runs by provider, result status (or error) and source",
            executions.clone(),
        );
        registry.register(
            "sandbox_execution_duration_seconds",
            "Wall time of runs",
            durations.clone(),
        );
        registry.register(
            "sandbox_queue_wait_seconds",
            "Time runs waited for a free sandbox",
            queue_waits.clone(),
        );
        registry.register(
            "sandbox_pool_size",
            "Sandboxes the active provider may run at once",
            pool_size.clone(),
        );
        registry.register(
            "sandbox_pool_busy",
            "Sandboxes running a program",
            pool_busy.clone(),
        );
        registry.register(
            "sandbox_pool_idle",
            "Sandboxes free for a run",
            pool_idle.clone(),
        );
        registry.register(
            "sandbox_pool_waiting",
            "Runs waiting in line for a sandbox",
            pool_waiting.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests by method, matched route and status",
            http_requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by method, matched route and status",
            http_durations.clone(),
        );
        let history_retried = Counter::default();
        let history_dropped = Counter::default();
        let history_pending = Gauge::default();
        let pages_refused = Counter::default();
        registry.register(
            "history_write_retries",
            "History rows whose first write failed (database locked or full) and were queued for another try",
            history_retried.clone(),
        );
        registry.register(
            "history_rows_dropped",
            "History rows given up on: the retry queue was full, or the database refused them for too long",
            history_dropped.clone(),
        );
        registry.register(
            "history_rows_pending",
            "History rows waiting in the retry queue",
            history_pending.clone(),
        );
        registry.register(
            "page_requests_refused",
            "Page and server-function requests answered 503 because the page queue was full",
            pages_refused.clone(),
        );
        Metrics {
            registry,
            history_retried,
            history_dropped,
            history_pending,
            pages_refused,
            executions,
            egress_connections,
            egress_bytes,
            durations,
            queue_waits,
            pool_size,
            pool_busy,
            pool_idle,
            pool_waiting,
            http_requests,
            http_durations,
        }
    }

    /// Counts one run; `wall_ms` and `queue_wait_ms` when the provider ran it.
    pub fn execution(
        &self,
        provider: &str,
        status: &str,
        source: &str,
        wall_ms: Option<u64>,
        queue_wait_ms: Option<u64>,
    ) {
        self.executions
            .get_or_create(&ExecutionLabels {
                provider: provider.to_owned(),
                status: status.to_owned(),
                source: source.to_owned(),
            })
            .inc();
        let label = ProviderLabel {
            provider: provider.to_owned(),
        };
        if let Some(ms) = wall_ms {
            self.durations
                .get_or_create(&label)
                .observe(ms as f64 / 1000.0);
        }
        if let Some(ms) = queue_wait_ms {
            self.queue_waits
                .get_or_create(&label)
                .observe(ms as f64 / 1000.0);
        }
    }

    /// Counts what one run did on the network.
    pub fn egress(&self, provider: &str, report: &crate::model::egress::EgressReport) {
        let denied = report.egress_denied;
        let allowed = report.attempts().saturating_sub(denied);
        for (verdict, n) in [("allowed", allowed), ("denied", denied)] {
            self.egress_connections
                .get_or_create(&EgressLabels {
                    provider: provider.to_owned(),
                    verdict,
                })
                .inc_by(n);
        }
        for (direction, n) in [("out", report.bytes_out), ("in", report.bytes_in)] {
            self.egress_bytes
                .get_or_create(&EgressBytesLabels {
                    provider: provider.to_owned(),
                    direction,
                })
                .inc_by(n);
        }
    }

    pub fn set_pool(&self, provider: &str, pool: &PoolState) {
        let label = ProviderLabel {
            provider: provider.to_owned(),
        };
        self.pool_size.get_or_create(&label).set(pool.size as i64);
        self.pool_busy.get_or_create(&label).set(pool.busy as i64);
        self.pool_idle
            .get_or_create(&label)
            .set(pool.size.saturating_sub(pool.busy) as i64);
        self.pool_waiting
            .get_or_create(&label)
            .set(pool.waiting as i64);
    }

    /// A history row queued for another try.
    pub fn history_retried(&self) {
        self.history_retried.inc();
    }

    /// A history row given up on.
    pub fn history_dropped(&self) {
        self.history_dropped.inc();
    }

    pub fn history_pending(&self, rows: usize) {
        self.history_pending.set(rows as i64);
    }

    /// A page request refused because the page queue was full.
    pub fn page_refused(&self) {
        self.pages_refused.inc();
    }

    /// One routed request: `route` is the router's own pattern (or `unmatched`).
    pub fn http_request(&self, method: &http::Method, route: String, status: u16, took: Duration) {
        let labels = HttpLabels {
            method: method_label(method),
            route,
            status,
        };
        self.http_requests.get_or_create(&labels).inc();
        self.http_durations
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// The registry in the text exposition format.
    pub fn render(&self) -> String {
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        text
    }
}

#[cfg(test)]
mod tests {
    use http::Method;

    use super::method_label;

    #[test]
    fn made_up_methods_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        for made_up in ["FOO", "get", "X1", "PROPFIND"] {
            let method = Method::from_bytes(made_up.as_bytes()).unwrap();
            assert_eq!(method_label(&method), "other", "{made_up}");
        }
    }
}
