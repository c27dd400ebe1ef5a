//! A dockerd of the test's own (own socket, data and exec roots, no networking), so that
//! freezing or restarting it touches nothing else on the machine: not the shared daemon the
//! other tests and any other console use. Thawed and stopped when dropped.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use tempfile::TempDir;

pub struct OwnDockerd {
    dir: TempDir,
    child: Child,
}

impl OwnDockerd {
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("dockerd-")
            .tempdir_in("/tmp")
            .unwrap();
        // Not the host's daemon.json: nothing of the main daemon's set-up is needed here.
        std::fs::write(dir.path().join("daemon.json"), "{}").unwrap();
        let child = spawn(dir.path());
        let daemon = OwnDockerd { dir, child };
        daemon.wait_until_it_answers();
        daemon
    }

    /// `docker_host` for a provider (and `--host` for the CLI).
    pub fn host(&self) -> String {
        format!("unix://{}/docker.sock", self.dir.path().display())
    }

    pub fn signal(&self, signal: &str) {
        Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
    }

    /// Copies `image` from the shared daemon into this one (through `docker save | load`).
    pub fn load_image(&self, image: &str) {
        let mut save = Command::new("docker")
            .args(["save", image])
            .stdout(Stdio::piped())
            .spawn()
            .expect("the docker CLI runs");
        let load = Command::new("docker")
            .args(["--host", &self.host(), "load", "--quiet"])
            .stdin(save.stdout.take().unwrap())
            .output()
            .unwrap();
        assert!(save.wait().unwrap().success(), "docker save {image}");
        assert!(
            load.status.success(),
            "docker load {image}: {}",
            String::from_utf8_lossy(&load.stderr)
        );
    }

    /// Whether a process whose command line contains `needle` runs in one of its containers.
    pub fn runs(&self, needle: &str) -> bool {
        let host = self.host();
        let docker = |args: &[&str]| {
            Command::new("docker")
                .args(["--host", &host])
                .args(args)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
        };
        docker(&["ps", "-q"])
            .lines()
            .any(|id| docker(&["top", id]).contains(needle))
    }

    /// Stops the daemon (its containers die with it, as on a host's dockerd restart) and
    /// starts it again on the same roots.
    pub fn restart(&mut self) {
        self.stop();
        self.child = spawn(self.dir.path());
        self.wait_until_it_answers();
    }

    fn wait_until_it_answers(&self) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            let answered = Command::new("docker")
                .args(["--host", &self.host(), "version"])
                .output()
                .is_ok_and(|o| o.status.success());
            if answered {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "the test's own dockerd did not start: {}",
            std::fs::read_to_string(self.dir.path().join("dockerd.log")).unwrap_or_default()
        );
    }

    fn stop(&mut self) {
        self.signal("-CONT");
        self.signal("-TERM");
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for OwnDockerd {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn(path: &Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path.join("dockerd.log"))
        .unwrap();
    Command::new("/usr/sbin/dockerd")
        .arg("--host")
        .arg(format!("unix://{}/docker.sock", path.display()))
        .arg("--data-root")
        .arg(path.join("data"))
        .arg("--exec-root")
        .arg(path.join("exec"))
        .arg("--pidfile")
        .arg(path.join("docker.pid"))
        .args(["--bridge=none", "--iptables=false", "--ip6tables=false"])
        .arg("--config-file")
        .arg(path.join("daemon.json"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("dockerd runs (scripts/docker.sh up installs it)")
}
