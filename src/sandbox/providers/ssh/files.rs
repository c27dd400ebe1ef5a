//! The run's folder over SFTP: made private (0700) inside the work folder, the job's files
//! written into it (0600), and its artifacts read back under the shared rules: entries as the
//! host lists them without following links, so a symlink is skipped, never read.

use std::{collections::HashMap, time::Duration};

use russh_sftp::{
    client::{Config, SftpSession},
    protocol::{FileAttributes, OpenFlags},
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{connect::Connection, error::SshError};
use crate::{
    model::execution::Artifact,
    sandbox::runner::{self, ArtifactFile, ArtifactLimits, WorkspaceFile, ARTIFACT_DIR},
};

/// Each SFTP request's own deadline.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Files {
    sftp: SftpSession,
    target: String,
}

impl Files {
    pub async fn open(connection: &Connection) -> Result<Self, SshError> {
        let failed = |message: String| SshError::Sftp {
            target: connection.target.clone(),
            what: "session".into(),
            message,
        };
        let channel = connection
            .handle
            .channel_open_session()
            .await
            .map_err(|e| failed(e.to_string()))?;
        channel
            .request_subsystem(true, "sftp")
            .await
            .map_err(|e| failed(e.to_string()))?;
        let config = Config {
            request_timeout_secs: REQUEST_TIMEOUT.as_secs(),
            ..Config::default()
        };
        let sftp = tokio::time::timeout(
            REQUEST_TIMEOUT,
            SftpSession::new_with_config(channel.into_stream(), config),
        )
        .await
        .map_err(|_| failed("the SFTP subsystem did not answer".into()))?
        .map_err(|e| failed(e.to_string()))?;
        Ok(Files {
            sftp,
            target: connection.target.clone(),
        })
    }

    fn failed(&self, what: impl Into<String>, error: impl std::fmt::Display) -> SshError {
        SshError::Sftp {
            target: self.target.clone(),
            what: what.into(),
            message: error.to_string(),
        }
    }

    /// Makes `folder` (and its artifacts folder) with only the account's access, and writes
    /// the job's files into it.
    pub async fn prepare(&self, folder: &str, files: &[WorkspaceFile]) -> Result<(), SshError> {
        let private = |mode: u32| FileAttributes {
            permissions: Some(mode),
            ..FileAttributes::empty()
        };
        self.sftp.create_dir(folder).await.map_err(|e| {
            self.failed(
                format!("mkdir {folder}"),
                format!("{e} (does the work folder exist, writable by the account?)"),
            )
        })?;
        self.sftp
            .set_metadata(folder, private(0o700))
            .await
            .map_err(|e| self.failed(format!("chmod {folder}"), e))?;
        let artifacts = format!("{folder}/{ARTIFACT_DIR}");
        self.sftp
            .create_dir(&artifacts)
            .await
            .map_err(|e| self.failed(format!("mkdir {artifacts}"), e))?;
        for file in files {
            let path = format!("{folder}/{}", file.name);
            let mut handle = self
                .sftp
                .open_with_flags_and_attributes(
                    &path,
                    OpenFlags::CREATE | OpenFlags::EXCLUDE | OpenFlags::WRITE,
                    private(0o600),
                )
                .await
                .map_err(|e| self.failed(format!("create {path}"), e))?;
            handle
                .write_all(&file.contents)
                .await
                .map_err(|e| self.failed(format!("write {path}"), e))?;
            handle
                .shutdown()
                .await
                .map_err(|e| self.failed(format!("close {path}"), e))?;
        }
        Ok(())
    }

    /// Reads `folder/artifacts` under `limits`: the listing's own attributes (lstat: a link is
    /// a link), then only the files that pass, each read to at most `max_bytes + 1`.
    pub async fn artifacts(
        &self,
        folder: &str,
        limits: ArtifactLimits,
    ) -> Result<(Vec<Artifact>, Vec<String>), SshError> {
        let dir = format!("{folder}/{ARTIFACT_DIR}");
        let listing = match self.sftp.read_dir(&dir).await {
            Ok(listing) => listing,
            // The program removed the folder: no artifacts.
            Err(russh_sftp::client::error::Error::Status(status))
                if status.status_code == russh_sftp::protocol::StatusCode::NoSuchFile =>
            {
                return Ok((Vec::new(), Vec::new()))
            }
            Err(error) => return Err(self.failed(format!("list {dir}"), error)),
        };
        let files: Vec<ArtifactFile> = listing
            .map(|entry| {
                let meta = entry.metadata();
                ArtifactFile {
                    name: entry.file_name(),
                    regular: regular(&meta),
                    size: meta.len(),
                }
            })
            .collect();
        let mut contents = HashMap::new();
        for name in runner::wanted_artifacts(&files, limits) {
            let read = self
                .read_capped(&format!("{dir}/{name}"), limits.max_bytes)
                .await;
            contents.insert(name, read);
        }
        Ok(runner::select_artifacts(files, limits, |name| {
            contents
                .remove(name)
                .unwrap_or_else(|| Err("not read".into()))
        }))
    }

    async fn read_capped(&self, path: &str, max: u64) -> Result<Vec<u8>, String> {
        let file = self.sftp.open(path).await.map_err(|e| e.to_string())?;
        // The handle's own attributes: the entry listed as a file may have been swapped.
        let meta = file.metadata().await.map_err(|e| e.to_string())?;
        if !regular(&meta) {
            return Err("not a regular file".into());
        }
        let mut bytes = Vec::new();
        file.take(max + 1)
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| e.to_string())?;
        Ok(bytes)
    }

    pub async fn close(self) {
        let _ = self.sftp.close().await;
    }
}

/// A regular file by its mode's type bits (a link is not one, whatever it points at).
fn regular(meta: &FileAttributes) -> bool {
    meta.permissions
        .is_some_and(|mode| mode & 0o170_000 == 0o100_000)
}
