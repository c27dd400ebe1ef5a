//! The explicit registry of provider kinds, built at start-up. Only kinds that really work
//! are registered: the settings page shows exactly these.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::{
    model::{provider::ProviderInfo, schema::ConfigSchema},
    sandbox::{environment::BuildContext, Error, SandboxProvider},
};

/// A provider kind's one validating constructor: stored or submitted values in (and what
/// else a provider may consult: the environments), a ready provider (or per-field errors) out.
pub type BuildFn =
    fn(&Map<String, Value>, &BuildContext) -> Result<Arc<dyn SandboxProvider>, Error>;

/// One provider kind: who it is, its form, and its one validating constructor.
#[derive(Clone)]
pub struct ProviderKind {
    pub info: fn() -> ProviderInfo,
    pub schema: fn() -> ConfigSchema,
    pub build: BuildFn,
}

impl std::fmt::Debug for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderKind")
            .field("kind", &(self.info)().kind)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Debug, Default)]
pub struct Registry {
    kinds: Vec<ProviderKind>,
    context: BuildContext,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds providers with `context` (the console's environments) from now on.
    pub fn with_context(mut self, context: BuildContext) -> Self {
        self.context = context;
        self
    }

    /// Changes what providers are built with from now on, keeping the rest.
    pub fn update_context(mut self, change: impl FnOnce(&mut BuildContext)) -> Self {
        change(&mut self.context);
        self
    }

    pub fn register(mut self, kind: ProviderKind) -> Self {
        self.kinds.push(kind);
        self
    }

    /// The registered kinds, in registration order.
    pub fn kinds(&self) -> impl Iterator<Item = &ProviderKind> {
        self.kinds.iter()
    }

    pub fn get(&self, kind: &str) -> Result<&ProviderKind, Error> {
        self.kinds
            .iter()
            .find(|k| (k.info)().kind == kind)
            .ok_or_else(|| Error::UnknownKind {
                kind: kind.to_owned(),
                available: self.kinds.iter().map(|k| (k.info)().kind).collect(),
            })
    }

    pub fn build(
        &self,
        kind: &str,
        config: &Map<String, Value>,
    ) -> Result<Arc<dyn SandboxProvider>, Error> {
        (self.get(kind)?.build)(config, &self.context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ProviderInfo {
        ProviderInfo {
            kind: "alpha".into(),
            name: "Alpha".into(),
            description: String::new(),
            tags: vec![],
        }
    }

    fn refuse(_: &Map<String, Value>, _: &BuildContext) -> Result<Arc<dyn SandboxProvider>, Error> {
        Err(Error::field("endpoint", "This field is required."))
    }

    #[test]
    fn an_unknown_kind_names_the_available_ones() {
        let registry = Registry::new().register(ProviderKind {
            info,
            schema: ConfigSchema::default,
            build: refuse,
        });

        let error = registry.get("e2b").unwrap_err();

        assert_eq!(
            error.to_string(),
            "unknown provider kind \"e2b\"; available: alpha"
        );
    }

    #[test]
    fn build_goes_through_the_kinds_validating_constructor() {
        let registry = Registry::new().register(ProviderKind {
            info,
            schema: ConfigSchema::default,
            build: refuse,
        });

        let error = registry.build("alpha", &Map::new()).unwrap_err();

        assert!(
            matches!(error, Error::ConfigInvalid { errors } if errors["endpoint"] == "This field is required.")
        );
    }
}
