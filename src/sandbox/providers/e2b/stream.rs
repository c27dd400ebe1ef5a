//! Reads the code interpreter's answer to `POST /execute`: newline-delimited JSON objects
//! (`stdout`, `stderr`, `result` with MIME bundles, `error` with name/value/traceback,
//! `keepalive`, `number_of_executions`, and finally `end_of_execution`), within the run's
//! deadline and output cap.

use base64::{engine::general_purpose::STANDARD as BASE64, Engine};
use serde_json::Value;

use crate::{
    model::execution::Artifact,
    sandbox::{
        providers::http,
        runner::{self, remote, ArtifactLimits},
        Error,
    },
};

/// Rich result formats that come back as artifacts, with the extension they are named by.
const RICH_FORMATS: [(&str, &str, bool); 4] = [
    ("png", "png", true),
    ("jpeg", "jpeg", true),
    ("svg", "svg", false),
    ("pdf", "pdf", true),
];

#[derive(Debug, Default)]
pub struct Collected {
    pub stdout: String,
    pub stderr: String,
    /// The `error` event's traceback (or `name: value`), when the interpreter reported one.
    pub error: Option<String>,
    pub error_name: Option<String>,
    /// Images and documents the code displayed.
    pub rich: Vec<Artifact>,
    /// `end_of_execution` arrived.
    pub finished: bool,
    pub timed_out: bool,
    pub output_over: bool,
}

impl Collected {
    pub fn timed_out() -> Self {
        Collected {
            timed_out: true,
            ..Collected::default()
        }
    }
}

struct Reader<'a> {
    collected: Collected,
    marker: &'a str,
    /// Where the wrapper's result line starts in stdout, once seen.
    marker_at: Option<usize>,
    cap: usize,
    /// How long the result line (with the artifacts) may be.
    result_room: usize,
}

impl Reader<'_> {
    fn line(&mut self, line: &[u8]) -> Result<(), Error> {
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        if text.is_empty() {
            return Ok(());
        }
        let event: Value =
            serde_json::from_str(text).map_err(|source| super::error::E2bError::StreamLine {
                excerpt: http::described(line),
                source,
            })?;
        let field = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default();
        match field("type") {
            "stdout" => self.stdout(field("text")),
            "stderr" => {
                self.collected.stderr.push_str(field("text"));
                if runner::cap_text(&mut self.collected.stderr, self.cap) {
                    self.collected.output_over = true;
                }
            }
            "result" => self.rich(&event),
            "error" => {
                let traceback = match event.get("traceback") {
                    Some(Value::String(text)) if !text.is_empty() => text.clone(),
                    Some(Value::Array(lines)) if !lines.is_empty() => lines
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => format!("{}: {}", field("name"), field("value")),
                };
                self.collected.error = Some(traceback);
                self.collected.error_name = Some(field("name").to_owned());
            }
            "end_of_execution" => self.collected.finished = true,
            // keepalive, number_of_executions, and whatever newer servers add.
            _ => {}
        }
        Ok(())
    }

    fn stdout(&mut self, text: &str) {
        let stdout = &mut self.collected.stdout;
        let before = stdout.len();
        stdout.push_str(text);
        if self.marker_at.is_none() {
            let mut from = before.saturating_sub(self.marker.len() + 1);
            while !stdout.is_char_boundary(from) {
                from -= 1;
            }
            self.marker_at = stdout[from..]
                .find(&format!("\n{}", self.marker))
                .map(|at| from + at);
        }
        let printed = self.marker_at.unwrap_or(stdout.len());
        let result_line = stdout.len() - printed;
        if printed > self.cap || result_line > self.result_room {
            let keep = printed.min(self.cap);
            runner::cap_text(stdout, keep);
            self.collected.output_over = true;
        }
    }

    fn rich(&mut self, event: &Value) {
        for (key, extension, base64) in RICH_FORMATS {
            let Some(content) = event.get(key).and_then(Value::as_str) else {
                continue;
            };
            let bytes = if base64 {
                match BASE64.decode(content.trim()) {
                    Ok(bytes) => bytes,
                    Err(_) => continue,
                }
            } else {
                content.as_bytes().to_vec()
            };
            let name = format!("result-{}.{extension}", self.collected.rich.len() + 1);
            let Ok(mime) = runner::artifact_mime(&name) else {
                continue;
            };
            self.collected.rich.push(Artifact {
                size: bytes.len() as u64,
                content_b64: BASE64.encode(&bytes),
                mime_type: mime.to_owned(),
                name,
            });
        }
    }

    fn done(&self) -> bool {
        self.collected.finished || self.collected.output_over
    }
}

/// Reads the stream until `end_of_execution`, the deadline, or too much output.
pub async fn collect(
    mut response: reqwest::Response,
    deadline: tokio::time::Instant,
    marker: &str,
    cap: usize,
    limits: ArtifactLimits,
) -> Result<Collected, Error> {
    let result_room = remote::result_room(limits);
    let mut reader = Reader {
        collected: Collected::default(),
        marker,
        marker_at: None,
        cap,
        result_room,
    };
    let mut pending: Vec<u8> = Vec::new();
    while !reader.done() {
        let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_elapsed) => {
                reader.collected.timed_out = true;
                break;
            }
            Ok(Err(error)) => {
                return Err(http::transport(
                    "reading E2B's execution stream",
                    &error,
                    deadline.elapsed(),
                ))
            }
            Ok(Ok(None)) => break,
            Ok(Ok(Some(chunk))) => chunk,
        };
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            reader.line(&line[..end])?;
            if reader.done() {
                break;
            }
        }
        if pending.len() > cap + result_room {
            reader.collected.output_over = true;
        }
    }
    if !reader.done() && !reader.collected.timed_out && !pending.is_empty() {
        reader.line(&pending)?;
    }
    Ok(reader.collected)
}
