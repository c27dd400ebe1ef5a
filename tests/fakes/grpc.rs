//! gRPC over HTTP/2 as the fakes answer it (h2c on loopback): each message framed with a
//! compression flag and a big-endian length, the status in trailers (`grpc-status`,
//! `grpc-message`).

use std::convert::Infallible;

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, HeaderValue},
    response::Response,
};
use http_body_util::StreamBody;
use hyper::body::Frame;

/// gRPC's framing of each message: not compressed, a big-endian length.
pub fn framed(messages: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for message in messages {
        out.push(0);
        out.extend_from_slice(&(message.len() as u32).to_be_bytes());
        out.extend_from_slice(message);
    }
    out
}

pub fn unframed(body: &[u8]) -> Vec<&[u8]> {
    let mut messages = Vec::new();
    let mut at = 0;
    while at + 5 <= body.len() {
        let length =
            u32::from_be_bytes([body[at + 1], body[at + 2], body[at + 3], body[at + 4]]) as usize;
        let end = (at + 5 + length).min(body.len());
        messages.push(&body[at + 5..end]);
        at = end;
    }
    messages
}

/// A gRPC answer: the messages, then the status in trailers.
pub fn answer(messages: Vec<Vec<u8>>, code: u8, message: &str) -> Response {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from(u16::from(code)));
    if let Ok(text) = HeaderValue::from_str(message) {
        trailers.insert("grpc-message", text);
    }
    let frames = vec![
        Ok::<_, Infallible>(Frame::data(Bytes::from(framed(&messages)))),
        Ok(Frame::trailers(trailers)),
    ];
    Response::builder()
        .header("content-type", "application/grpc")
        .body(Body::new(StreamBody::new(futures_util::stream::iter(
            frames,
        ))))
        .unwrap()
}
