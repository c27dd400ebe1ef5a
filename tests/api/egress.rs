//! Egress on an allow-list, for real: an HTTP and an HTTPS server on this host's loopback,
//! under names mapped in Static hosts, reached from programs in real sandboxes through the
//! console; everything else refused, and every attempt in the run's report.
//!
//! Test traffic goes only to loopback: the refused destinations (a public address literal,
//! the metadata address, a UDP datagram) never leave the sandbox's namespace, which is the
//! point.

use std::{net::SocketAddr, sync::Arc};

use axum::{routing::get, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::{faults::configure, helpers::TestApp};

/// The test CA and the two servers it vouches for (the certificate names `files.test`).
pub struct Servers {
    pub ca_pem: String,
    pub http: SocketAddr,
    pub https: SocketAddr,
}

const BIG: usize = 2 * 1024 * 1024;

fn router() -> Router {
    Router::new()
        .route("/", get(|| async { "hello from files.test" }))
        .route("/big", get(|| async { vec![b'x'; BIG] }))
}

/// Starts the servers: a fresh CA, a certificate for files.test (and other.test, and
/// example.com), HTTP and HTTPS on 127.0.0.1 (HTTPS on `https_port`, 0 for any).
pub async fn servers() -> Servers {
    servers_on(0).await
}

pub async fn servers_on(https_port: u16) -> Servers {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "sandbox-console test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec![
        "files.test".to_owned(),
        "other.test".to_owned(),
        "example.com".to_owned(),
    ])
    .unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();

    let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http_address = http.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(http, router()).await.ok() });

    let tls = tokio_rustls::rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            tokio_rustls::rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let https = TcpListener::bind(("127.0.0.1", https_port)).await.unwrap();
    let https_address = https.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = https.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(stream).await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(router());
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
            });
        }
    });
    Servers {
        ca_pem: ca.pem(),
        http: http_address,
        https: https_address,
    }
}

/// Settings that allow files.test on the two servers' ports (other.test is mapped, not
/// allowed; console.test is mapped to the console's own port and allowed).
pub fn allow_list(servers: &Servers, app: &TestApp, max_bytes: u64) -> Value {
    let console_port = app.address.rsplit(':').next().unwrap();
    json!({
        "network": "allow-list",
        "allowed_hosts": format!(
            "files.test:{}\nfiles.test:{}\nconsole.test:{console_port}",
            servers.http.port(),
            servers.https.port()
        ),
        "static_hosts": "files.test 127.0.0.1\nother.test 127.0.0.1\nconsole.test 127.0.0.1",
        "max_egress_bytes": max_bytes,
        "ca_certificates": servers.ca_pem,
    })
}

async fn execute(app: &TestApp, key: &str, language: &str, code: &str) -> Value {
    let response = app
        .post_json(
            "/api/v1/execute",
            key,
            &json!({"language": language, "code": code}),
        )
        .await;
    assert_eq!(response.status().as_u16(), 200);
    response.json().await.unwrap()
}

/// Python that fetches from files.test four ways and returns what each got.
fn python_fetches(servers: &Servers) -> String {
    format!(
        r#"import socket, urllib.request
def main():
    out = {{}}
    out['urllib'] = urllib.request.urlopen('https://files.test:{https}/', timeout=10).read().decode()
    out['http'] = urllib.request.urlopen('http://files.test:{http}/', timeout=10).read().decode()
    s = socket.create_connection(('files.test', {http}), timeout=10)
    s.sendall(b'GET / HTTP/1.0\r\nHost: files.test\r\n\r\n')
    data = b''
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    out['socket'] = data.decode().split('\r\n\r\n', 1)[1]
    return out
"#,
        https = servers.https.port(),
        http = servers.http.port()
    )
}

