//! The provider kinds, one folder each, and the registry of those that really work.

pub mod aliyun_codeinterpreter;
mod config_check;
pub mod docker;
pub mod e2b;
mod fields;
mod http;
pub mod kubernetes;
pub mod local;
mod open_sandboxes;
mod owner;
pub mod self_managed;
pub mod ssh;
pub mod tenki;
pub mod ucloud_agent_sandbox;

use crate::sandbox::registry::Registry;

/// Every provider kind this build can run, in the order the settings page shows them.
pub fn registry() -> Registry {
    Registry::new()
        .register(local::kind())
        .register(docker::kind())
        .register(self_managed::kind())
        .register(ssh::kind())
        .register(aliyun_codeinterpreter::kind())
        .register(e2b::kind())
        .register(tenki::kind())
        .register(ucloud_agent_sandbox::kind())
        .register(kubernetes::kind())
}

#[cfg(test)]
mod tests {
    use crate::model::{
        schema::FieldKind,
        schema_i18n::{SchemaTranslations, ZH_CN},
    };

    /// Every provider's name, description, field labels, help texts and select options have
    /// a Simplified Chinese translation: a new field without one fails here, naming it.
    #[test]
    fn every_provider_text_has_a_chinese_translation() {
        let table: SchemaTranslations = serde_json::from_str(ZH_CN).expect("the table parses");
        let mut missing = Vec::new();
        for kind in super::registry().kinds() {
            let info = (kind.info)();
            match table.providers.get(&info.kind) {
                Some(p) if !p.name.is_empty() && !p.description.is_empty() => {}
                _ => missing.push(format!(
                    "providers.{}: {} — {}",
                    info.kind, info.name, info.description
                )),
            }
            for field in (kind.schema)().fields {
                let scoped = format!("{}.{}", info.kind, field.key);
                if !table.labels.contains_key(&field.key)
                    && !table.provider_labels.contains_key(&scoped)
                {
                    missing.push(format!("labels.{}: {}", field.key, field.label));
                }
                if !field.description.is_empty() && !table.help.contains_key(&scoped) {
                    missing.push(format!("help.{scoped}: {}", field.description));
                }
                // A placeholder in words (an example value has digits, dots, slashes…).
                let worded = field.placeholder.as_deref().is_some_and(|p| {
                    p.contains(' ') && p.chars().all(|c| c.is_alphabetic() || c == ' ')
                });
                if worded && !table.placeholders.contains_key(&field.key) {
                    missing.push(format!(
                        "placeholders.{}: {}",
                        field.key,
                        field.placeholder.as_deref().unwrap_or_default()
                    ));
                }
                if let FieldKind::Select { options } = &field.kind {
                    for option in options {
                        let key = format!("{}.{}", field.key, option.value);
                        if option.label != option.value && !table.options.contains_key(&key) {
                            missing.push(format!("options.{key}: {}", option.label));
                        }
                    }
                }
            }
        }
        assert!(missing.is_empty(), "untranslated:\n{}", missing.join("\n"));
    }
}
