//! The list and watch of `sandboxclaims`, as the API server serves them: a `SandboxClaimList`
//! with the list's resourceVersion, or newline-delimited `{"type", "object"}` events after the
//! version asked for (an `ERROR` event with a 410 `Expired` `Status` for one older than the log
//! keeps), until `timeoutSeconds` or, when the test asks for it, after a number of events.

use std::{collections::HashMap, sync::Arc, time::Duration};

use axum::{
    body::{Body, Bytes},
    extract::{Path, Query, State},
    http::HeaderMap,
    response::{IntoResponse, Response},
    Json,
};
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::{refused, Inner, API};

pub fn labelled(object: &Value, selector: &str) -> bool {
    selector.split(',').filter(|s| !s.is_empty()).all(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        object["metadata"]["labels"][key].as_str() == Some(value)
    })
}

pub async fn list_or_watch(
    State(inner): State<Arc<Inner>>,
    Path(ns): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let watching = query.get("watch").is_some_and(|w| w == "true" || w == "1");
    let verb = if watching { "watch" } else { "list" };
    if let Some(refusal) = refused(&inner, &headers, verb, "sandboxclaims", &ns) {
        return refusal;
    }
    let selector = query.get("labelSelector").cloned().unwrap_or_default();
    let name = query
        .get("fieldSelector")
        .and_then(|f| f.strip_prefix("metadata.name="))
        .map(str::to_owned);
    if !watching {
        let cluster = inner.cluster.lock().unwrap();
        let items: Vec<Value> = cluster
            .claims
            .values()
            .filter(|c| {
                labelled(c, &selector) && name.as_deref().is_none_or(|n| c["metadata"]["name"] == n)
            })
            .cloned()
            .collect();
        return Json(json!({
            "apiVersion": API, "kind": "SandboxClaimList",
            "metadata": { "resourceVersion": cluster.version.to_string() }, "items": items,
        }))
        .into_response();
    }
    let from: u64 = query
        .get("resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let timeout = Duration::from_secs(
        query
            .get("timeoutSeconds")
            .and_then(|t| t.parse().ok())
            .unwrap_or(290),
    );
    let changes = inner.changed.subscribe();
    let deadline = tokio::time::Instant::now() + timeout;
    let close_after = inner.options.close_watches_after;
    let events = futures_util::stream::unfold(
        (inner, changes, from, 0usize, false),
        move |(inner, mut changes, mut last, mut sent, done)| {
            let (name, selector) = (name.clone(), selector.clone());
            async move {
                if done || close_after.is_some_and(|n| sent >= n) {
                    return None;
                }
                loop {
                    let next = {
                        let cluster = inner.cluster.lock().unwrap();
                        let oldest = cluster.events.first().map_or(0, |e| e.0);
                        if last != 0 && last + 1 < oldest {
                            Some(json!({ "type": "ERROR", "object": {
                                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": format!("too old resource version: {last} ({oldest})"), "reason": "Expired", "code": 410 } }))
                        } else {
                            cluster
                                .events
                                .iter()
                                .find(|(v, _, o)| {
                                    *v > last
                                        && labelled(o, &selector)
                                        && name
                                            .as_deref()
                                            .is_none_or(|n| o["metadata"]["name"] == n)
                                })
                                .map(|(v, kind, object)| {
                                    last = *v;
                                    json!({ "type": kind, "object": object })
                                })
                        }
                    };
                    if let Some(event) = next {
                        let expired = event["type"] == "ERROR";
                        sent += 1;
                        let line = Bytes::from(format!("{event}\n"));
                        return Some((
                            Ok::<_, std::io::Error>(line),
                            (inner, changes, last, sent, expired),
                        ));
                    }
                    match tokio::time::timeout_at(deadline, changes.recv()).await {
                        Err(_) | Ok(Err(broadcast::error::RecvError::Closed)) => return None,
                        Ok(_) => {}
                    }
                }
            }
        },
    );
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from_stream(events))
        .unwrap()
}
