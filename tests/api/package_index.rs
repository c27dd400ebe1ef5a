//! A package index and npm registry of the test's own on loopback, serving packages that try
//! what hostile packages do: an sdist whose `setup.py` reports who runs it and what it can
//! reach (then fails, so pip prints the report into the build log), an npm package with a
//! `postinstall`, and a tiny wheel. PyPI's simple API (PEP 503 pages with links relative to
//! the host asked for) and npm's packument answers, as far as pip and npm read them. The
//! archives are made with the host's Python (the test's own code, not a package's).

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use axum::{
    extract::{Request, State},
    http::{header, StatusCode},
    response::{IntoResponse, Response},
    Router,
};
use tokio::sync::watch;

/// Makes the archives in the folder given; prints `{"file": "integrity"}` for the npm tarballs.
const MAKE_PACKAGES: &str = r#"
import base64, hashlib, io, json, os, sys, tarfile, zipfile
out, marker = sys.argv[1], sys.argv[2]

def tar_gz(path, files):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))

setup = '''
import json, os, socket, sys
report = {"uid": os.getuid(), "euid": os.geteuid(), "env": sorted(os.environ)}
try:
    with open(%r, "w") as f:
        f.write("setup.py ran here")
    report["host_write"] = "wrote"
except OSError as e:
    report["host_write"] = type(e).__name__
try:
    socket.getaddrinfo("example.com", 443)
    report["other_name"] = "resolved"
except OSError as e:
    report["other_name"] = type(e).__name__
try:
    open("/etc/shadow").read()
    report["shadow"] = "read"
except OSError as e:
    report["shadow"] = type(e).__name__
print("EVILPKG-REPORT " + json.dumps(report), flush=True)
sys.exit("evilpkg stops its own build after reporting")
''' % marker
tar_gz(os.path.join(out, "evilpkg-1.0.tar.gz"), {
    "evilpkg-1.0/setup.py": setup,
    "evilpkg-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: evilpkg\nVersion: 1.0\n",
})

with zipfile.ZipFile(os.path.join(out, "tinypkg-1.0-py3-none-any.whl"), "w") as whl:
    whl.writestr("tinypkg.py", "VALUE = 42\n")
    whl.writestr("tinypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n")
    whl.writestr("tinypkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    whl.writestr("tinypkg-1.0.dist-info/RECORD", "")

integrity = {}
for name, scripts in [("evil-postinstall", {"postinstall": "node -e \"require('fs').writeFileSync('POSTINSTALL_RAN', 'x')\""})]:
    package = {"name": name, "version": "1.0.0", "scripts": scripts}
    path = os.path.join(out, name + "-1.0.0.tgz")
    tar_gz(path, {"package/package.json": json.dumps(package), "package/index.js": "module.exports = 1;\n"})
    digest = hashlib.sha512(open(path, "rb").read()).digest()
    integrity[name] = "sha512-" + base64.b64encode(digest).decode()
print(json.dumps(integrity))
"#;

#[derive(Default)]
struct Served {
    files: BTreeMap<String, Vec<u8>>,
    integrity: BTreeMap<String, String>,
    /// Every path asked for, in order.
    requests: Vec<String>,
}

#[derive(Clone)]
struct Shared {
    served: Arc<Mutex<Served>>,
    /// While true, requests for `held` wait.
    hold: watch::Sender<bool>,
    held: Arc<Mutex<Option<String>>>,
}

pub struct PackageIndex {
    pub address: SocketAddr,
    shared: Shared,
    _dir: tempfile::TempDir,
}

impl PackageIndex {
    /// Makes the packages and serves them; `marker` is where `setup.py` tries to write on
    /// the host (it must never be able to).
    pub async fn start(marker: &std::path::Path) -> PackageIndex {
        let dir = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("/usr/bin/python3.11")
            .arg("-c")
            .arg(MAKE_PACKAGES)
            .arg(dir.path())
            .arg(marker)
            .output()
            .expect("python3.11 makes the test packages");
        assert!(made.status.success(), "{made:?}");
        let integrity = serde_json::from_slice(&made.stdout).unwrap();
        let mut served = Served {
            integrity,
            ..Served::default()
        };
        for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
            served.files.insert(
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).unwrap(),
            );
        }
        let shared = Shared {
            served: Arc::new(Mutex::new(served)),
            hold: watch::channel(false).0,
            held: Arc::default(),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let app = Router::new().fallback(serve).with_state(shared.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        PackageIndex {
            address,
            shared,
            _dir: dir,
        }
    }

    /// pip's `--index-url`.
    pub fn pip_url(&self) -> String {
        format!("http://{}/simple", self.address)
    }

    /// npm's `--registry`.
    pub fn npm_url(&self) -> String {
        format!("http://{}/npm/", self.address)
    }

    /// Makes requests for paths starting with `prefix` wait until [`Self::release`].
    pub fn hold(&self, prefix: &str) {
        *self.shared.held.lock().unwrap() = Some(prefix.to_owned());
        self.shared.hold.send_replace(true);
    }

    pub fn release(&self) {
        self.shared.hold.send_replace(false);
    }

    /// The paths asked for so far.
    pub fn requests(&self) -> Vec<String> {
        self.shared.served.lock().unwrap().requests.clone()
    }
}

async fn serve(State(shared): State<Shared>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    shared.served.lock().unwrap().requests.push(path.clone());
    let held = shared.held.lock().unwrap().clone();
    if held.is_some_and(|prefix| path.starts_with(&prefix)) {
        let mut hold = shared.hold.subscribe();
        let _ = hold.wait_for(|holding| !holding).await;
    }
    let served = shared.served.lock().unwrap();
    if let Some(name) = path
        .strip_prefix("/simple/")
        .map(|rest| rest.trim_end_matches('/'))
    {
        let links: String = served
            .files
            .keys()
            .filter(|file| file.starts_with(&format!("{name}-")) && !file.ends_with(".tgz"))
            .map(|file| format!("<a href=\"/files/{file}\">{file}</a>\n"))
            .collect();
        if links.is_empty() {
            return StatusCode::NOT_FOUND.into_response();
        }
        let page = format!("<!DOCTYPE html><html><body>\n{links}</body></html>\n");
        return ([(header::CONTENT_TYPE, "text/html")], page).into_response();
    }
    if let Some(file) = path
        .strip_prefix("/files/")
        .or_else(|| path.strip_prefix("/npm/-/"))
    {
        return match served.files.get(file) {
            Some(bytes) => bytes.clone().into_response(),
            None => StatusCode::NOT_FOUND.into_response(),
        };
    }
    if let Some(name) = path.strip_prefix("/npm/") {
        let Some(integrity) = served.integrity.get(name) else {
            return StatusCode::NOT_FOUND.into_response();
        };
        let packument = serde_json::json!({
            "name": name,
            "dist-tags": {"latest": "1.0.0"},
            "versions": {"1.0.0": {
                "name": name,
                "version": "1.0.0",
                "scripts": {"postinstall": "node -e \"require('fs').writeFileSync('POSTINSTALL_RAN', 'x')\""},
                "hasInstallScript": true,
                "dist": {
                    "tarball": format!("http://{host}/npm/-/{name}-1.0.0.tgz"),
                    "integrity": integrity,
                },
            }},
        });
        return axum::Json(packument).into_response();
    }
    StatusCode::NOT_FOUND.into_response()
}