/// Python that tries each refused way out and returns the error each one met.
fn python_refusals(servers: &Servers, console_port: u16) -> String {
    format!(
        r#"import socket, urllib.request
def attempt(f):
    try:
        f()
        return 'reached'
    except Exception as e:
        return type(e).__name__ + ': ' + str(e)
def connect(host, port):
    socket.create_connection((host, port), timeout=5).close()
def tls_as(name):
    import ssl
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(('files.test', {https}), timeout=5)
    tls = context.wrap_socket(raw, server_hostname=name)
    tls.sendall(b'GET / HTTP/1.0\r\n\r\n')
    if not tls.recv(100):
        raise ConnectionError('closed')
def host_header(name):
    s = socket.create_connection(('files.test', {http}), timeout=5)
    s.sendall(('GET / HTTP/1.0\r\nHost: %s\r\n\r\n' % name).encode())
    answer = s.recv(100).decode()
    if not answer.startswith('HTTP/1.1 200'):
        raise ConnectionError(answer.splitlines()[0])
def main():
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.sendto(b'x', ('8.8.8.8', 123))
    return {{
        'unlisted_name': attempt(lambda: urllib.request.urlopen('https://other.test:{https}/', timeout=5)),
        'address_literal': attempt(lambda: connect('93.184.215.14', 443)),
        'loopback_literal': attempt(lambda: connect('127.0.0.1', {https})),
        'other_port': attempt(lambda: connect('files.test', 22)),
        'console': attempt(lambda: urllib.request.urlopen('http://console.test:{console}/healthz', timeout=5)),
        'metadata': attempt(lambda: connect('169.254.169.254', 80)),
        'dns': attempt(lambda: socket.getaddrinfo('evil.example', 443)),
        'tls_name_mismatch': attempt(lambda: tls_as('other.test')),
        'http_host_mismatch': attempt(lambda: host_header('evil.example')),
    }}
"#,
        https = servers.https.port(),
        http = servers.http.port(),
        console = console_port
    )
}

/// A console on the environment store shared by the run, with the default environment built
/// (once per machine) and ready to mount.
async fn app_with_default_environment() -> TestApp {
    let app = crate::helpers::spawn_app_with(|config| {
        config.environment_store = Some(crate::environments::shared_store())
    })
    .await;
    default_environment_ready(&app).await;
    app
}

/// Signs in and builds the default environment (from the store shared by the run: once per
/// machine), ready to mount.
async fn default_environment_ready(app: &TestApp) {
    app.login().await;
    app.call_ok("build_environment", &[("name", "default")])
        .await;
    let page = crate::environments::built(app, "default").await;
    assert_eq!(
        page["environment"]["ready"]["status"], "ready",
        "{}",
        page["log"]["log"]
    );
}

