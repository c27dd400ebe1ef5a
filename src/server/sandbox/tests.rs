//! The service on a real SQLite file with a provider of the tests' own.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::{test_connection::without_userinfo, Gate, SandboxService};
use crate::{
    model::{
        execution::{ExecRequest, ExecutionResult, Language},
        provider::{HealthReport, ProviderInfo},
        schema::{ConfigSchema, FieldKind, FieldSpec},
        settings::SaveOutcome,
    },
    sandbox::{
        registry::{ProviderKind, Registry},
        Error as SandboxError, Instance, SandboxProvider,
    },
    server::{
        db::{
            self,
            execution::{Actor, Caller, Source},
            settings_audit,
            system_setting::{Expected, SettingError},
        },
        secrets::SecretBox,
    },
};

const TOKEN: &str = "plain-s3cr3t-value";

/// A provider with a secret: healthy only when built with the right token.
#[derive(Debug)]
struct Vault {
    info: ProviderInfo,
    token: String,
}

#[async_trait]
impl SandboxProvider for Vault {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }
    fn languages(&self) -> &[Language] {
        &[Language::Python]
    }
    async fn health(&self) -> HealthReport {
        HealthReport {
            healthy: self.token == TOKEN,
            message: String::new(),
            details: Map::new(),
        }
    }
    async fn create_instance(&self, language: Language) -> Result<Instance, SandboxError> {
        Ok(Instance {
            id: "vault".into(),
            language,
            metadata: Map::new(),
        })
    }
    async fn execute(
        &self,
        _: &Instance,
        _: &ExecRequest,
    ) -> Result<ExecutionResult, SandboxError> {
        Err(SandboxError::Backend("the vault runs nothing".into()))
    }
    async fn destroy_instance(&self, _: Instance) -> Result<(), SandboxError> {
        Ok(())
    }
}

fn info() -> ProviderInfo {
    ProviderInfo {
        kind: "vault".into(),
        name: "Vault".into(),
        description: String::new(),
        tags: vec![],
    }
}

fn schema() -> ConfigSchema {
    ConfigSchema {
        fields: vec![
            FieldSpec::new("endpoint", FieldKind::String, "Endpoint").required(),
            FieldSpec::new("token", FieldKind::Secret, "Token").required(),
        ],
    }
}

fn build(raw: &Map<String, Value>) -> Result<Arc<dyn SandboxProvider>, SandboxError> {
    let values = schema()
        .normalize(raw)
        .map_err(|errors| SandboxError::ConfigInvalid { errors })?;
    let token = values["token"].as_str().unwrap_or_default().to_owned();
    Ok(Arc::new(Vault {
        info: info(),
        token,
    }))
}

fn form(endpoint: &str, token: &str) -> Map<String, Value> {
    Map::from_iter([
        ("endpoint".to_owned(), json!(endpoint)),
        ("token".to_owned(), json!(token)),
    ])
}

/// Every byte SQLite keeps for the database (main file and write-ahead log).
fn database_bytes(dir: &std::path::Path) -> Vec<u8> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .flat_map(|e| std::fs::read(e.path()).unwrap_or_default())
        .collect()
}

fn vault_registry() -> Registry {
    Registry::new().register(ProviderKind {
        info,
        schema,
        build: |raw, _| build(raw),
    })
}

async fn vault_service() -> (tempfile::TempDir, sqlx::AnyPool, SandboxService) {
    let (dir, pool) = db::scratch().await;
    let service = SandboxService::start(
        pool.clone(),
        vault_registry(),
        SecretBox::from_key(&[9; 32]),
    )
    .await
    .unwrap();
    (dir, pool, service)
}

/// The vault's settings saved by the admin.
async fn save_vault(
    service: &SandboxService,
    values: Map<String, Value>,
    expected: Expected,
    make_active: bool,
) -> Result<SaveOutcome, SettingError> {
    service
        .save(
            &Actor::admin("admin"),
            "vault",
            values,
            expected,
            make_active,
            Gate::Anyway,
        )
        .await
}

