use sandbox_console::server::db::system_setting::{self, Expected, SettingError};
use serde_json::json;

use crate::helpers::spawn_app;

#[tokio::test]
async fn settings_round_trip_as_json_with_author_and_version() {
    let app = spawn_app().await;
    let value = json!({ "provider": "local", "timeout": 10, "flags": [true, null] });

    let saved = system_setting::put(
        &app.pool,
        "example.local",
        &value,
        "admin",
        Expected::Absent,
    )
    .await
    .unwrap();
    let loaded = system_setting::get(&app.pool, "example.local")
        .await
        .unwrap()
        .unwrap();

    assert_eq!(saved, loaded);
    assert_eq!(loaded.value, value);
    assert_eq!(loaded.version, 1);
    assert_eq!(loaded.updated_by.as_deref(), Some("admin"));
    assert!(system_setting::get(&app.pool, "example.other")
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn a_save_based_on_a_stale_version_conflicts_and_keeps_the_newer_value() {
    let app = spawn_app().await;
    system_setting::put(
        &app.pool,
        "example.provider_type",
        &json!("local"),
        "alice",
        Expected::Any,
    )
    .await
    .unwrap();
    system_setting::put(
        &app.pool,
        "example.provider_type",
        &json!("docker"),
        "bob",
        Expected::Version(1),
    )
    .await
    .unwrap();

    let stale = system_setting::put(
        &app.pool,
        "example.provider_type",
        &json!("e2b"),
        "carol",
        Expected::Version(1),
    )
    .await;

    assert!(
        matches!(stale, Err(SettingError::Conflict { current: 2, .. })),
        "{stale:?}"
    );
    let kept = system_setting::get(&app.pool, "example.provider_type")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.value, json!("docker"));
    assert_eq!(kept.updated_by.as_deref(), Some("bob"));
}

#[tokio::test]
async fn creating_a_setting_that_exists_conflicts() {
    let app = spawn_app().await;
    system_setting::put(&app.pool, "a", &json!(1), "admin", Expected::Any)
        .await
        .unwrap();

    let again = system_setting::put(&app.pool, "a", &json!(2), "admin", Expected::Absent).await;

    assert!(matches!(
        again,
        Err(SettingError::Conflict { current: 1, .. })
    ));
}

#[tokio::test]
async fn list_returns_settings_under_a_prefix_in_name_order() {
    let app = spawn_app().await;
    for name in ["example.local", "mail.host", "example.docker", "example_x"] {
        system_setting::put(&app.pool, name, &json!(name), "admin", Expected::Any)
            .await
            .unwrap();
    }

    let names: Vec<_> = system_setting::list(&app.pool, "example.")
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();

    assert_eq!(names, ["example.docker", "example.local"]);
}

#[tokio::test]
async fn the_database_refuses_values_that_are_not_json() {
    let app = spawn_app().await;

    let result = sqlx::query("insert into system_setting (name, value) values ('x', 'not json')")
        .execute(&app.pool)
        .await;

    assert!(result.is_err());
}