/// requests (Python) and axios (Node), from the default environment.
fn package_fetches(servers: &Servers) -> [(&'static str, String); 2] {
    let port = servers.https.port();
    [
        (
            "python",
            format!("import requests\ndef main():\n    return requests.get('https://files.test:{port}/', timeout=10).text\n"),
        ),
        (
            "javascript",
            format!("const axios = require('axios');\nasync function main() {{\n  return (await axios.get('https://files.test:{port}/')).data;\n}}\n"),
        ),
    ]
}

fn node_fetches(servers: &Servers) -> String {
    format!(
        r#"const https = require('https');
const get = (url) => new Promise((resolve, reject) => {{
  https.get(url, (res) => {{
    let body = '';
    res.on('data', (c) => body += c);
    res.on('end', () => resolve(body));
  }}).on('error', reject);
}});
async function main() {{
  const out = {{}};
  out.https_get = await get('https://files.test:{https}/');
  out.fetch = await (await fetch('https://files.test:{https}/')).text();
  return out;
}}
"#,
        https = servers.https.port()
    )
}

fn connections(result: &Value) -> Vec<(String, String, u64)> {
    result["egress"]["connections"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|c| {
            (
                format!(
                    "{} {}:{}",
                    c["protocol"].as_str().unwrap(),
                    c["name"].as_str().or(c["address"].as_str()).unwrap_or("?"),
                    c["port"]
                ),
                c["verdict"].as_str().unwrap().to_owned(),
                c["bytes_in"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_sandboxes_reach_allowed_hosts_by_name_and_nothing_else() {
    let servers = servers().await;
    let app = crate::helpers::spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let key = app.api_key("agent", &["execute"]).await;
    let mut settings = allow_list(&servers, &app, 10 * 1024 * 1024);
    settings["environment"] = json!("none");
    configure(&app, &admin, "local", settings).await;
    let console_port: u16 = app.address.rsplit(':').next().unwrap().parse().unwrap();

    let fetched = execute(&app, &key, "python", &python_fetches(&servers)).await;
    assert_eq!(fetched["status"], "success", "{fetched}");
    let value = &fetched["result"]["value"];
    for way in ["urllib", "http", "socket"] {
        assert_eq!(value[way], "hello from files.test", "{way}: {fetched}");
    }
    assert_eq!(fetched["egress"]["egress_denied"], 0, "{fetched}");
    let log = connections(&fetched);
    assert!(
        log.iter()
            .all(|(target, verdict, bytes)| verdict == "allowed"
                && target.starts_with("tcp files.test:")
                && *bytes > 0),
        "{log:?}"
    );

    let node = execute(&app, &key, "javascript", &node_fetches(&servers)).await;
    assert_eq!(node["status"], "success", "{node}");
    assert_eq!(
        node["result"]["value"]["https_get"],
        "hello from files.test"
    );
    assert_eq!(node["result"]["value"]["fetch"], "hello from files.test");

    let refused = execute(
        &app,
        &key,
        "python",
        &python_refusals(&servers, console_port),
    )
    .await;
    assert_eq!(refused["status"], "success", "{refused}");
    let errors = &refused["result"]["value"];
    for case in [
        "unlisted_name",
        "address_literal",
        "loopback_literal",
        "other_port",
        "console",
        "metadata",
        "dns",
        "tls_name_mismatch",
        "http_host_mismatch",
    ] {
        let error = errors[case].as_str().unwrap();
        assert_ne!(error, "reached", "{case}: {refused}");
    }
    let stderr = refused["stderr"].as_str().unwrap();
    for line in [
        format!(
            "egress to other.test:{} is not on this provider's allow-list",
            servers.https.port()
        ),
        "egress to 93.184.215.14:443 is not on this provider's allow-list".to_owned(),
        "egress to files.test:22 is not on this provider's allow-list".to_owned(),
        format!(
            "egress to console.test:{console_port} is refused: that is the console's own address"
        ),
        "egress to 169.254.169.254:80 is not on this provider's allow-list".to_owned(),
        "egress to evil.example is not on this provider's allow-list".to_owned(),
        "egress to 8.8.8.8:123 is refused: only DNS goes over UDP".to_owned(),
        format!(
            "egress to files.test:{} is refused: the connection names other.test, not files.test",
            servers.https.port()
        ),
        format!(
            "egress to files.test:{} is refused: the connection names evil.example, not files.test",
            servers.http.port()
        ),
    ] {
        assert!(stderr.contains(&line), "{line:?} in {stderr}");
    }
    assert!(
        refused["egress"]["egress_denied"].as_u64().unwrap() >= 9,
        "{refused}"
    );
    println!("refused cases: {errors:#}");

    // The history keeps each run's connections: the newest row is the refusals' run, and its
    // list is the result's.
    app.login().await;
    let list = app.call_ok("execution_history", &[]).await;
    let newest = list["entries"][0]["id"].to_string();
    let record = app.call_ok("execution_record", &[("id", &newest)]).await;
    assert_eq!(record["egress"], refused["egress"], "{record}");
    let first = app
        .call_ok(
            "execution_record",
            &[("id", &list["entries"][2]["id"].to_string())],
        )
        .await;
    assert_eq!(first["egress"], fetched["egress"], "{first}");
    let html = app.text_of(&format!("/admin/history/{newest}")).await;
    assert!(
        html.contains("data-testid=\"run-egress\""),
        "the run's page lists them"
    );
    assert!(html.contains("evil.example"), "{html}");

    // And /metrics counts them, per provider and verdict.
    let metrics = crate::metrics::scrape(&app, &admin).await;
    let denied = metrics["sandbox_egress_connections_total{provider=\"local\",verdict=\"denied\"}"];
    let allowed =
        metrics["sandbox_egress_connections_total{provider=\"local\",verdict=\"allowed\"}"];
    assert_eq!(denied, refused["egress"]["egress_denied"].as_f64().unwrap());
    assert!(allowed >= 5.0, "{allowed}");
    assert!(metrics["sandbox_egress_bytes_total{provider=\"local\",direction=\"in\"}"] > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_past_max_egress_bytes_is_cut_with_a_typed_limit() {
    let servers = servers().await;
    let app = crate::helpers::spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let key = app.api_key("agent", &["execute"]).await;
    let mut settings = allow_list(&servers, &app, 256 * 1024);
    settings["environment"] = json!("none");
    configure(&app, &admin, "local", settings).await;
    let code = format!(
        "import urllib.request\ndef main():\n    return len(urllib.request.urlopen('http://files.test:{}/big', timeout=10).read())\n",
        servers.http.port()
    );
    let result = execute(&app, &key, "python", &code).await;
    assert_eq!(result["status"], "egress_limit", "{result}");
    assert_eq!(result["egress"]["limit_reached"], true);
    let moved = result["egress"]["bytes_in"].as_u64().unwrap();
    assert!(moved < BIG as u64, "cut before the whole body: {moved}");
    assert!(result["stderr"]
        .as_str()
        .unwrap()
        .contains("past this provider's max_egress_bytes"));
}

#[tokio::test]
async fn bad_allow_lists_are_refused_by_field() {
    let app = crate::helpers::spawn_app().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let response = app
        .post_json(
            "/api/v1/admin/sandbox/config",
            &admin,
            &json!({"provider_type": "local", "config": {
                "network": "allow-list",
                "allowed_hosts": "ok.example\n10.0.0.1",
                "static_hosts": "files.test",
                "ca_certificates": "not a certificate",
            }}),
        )
        .await;
    let body: Value = response.json().await.unwrap();
    let text = body.to_string();
    assert!(text.contains("line 2: '10.0.0.1' is an address"), "{text}");
    assert!(
        text.contains("line 1: 'files.test' is not 'name address'"),
        "{text}"
    );
    assert!(text.contains("Paste PEM certificates only"), "{text}");

    let response = app
        .post_json(
            "/api/v1/admin/sandbox/config",
            &admin,
            &json!({"provider_type": "local", "config": {"network": "allow-list"}}),
        )
        .await;
    let text = response.text().await.unwrap();
    assert!(text.contains("List at least one host"), "{text}");
}

/// RAGFlow's image's clients: requests and axios, from the default environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_axios_reach_allowed_hosts_from_the_default_environment() {
    let servers = servers().await;
    let app = app_with_default_environment().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let key = app.api_key("agent", &["execute"]).await;
    configure(
        &app,
        &admin,
        "local",
        allow_list(&servers, &app, 10 * 1024 * 1024),
    )
    .await;

    for (language, code) in package_fetches(&servers) {
        let result = execute(&app, &key, language, &code).await;
        assert_eq!(
            result["result"]["value"], "hello from files.test",
            "{language}: {result}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_sandboxes_reach_allowed_hosts_by_name_and_nothing_else() {
    let servers = servers().await;
    let (app, stop, running) =
        crate::helpers::spawn_app_stoppable(tempfile::tempdir().unwrap(), |config| {
            config.environment_store = Some(crate::environments::shared_store())
        })
        .await;
    default_environment_ready(&app).await;
    let admin = app.api_key("ops", &["admin"]).await;
    let key = app.api_key("agent", &["execute"]).await;
    let console_port: u16 = app.address.rsplit(':').next().unwrap().parse().unwrap();
    for runtime in ["runc", "runsc-egress"] {
        let mut settings = allow_list(&servers, &app, 10 * 1024 * 1024);
        let base = crate::docker_provider::settings(runtime, json!({"pool_size": 1}));
        for (k, v) in base {
            settings[&k] = v;
        }
        configure(&app, &admin, "docker", settings).await;

        let fetched = execute(&app, &key, "python", &python_fetches(&servers)).await;
        assert_eq!(fetched["status"], "success", "{runtime}: {fetched}");
        for way in ["urllib", "http", "socket"] {
            assert_eq!(
                fetched["result"]["value"][way], "hello from files.test",
                "{runtime} {way}: {fetched}"
            );
        }
        let node = execute(&app, &key, "javascript", &node_fetches(&servers)).await;
        assert_eq!(node["status"], "success", "{runtime}: {node}");
        assert_eq!(node["result"]["value"]["fetch"], "hello from files.test");
        assert_eq!(
            node["result"]["value"]["https_get"],
            "hello from files.test"
        );
        for (language, code) in package_fetches(&servers) {
            let result = execute(&app, &key, language, &code).await;
            assert_eq!(
                result["result"]["value"], "hello from files.test",
                "{runtime} {language}: {result}"
            );
        }

        let refused = execute(
            &app,
            &key,
            "python",
            &python_refusals(&servers, console_port),
        )
        .await;
        let errors = &refused["result"]["value"];
        let Some(errors) = errors.as_object() else {
            panic!("{runtime}: {refused}");
        };
        for (case, error) in errors {
            assert_ne!(error, "reached", "{runtime} {case}: {refused}");
        }
        let stderr = refused["stderr"].as_str().unwrap();
        for line in [
            "egress to 93.184.215.14:443 is not on this provider's allow-list".to_owned(),
            "egress to files.test:22 is not on this provider's allow-list".to_owned(),
            "egress to 169.254.169.254:80 is not on this provider's allow-list".to_owned(),
            "egress to evil.example is not on this provider's allow-list".to_owned(),
        ] {
            assert!(stderr.contains(&line), "{runtime}: {line:?} in {stderr}");
        }
    }
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    assert_eq!(
        crate::docker_provider::our_containers(),
        Vec::<String>::new()
    );
}

/// RAGFlow's acceptance suite's Node.js cases through `/run`, with example.com allowed: a
/// name mapped to a TLS server on this host's 127.0.0.1:443 stands in for it. Both reach it;
/// the axios case then returns nothing, which RAGFlow's current protocol (and ours, on every
/// door and provider) refuses for JavaScript: it fails on that rule alone, as it does against
/// RAGFlow's own executor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ragflows_nodejs_cases_reach_example_com_through_run_when_it_is_allowed() {
    let servers = servers_on(443).await;
    let app = app_with_default_environment().await;
    let admin = app.api_key("ops", &["admin"]).await;
    let key = app.api_key("ragflow", &["execute"]).await;
    configure(
        &app,
        &admin,
        "local",
        json!({
            "network": "allow-list",
            "allowed_hosts": "example.com",
            "static_hosts": "example.com 127.0.0.1",
            "ca_certificates": servers.ca_pem,
        }),
    )
    .await;
    let https_get = crate::environments::ragflow_run(&app, &key, RAGFLOW_HTTPS_GET, "nodejs").await;
    assert_eq!(https_get["status"], "success", "{https_get}");
    assert_eq!(
        https_get["stdout"], "Body: hello from files.test\n",
        "{https_get}"
    );

    let axios =
        crate::environments::ragflow_run(&app, &key, crate::environments::RAGFLOW_AXIOS, "nodejs")
            .await;
    assert_eq!(axios["stdout"], "Body: hello from files.test\n", "{axios}");
    assert_eq!(
        axios["stderr"], "main() must return a value. Use null for an empty result.\n",
        "{axios}"
    );
}

/// RAGFlow's "Normal test: Nodejs without dependencies" case, as its suite sends it.
const RAGFLOW_HTTPS_GET: &str = "\nconst https = require('https');\n\nasync function main(args) {\n  return new Promise((resolve, reject) => {\n    const req = https.get('https://example.com/', (res) => {\n      let data = '';\n\n      res.on('data', (chunk) => {\n        data += chunk;\n      });\n\n      res.on('end', () => {\n        clearTimeout(timeout);\n        console.log('Body:', data);\n        resolve(data);\n      });\n    });\n\n    const timeout = setTimeout(() => {\n      req.destroy(new Error('Request timeout after 10s'));\n    }, 10000);\n\n    req.on('error', (err) => {\n      clearTimeout(timeout);\n      console.error('Error:', err.message);\n      reject(err);\n    });\n  });\n}\n\nmodule.exports = { main };\n            ";
