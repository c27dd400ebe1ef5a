//! The files a sandbox on an allow-list reads, kept by its provider in a private folder and
//! mounted read-only: a resolv.conf naming the console's DNS, and a CA bundle (the system's
//! plus the admin's) when the admin added certificates.

use std::{
    io,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use super::session::DNS_ADDRESS;

/// Where the folder appears inside a sandbox.
pub const MOUNT_POINT: &str = "/opt/sandbox-net";
const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

#[derive(Debug)]
pub struct NetworkFiles {
    dir: tempfile::TempDir,
    ca: bool,
}

impl NetworkFiles {
    /// Writes the folder; `extra_ca` is PEM text (blank for none).
    pub fn create(extra_ca: &str) -> io::Result<NetworkFiles> {
        let dir = tempfile::Builder::new()
            .prefix("sandbox-console-net-")
            .tempdir()?;
        // Readable by the sandbox's user (docker runs programs as nobody).
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        let write = |name: &str, text: &str| -> io::Result<()> {
            let path = dir.path().join(name);
            std::fs::write(&path, text)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
        };
        write(
            "resolv.conf",
            &format!("nameserver {DNS_ADDRESS}\noptions timeout:2 attempts:2\n"),
        )?;
        // Names resolve through the console only: the host's /etc/hosts (with its own
        // addresses for names) is not the sandbox's.
        write("hosts", "127.0.0.1 localhost\n::1 localhost\n")?;
        let extra = extra_ca.trim();
        if !extra.is_empty() {
            let system = std::fs::read_to_string(SYSTEM_BUNDLE).unwrap_or_default();
            write("ca.pem", &format!("{system}\n{extra}\n"))?;
        }
        Ok(NetworkFiles {
            dir,
            ca: !extra.is_empty(),
        })
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn resolv_conf(&self) -> PathBuf {
        self.dir.path().join("resolv.conf")
    }

    pub fn hosts(&self) -> PathBuf {
        self.dir.path().join("hosts")
    }

    /// The variables that point Python's ssl, requests, curl and Node at the bundle.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        if !self.ca {
            return Vec::new();
        }
        let bundle = format!("{MOUNT_POINT}/ca.pem");
        [
            "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
            "NODE_EXTRA_CA_CERTS",
        ]
        .into_iter()
        .map(|name| (name, bundle.clone()))
        .collect()
    }
}
