//! The run's artifacts, read out of the container through a second exec under the same rules
//! as every provider's.

use std::{collections::HashMap, time::Duration};

use base64::{engine::general_purpose::STANDARD as BASE64, Engine as _};
use bollard::Docker;
use serde::Deserialize;

use super::{engine::run_fixed, DockerError};
use crate::{
    model::execution::{Artifact, Language},
    sandbox::runner::{self, ArtifactFile, ArtifactLimits},
};

const COLLECT_PY: &str = include_str!("scripts/collect.py");
const COLLECT_JS: &str = include_str!("scripts/collect.js");

#[derive(Deserialize)]
struct Listed {
    name: String,
    size: u64,
    regular: bool,
    #[serde(default)]
    data: Option<String>,
}

/// Reads `/workspace/artifacts` through a second exec, under the same rules as every provider.
pub async fn collect_artifacts(
    docker: &Docker,
    id: &str,
    language: Language,
    limits: ArtifactLimits,
) -> Result<(Vec<Artifact>, Vec<String>), DockerError> {
    let extensions = runner::ARTIFACT_EXTENSIONS.join(",");
    let args = [
        limits.max_count.to_string(),
        limits.max_bytes.to_string(),
        extensions,
    ];
    let mut cmd: Vec<String> = match language {
        Language::Python => vec![
            "python3".into(),
            "-I".into(),
            "-c".into(),
            COLLECT_PY.into(),
        ],
        Language::Javascript => vec!["node".into(), "-e".into(), COLLECT_JS.into()],
    };
    cmd.extend(args);
    // base64 of every returnable file, plus room for the listing itself.
    let cap = (limits.max_count as u64 * limits.max_bytes * 4 / 3 + 1024 * 1024) as usize;
    let (text, _) = run_fixed(docker, id, cmd, Duration::from_secs(30), cap).await?;
    let listed: Vec<Listed> = serde_json::from_str(&text).map_err(|e| {
        DockerError::Protocol(format!("the artifact listing was not valid JSON: {e}"))
    })?;
    let mut contents: HashMap<String, String> = HashMap::new();
    let files = listed
        .into_iter()
        .map(|l| {
            if let Some(data) = l.data {
                contents.insert(l.name.clone(), data);
            }
            ArtifactFile {
                name: l.name,
                regular: l.regular,
                size: l.size,
            }
        })
        .collect();
    Ok(runner::select_artifacts(files, limits, |name| {
        let data = contents
            .get(name)
            .ok_or_else(|| "not sent by the container".to_owned())?;
        BASE64
            .decode(data)
            .map_err(|e| format!("damaged in transit: {e}"))
    }))
}
