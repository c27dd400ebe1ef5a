//! The 2026-12-06 probe's ways past the allow-list's two safety nets, from a real local
//! sandbox: the console's own listeners by every spelling of this host (`0.0.0.0`,
//! `::ffff:127.0.0.1`, `::`), and requests that name another host than the allowed one
//! (after a pause, with any method, pipelined, kept alive, twice, absolutely, not at all,
//! through CONNECT or HTTP/2 in clear text). The target records every byte it receives:
//! nothing of a refused request may reach it.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

use crate::{faults::configure, helpers::spawn_app_with};

/// A target that keeps every byte it gets and answers each read with a small 200.
async fn recording_target() -> (u16, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buffer).await {
                    if n == 0 {
                        break;
                    }
                    kept.lock().unwrap().extend_from_slice(&buffer[..n]);
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                    if stream.write_all(answer).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    (port, seen)
}

/// Each way, on a connection of its own to files.test; each request's path names its case.
const WAYS: &str = r#"import socket, ssl, time
def send(port, data, pause=0.0, then=None):
    try:
        s = socket.create_connection(('files.test', port), timeout=5)
        if pause:
            time.sleep(pause)
        s.sendall(data)
        answer = s.recv(200)
        if then is not None:
            s.sendall(then)
            answer += b' | ' + s.recv(200)
        s.close()
        return answer.decode(errors='replace')[:80]
    except Exception as e:
        return type(e).__name__
def tls_after_pause(port):
    try:
        raw = socket.create_connection(('files.test', port), timeout=5)
        time.sleep(0.6)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.wrap_socket(raw, server_hostname='evil-tls.test')
        return 'handshake'
    except Exception as e:
        return type(e).__name__
