//! Provider schemas in the admin's language: field labels by key (one meaning across
//! providers, with per-provider exceptions) and help texts by `provider.key`, from
//! `locales/schema/<locale>.json`. A field without a translation keeps its English text.

use std::collections::HashMap;

use serde::Deserialize;

use crate::model::schema::ConfigSchema;

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
    }
}
