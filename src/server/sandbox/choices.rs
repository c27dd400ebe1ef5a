//! Fields whose values name something that exists here, offered as choices of what does: a
//! provider's Environment (the environments, the default, none) and docker's Container
//! runtime (the runtimes dockerd has registered, gVisor and allow-list capability marked).
//! A saved value that is not among them stays offered, marked, so nothing changes unseen;
//! when dockerd cannot be asked, the runtime stays free text.

use serde_json::Value;

use crate::{
    model::{
        environment::EnvironmentInfo,
        schema::{FieldKind, SelectOption},
        settings::SandboxSettings,
    },
    sandbox::providers::docker,
};

fn select(options: Vec<SelectOption>, current: Option<&Value>) -> FieldKind {
    let mut options = options;
    if let Some(current) = current.and_then(Value::as_str) {
        if !options.iter().any(|o| o.value == current) {
            options.push(SelectOption {
                value: current.to_owned(),
                label: format!("{current} (not found here)"),
            });
        }
    }
    FieldKind::Select { options }
}

/// Turns the Environment and Container runtime fields of `settings` into choices.
pub async fn offer(settings: &mut SandboxSettings, environments: &[EnvironmentInfo]) {
    let default = environments
        .iter()
        .find(|e| e.is_default)
        .map(|e| e.name.clone());
    let mut environment_options = vec![SelectOption {
        value: String::new(),
        label: match &default {
            Some(name) => format!("The default environment ({name})"),
            None => "The default environment (none is set: the bare interpreter)".to_owned(),
        },
    }];
    environment_options.extend(environments.iter().map(|e| SelectOption {
        value: e.name.clone(),
        label: format!("{} ({})", e.name, e.status()),
    }));
    environment_options.push(SelectOption {
        value: crate::model::environment::NONE.to_owned(),
        label: "None: the bare interpreter".to_owned(),
    });
    for card in &mut settings.providers {
        let docker_host = card
            .values
            .get("docker_host")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let runtimes = match (&card.info.kind[..], docker_host) {
            (docker::KIND, Some(host)) => docker::runtimes::registered(&host).await.ok(),
            _ => None,
        };
        for field in &mut card.schema.fields {
            if !matches!(field.kind, FieldKind::String) {
                continue;
            }
            match field.key.as_str() {
                "environment" => {
                    field.kind =
                        select(environment_options.clone(), card.values.get("environment"));
                }
                "runtime" => {
                    let Some(runtimes) = &runtimes else { continue };
                    let options = runtimes
                        .iter()
                        .map(|r| SelectOption {
                            value: r.name.clone(),
                            label: match (r.gvisor, r.allow_list) {
                                (true, true) => {
                                    format!("{} (gVisor; can use an allow-list)", r.name)
                                }
                                (true, false) => format!("{} (gVisor; no network)", r.name),
                                (false, _) => format!("{} (can use an allow-list)", r.name),
                            },
                        })
                        .collect();
                    field.kind = select(options, card.values.get("runtime"));
                }
                _ => {}
            }
        }
    }
}
