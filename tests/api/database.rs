use crate::helpers::spawn_app;

#[tokio::test]
async fn the_database_runs_in_wal_mode_with_foreign_keys_and_every_migration_applied() {
    let app = spawn_app().await;

    let mode: String = sqlx::query_scalar("pragma journal_mode")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let foreign_keys: i64 = sqlx::query_scalar("pragma foreign_keys")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let applied: i64 = sqlx::query_scalar("select count(*) from _sqlx_migrations where success")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .count();

    assert_eq!(mode, "wal");
    assert_eq!(foreign_keys, 1);
    assert_eq!(applied as usize, migrations);
}

#[tokio::test]
async fn restarting_on_the_same_data_dir_keeps_accounts_and_creates_no_second_admin() {
    let first = spawn_app().await;
    first.login().await;
    let data_dir = first.data_dir;

    let second = crate::helpers::spawn_app_in(data_dir, |config| {
        config.admin_password = Some("another password".into())
    })
    .await;

    let admins: i64 = sqlx::query_scalar("select count(*) from admin_user")
        .fetch_one(&second.pool)
        .await
        .unwrap();
    assert_eq!(admins, 1);
    second.login().await;
}