def main(port):
    r = lambda path, host='evil.test', method='GET': (
        '%s /%s HTTP/1.1\r\nHost: %s\r\n\r\n' % (method, path, host)).encode()
    return {
        'pause': send(port, r('case-pause'), pause=0.6),
        'propfind': send(port, r('case-propfind', method='PROPFIND')),
        'lowercase': send(port, r('case-lowercase', method='get')),
        'pipelined': send(port, r('case-pipe-ok', 'files.test') + r('case-pipe-evil')),
        'kept_alive': send(port, r('case-keep-ok', 'files.test'), then=r('case-keep-evil')),
        'two_hosts': send(port, b'GET /case-two HTTP/1.1\r\nHost: files.test\r\nHost: evil.test\r\n\r\n'),
        'absolute': send(port, b'GET http://evil.test/case-absolute HTTP/1.1\r\nHost: files.test\r\n\r\n'),
        'no_host': send(port, b'GET /case-nohost HTTP/1.0\r\n\r\n'),
        'connect': send(port, b'CONNECT case-connect.evil.test:443 HTTP/1.1\r\nHost: files.test\r\n\r\n'),
        'h2c': send(port, b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\ncase-h2c'),
        'tls_pause': tls_after_pause(port),
        'fine': send(port, r('case-fine', 'files.test')),
    }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_must_name_the_allowed_host_however_it_is_sent() {
    let (port, seen) = recording_target().await;
    let app = spawn_app_with(|_| {}).await;
    let admin = app.api_key("ops", &["admin"]).await;
    let key = app.api_key("agent", &["execute"]).await;
    configure(
        &app,
        &admin,
        "local",
        json!({
            "network": "allow-list",
            "allowed_hosts": format!("files.test:{port}"),
            "static_hosts": "files.test 127.0.0.1",
            "environment": "none",
        }),
    )
    .await;

    let response = app
        .post_json(
            "/api/v1/execute",
            &key,
            &json!({"language": "python", "code": WAYS, "arguments": {"port": port}, "timeout": 60}),
        )
        .await;
    let result: Value = response.json().await.unwrap();
    assert_eq!(result["status"], "success", "{result}");

    let received = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    for leaked in [
        "evil.test",
        "evil-tls.test",
        "case-pause",
        "case-propfind",
        "case-lowercase",
        "case-pipe-evil",
        "case-keep-evil",
        "case-two",
        "case-absolute",
        "case-nohost",
        "case-connect",
        "case-h2c",
        "PRI *",
    ] {
        assert!(
            !received.contains(leaked),
            "the target received {leaked}: {received:?}\n{result}"
        );
    }
    // (A pipelined batch with a refused request in it is refused whole.)
    for allowed in ["case-keep-ok", "case-fine"] {
        assert!(
            received.contains(allowed),
            "{allowed} reached the target: {received:?}"
        );
    }
    let value = &result["result"]["value"];
    assert!(
        value["fine"].as_str().unwrap().starts_with("HTTP/1.1 200"),
        "{value}"
    );
    // Refused before anything was relayed: a 403 from the console, or (after the pause, the
    // destination being connected already) the connection closed.
    for case in [
        "pause",
        "propfind",
        "lowercase",
        "two_hosts",
        "absolute",
        "no_host",
    ] {
        let answer = value[case].as_str().unwrap();
        assert!(
            answer.is_empty() || answer.contains("403 Forbidden"),
            "{case}: {value}"
        );
    }
    let reasons: Vec<String> = result["egress"]["connections"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "egress_denied")
        .filter_map(|c| c["reason"].as_str().map(str::to_owned))
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("names evil.test, not files.test")),
        "{reasons:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consoles_own_listeners_are_refused_by_every_spelling_of_this_host() {
    let app = spawn_app_with(|config| {
        config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let admin = app.api_key("ops", &["admin"]).await;
    let key = app.api_key("agent", &["execute"]).await;
    let port = |address: &str| address.rsplit(':').next().unwrap().to_owned();
    let (console, metrics) = (
        port(&app.address),
        port(app.metrics_address.as_deref().unwrap()),
    );
    let names = ["zero.test", "mapped.test", "v6any.test", "loop6.test"];
    let allowed: Vec<String> = names
        .iter()
        .flat_map(|name| [format!("{name}:{console}"), format!("{name}:{metrics}")])
        .collect();
    configure(
        &app,
        &admin,
        "local",
        json!({
            "network": "allow-list",
            "allowed_hosts": allowed.join("\n"),
            "static_hosts": "zero.test 0.0.0.0\nmapped.test ::ffff:127.0.0.1\nv6any.test ::\nloop6.test ::1",
            "environment": "none",
        }),
    )
    .await;

    let code = r#"import socket
def main(names, ports):
    out = {}
    for name in names:
        for port in ports:
            try:
                s = socket.create_connection((name, port), timeout=5)
                s.sendall(('GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n' % name).encode())
                out['%s:%s' % (name, port)] = s.recv(100).decode(errors='replace') or 'closed'
            except Exception as e:
                out['%s:%s' % (name, port)] = type(e).__name__
    return out
"#;
    let response = app
        .post_json(
            "/api/v1/execute",
            &key,
            &json!({"language": "python", "code": code, "timeout": 60,
                    "arguments": {"names": names, "ports": [console.parse::<u16>().unwrap(), metrics.parse::<u16>().unwrap()]}}),
        )
        .await;
    let result: Value = response.json().await.unwrap();
    assert_eq!(result["status"], "success", "{result}");
    for (target, answer) in result["result"]["value"].as_object().unwrap() {
        assert!(
            !answer.as_str().unwrap_or_default().starts_with("HTTP/"),
            "{target} reached the console: {answer}"
        );
    }
    let refused = result["egress"]["connections"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["verdict"] == "egress_denied"
                && c["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("the console's own address"))
        })
        .count();
    assert_eq!(refused, 8, "every name on both ports: {result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_test_tries_each_allowed_host_and_port() {
    let (open, _) = recording_target().await;
    // A port nothing listens on (bound, then let go).
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let app = spawn_app_with(|_| {}).await;
    app.login().await;
    let card = app.call_ok("sandbox_settings", &[]).await["providers"][0].clone();
    let version = card["version"].as_i64().unwrap_or(0).to_string();
    let allowed = format!("api.internal:{open}\napi.internal:{closed}");
    let report = app
        .call_ok(
            "test_sandbox_connection",
            &[
                ("kind", "local"),
                ("expected_version", &version),
                ("values[network]", "allow-list"),
                ("values[allowed_hosts]", &allowed),
                ("values[static_hosts]", "api.internal 127.0.0.1"),
                ("values[environment]", "none"),
            ],
        )
        .await;

    let health = &report["health"];
    let message = health["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "not reachable from this host: api.internal:{closed} (connection refused: nothing listens there)"
        )),
        "{report}"
    );
    let reach = &health["details"]["egress"]["reach"];
    assert_eq!(
        reach[format!("api.internal:{open}")],
        "reachable",
        "{reach}"
    );
    // What the sandbox met, in words.
    let inside = health["details"]["egress"]["inside"].to_string();
    assert!(
        !inside.contains("gaierror") && !inside.contains("Error"),
        "{inside}"
    );
}