#[tokio::test]
async fn a_save_whose_audit_row_cannot_be_written_saves_nothing() {
    let (_dir, pool, service) = vault_service().await;
    save_vault(&service, form("https://a", TOKEN), Expected::Absent, false)
        .await
        .unwrap();
    let audit_rows = settings_audit::recent(&pool, 100).await.unwrap().len();
    sqlx::query(
        "create trigger no_audit before insert on settings_audit \
         begin select raise(abort, 'the audit is out of order'); end",
    )
    .execute(&pool)
    .await
    .unwrap();

    let saved = save_vault(&service, form("https://b", ""), Expected::Any, true).await;

    assert!(saved.is_err(), "the save reports the failed audit write");
    let stored = db::system_setting::get(&pool, "sandbox.vault")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.version, stored.value["endpoint"].clone()),
        (1, json!("https://a")),
        "the setting is as it was"
    );
    assert_eq!(
        service.stored_active_kind().await.unwrap().as_deref(),
        None,
        "nor did it become active"
    );
    sqlx::query("drop trigger no_audit")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(
        settings_audit::recent(&pool, 100).await.unwrap().len(),
        audit_rows
    );
    let again = save_vault(&service, form("https://b", ""), Expected::Any, true)
        .await
        .unwrap();
    assert_eq!(
        again,
        SaveOutcome::Saved {
            version: 2,
            active: true,
            restored_from: None,
            warning: None
        },
        "the same save goes through once the audit can be written"
    );
}

#[test]
fn credentials_in_an_endpoint_never_reach_the_audit() {
    assert_eq!(
        without_userinfo("https://user:hunter2@executor:9385/".into()),
        "https://***@executor:9385/"
    );
    assert_eq!(
        without_userinfo("http://executor:9385".into()),
        "http://executor:9385"
    );
    assert_eq!(without_userinfo("cn-hangzhou".into()), "cn-hangzhou");
}

#[tokio::test]
async fn secrets_are_stored_encrypted_never_shown_and_kept_when_left_blank() {
    let (dir, pool, service) = vault_service().await;

    let first = save_vault(&service, form("https://a", TOKEN), Expected::Absent, true)
        .await
        .unwrap();

    assert_eq!(
        first,
        SaveOutcome::Saved {
            version: 1,
            active: true,
            restored_from: None,
            warning: None
        }
    );
    assert!(
        service.active().unwrap().1.health().await.healthy,
        "built with the plaintext token"
    );
    let bytes = database_bytes(dir.path());
    assert!(
        !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
        "the token is not in the database files"
    );
    let settings = service.settings().await.unwrap();
    assert!(
        !serde_json::to_string(&settings).unwrap().contains(TOKEN),
        "the token never goes to the browser"
    );
    assert_eq!(settings.providers[0].secrets_set, ["token"]);

    let second = save_vault(&service, form("https://b", ""), Expected::Version(1), false)
        .await
        .unwrap();

    assert_eq!(
        second,
        SaveOutcome::Saved {
            version: 2,
            active: true,
            restored_from: None,
            warning: None
        }
    );
    assert!(
        service.active().unwrap().1.health().await.healthy,
        "a blank secret keeps the stored one"
    );
    let audit = settings_audit::recent(&pool, 1).await.unwrap();
    assert_eq!(audit[0].changed_keys, r#"["endpoint"]"#);
    let report = service
        .test_connection(
            "vault",
            form("https://c", ""),
            &Caller::admin("admin", Source::TestConnection),
        )
        .await
        .unwrap();
    assert_eq!(
        report.health.map(|h| h.healthy),
        Some(true),
        "test connection merges the stored secret"
    );
}

/// Secrets sealed under another key (the secret key file was replaced) are reported, never
/// sent anywhere, and nothing runs on them.
#[tokio::test]
async fn secrets_sealed_under_another_key_are_reported_and_nothing_runs() {
    let (_dir, pool, service) = vault_service().await;
    save_vault(&service, form("https://a", TOKEN), Expected::Absent, true)
        .await
        .unwrap();

    let rekeyed = SandboxService::start(pool, vault_registry(), SecretBox::from_key(&[8; 32]))
        .await
        .unwrap();
    let report = rekeyed
        .test_connection(
            "vault",
            form("https://a", ""),
            &Caller::admin("admin", Source::TestConnection),
        )
        .await
        .unwrap();
    let saved = save_vault(&rekeyed, form("https://a", ""), Expected::Any, true)
        .await
        .unwrap();

    assert!(rekeyed.active().is_none(), "nothing is built from them");
    assert!(!report.passed);
    assert!(
        report
            .message
            .starts_with("token: a stored secret cannot be decrypted"),
        "{}",
        report.message
    );
    let SaveOutcome::Invalid { errors } = saved else {
        panic!("{saved:?}")
    };
    assert!(
        errors[crate::model::schema::FORM_ERROR].contains("cannot be decrypted"),
        "{errors:?}"
    );
}
