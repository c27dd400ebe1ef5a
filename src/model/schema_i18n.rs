//! Provider schemas in the admin's language: field labels by key (one meaning across
//! providers, with per-provider exceptions) and help texts by `provider.key`, from
//! `locales/schema/<locale>.json`. A field without a translation keeps its English text.

use std::{collections::HashMap, sync::OnceLock};

use serde::Deserialize;

use crate::{
    i18n::Locale,
    model::{
        provider::ProviderInfo,
        schema::{ConfigSchema, FieldKind},
    },
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

impl SchemaTranslations {
    /// The table for `locale`, parsed once; `None` for English, the schemas' own language.
    pub fn for_locale(locale: Locale) -> Option<&'static Self> {
        static ZH: OnceLock<SchemaTranslations> = OnceLock::new();
        match locale {
            Locale::zh_CN => Some(ZH.get_or_init(|| Self::parse(ZH_CN))),
            Locale::en => None,
        }
    }

    /// The table in `json`; an unreadable one is empty (every text stays English).
    pub fn parse(json: &str) -> Self {
        serde_json::from_str(json).unwrap_or_default()
    }

    /// `schema` (of provider `kind`) with the labels, help texts, placeholders and options
    /// this table has.
    pub fn translate(&self, kind: &str, schema: &mut ConfigSchema) {
        for field in &mut schema.fields {
            let scoped = format!("{kind}.{}", field.key);
            if let Some(label) = self
                .provider_labels
                .get(&scoped)
                .or_else(|| self.labels.get(&field.key))
            {
                field.label = label.clone();
            }
            if let Some(help) = self.help.get(&scoped) {
                field.description = help.clone();
            }
            if let Some(placeholder) = self.placeholders.get(&field.key) {
                field.placeholder = Some(placeholder.clone());
            }
            if let FieldKind::Select { options } = &mut field.kind {
                for option in options {
                    if let Some(label) =
                        self.options.get(&format!("{}.{}", field.key, option.value))
                    {
                        option.label = label.clone();
                    }
                }
            }
        }
    }

    /// Provider `kind`'s name in this table's language, where it has one.
    pub fn provider_name(&self, kind: &str) -> Option<&str> {
        self.providers.get(kind).map(|text| text.name.as_str())
    }

    /// A provider's name and description in this table's language, where it has them.
    pub fn translate_info(&self, info: &mut ProviderInfo) {
        if let Some(text) = self.providers.get(&info.kind) {
            info.name = text.name.clone();
            info.description = text.description.clone();
        }
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
        let zh = SchemaTranslations::for_locale(Locale::zh_CN).expect("a Chinese table");
        assert!(SchemaTranslations::for_locale(Locale::en).is_none());
        zh.translate("self_managed", &mut schema);
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
        zh.translate("docker", &mut network);
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
        zh.translate_info(&mut info);
        assert_eq!(info.name, "本机沙箱");
        assert!(info.description.starts_with("在本机"));
        assert_eq!(zh.provider_name("e2b"), Some("E2B"));
        assert_eq!(zh.provider_name("nothing"), None);
    }
}
