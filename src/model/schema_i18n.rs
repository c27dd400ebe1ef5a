//! Provider schemas in the admin's language: field labels by key (one meaning across
//! providers, with per-provider exceptions) and help texts by `provider.key`, from
//! `locales/schema/<locale>.json`. A field without a translation keeps its English text.

use std::collections::HashMap;

use serde::Deserialize;

use crate::model::{
    provider::ProviderInfo,
    schema::{ConfigSchema, FieldKind},
};

/// The Simplified Chinese table.
pub const ZH_CN: &str = include_str!("../../locales/schema/zh-CN.json");

#[derive(Debug, Default, Deserialize)]
pub struct SchemaTranslations {
    #[serde(default)]
    pub labels: HashMap<String, String>,
    #[serde(default)]
    pub provider_labels: HashMap<String, String>,
    #[serde(default)]
    pub help: HashMap<String, String>,
    /// Placeholders written in words (not examples of a value), by field key.
    #[serde(default)]
    pub placeholders: HashMap<String, String>,
    /// Select options' labels by `key.value` (one meaning across providers).
    #[serde(default)]
    pub options: HashMap<String, String>,
    /// Providers' names and descriptions by kind.
    #[serde(default)]
    pub providers: HashMap<String, ProviderText>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ProviderText {
    pub name: String,
    pub description: String,
}

/// `schema` (of provider `kind`) with the labels and help texts `table` has.
pub fn translate(kind: &str, schema: &mut ConfigSchema, table: &str) {
    let Ok(table) = serde_json::from_str::<SchemaTranslations>(table) else {
        return;
    };
    for field in &mut schema.fields {
        let scoped = format!("{kind}.{}", field.key);
        if let Some(label) = table
            .provider_labels
            .get(&scoped)
            .or_else(|| table.labels.get(&field.key))
        {
            field.label = label.clone();
        }
        if let Some(help) = table.help.get(&scoped) {
            field.description = help.clone();
        }
        if let Some(placeholder) = table.placeholders.get(&field.key) {
            field.placeholder = Some(placeholder.clone());
        }
        if let FieldKind::Select { options } = &mut field.kind {
            for option in options {
                if let Some(label) = table
                    .options
                    .get(&format!("{}.{}", field.key, option.value))
                {
                    option.label = label.clone();
                }
            }
        }
    }
}

/// Provider `kind`'s name in the table's language, where it has one.
pub fn provider_name(kind: &str, table: &str) -> Option<String> {
    serde_json::from_str::<SchemaTranslations>(table)
        .ok()?
        .providers
        .remove(kind)
        .map(|text| text.name)
}

/// A provider's name and description in the table's language, where it has them.
pub fn translate_info(info: &mut ProviderInfo, table: &str) {
    let Ok(table) = serde_json::from_str::<SchemaTranslations>(table) else {
        return;
    };
    if let Some(text) = table.providers.get(&info.kind) {
        info.name = text.name.clone();
        info.description = text.description.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::schema::{FieldKind, FieldSpec};

    #[test]
    fn labels_and_help_are_replaced_where_the_table_has_them() {
        let mut schema = ConfigSchema {
            fields: vec![
                FieldSpec::new("pool_size", FieldKind::String, "Pool size").describe("Kept warm."),
                FieldSpec::new("unknown_field", FieldKind::String, "Unknown"),
            ],
        };
        translate("self_managed", &mut schema, ZH_CN);
        assert_eq!(schema.fields[0].label, "容器池大小");
        assert!(schema.fields[0].description.starts_with("执行器的容器池"));
        assert_eq!(schema.fields[1].label, "Unknown");

        // Select options by key and value; providers' names and descriptions by kind.
        let mut network = ConfigSchema {
            fields: vec![FieldSpec::new(
                "network",
                FieldKind::Select {
                    options: vec![crate::model::schema::SelectOption {
                        value: "none".into(),
                        label: "None: only a loopback interface".into(),
                    }],
                },
                "Network",
            )],
        };
        translate("docker", &mut network, ZH_CN);
        let FieldKind::Select { options } = &network.fields[0].kind else {
            unreachable!()
        };
        assert_eq!(options[0].label, "无：只有回环接口");
        assert_eq!(options[0].value, "none");
        let mut info = ProviderInfo {
            kind: "local".into(),
            name: "Local sandbox".into(),
            description: "Runs here.".into(),
            tags: vec![],
        };
        translate_info(&mut info, ZH_CN);
        assert_eq!(info.name, "本机沙箱");
        assert!(info.description.starts_with("在本机"));
        assert_eq!(provider_name("e2b", ZH_CN).as_deref(), Some("E2B"));
        assert_eq!(provider_name("nothing", ZH_CN), None);
    }
}
