use std::collections::{BTreeMap, BTreeSet};

use sqlx::AnyPool;

use crate::helpers::{on_postgres, spawn_app};

/// The migration files of one folder: `0001_admin_user.sql`, …
fn migration_files(folder: &str) -> BTreeSet<String> {
    let dir = format!("{}/migrations/{folder}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[tokio::test]
async fn every_migration_is_applied_and_sqlite_runs_in_wal_mode_with_foreign_keys() {
    let app = spawn_app().await;

    let applied: i64 = sqlx::query_scalar("select count(*) from _sqlx_migrations where success")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let folder = if on_postgres() { "postgres" } else { "sqlite" };
    assert_eq!(applied as usize, migration_files(folder).len());

    if !on_postgres() {
        let mode: String = sqlx::query_scalar("pragma journal_mode")
            .fetch_one(&app.pool)
            .await
            .unwrap();
        let foreign_keys: i64 = sqlx::query_scalar("pragma foreign_keys")
            .fetch_one(&app.pool)
            .await
            .unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(foreign_keys, 1);
    }
}

#[test]
fn both_migration_folders_hold_the_same_migrations() {
    let sqlite = migration_files("sqlite");
    let postgres = migration_files("postgres");
    assert!(sqlite.len() >= 15, "{sqlite:?}");
    assert_eq!(
        sqlite, postgres,
        "every migration is written for both databases, under the same number and name"
    );
}

/// A table's columns: name -> (type class, may be null).
type Columns = BTreeMap<String, (String, bool)>;

/// Tables (with their columns) and index names, as one database built them.
#[derive(Debug, PartialEq)]
struct Schema {
    tables: BTreeMap<String, Columns>,
    indexes: BTreeSet<String>,
}

async fn sqlite_schema(pool: &AnyPool) -> Schema {
    let names: Vec<String> = sqlx::query_scalar(
        "select name from sqlite_master where type = 'table' \
         and name not like 'sqlite_%' and name <> '_sqlx_migrations' order by name",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut tables = BTreeMap::new();
    for table in names {
        let rows: Vec<(String, String, i64, i64)> = sqlx::query_as(&format!(
            "select name, type, \"notnull\", pk from pragma_table_info('{table}')"
        ))
        .fetch_all(pool)
        .await
        .unwrap();
        let columns = rows
            .into_iter()
            .map(|(name, kind, not_null, pk)| {
                let class = match kind.to_lowercase().as_str() {
                    "integer" => "integer",
                    "text" => "text",
                    "blob" => "bytes",
                    other => panic!("{table}.{name}: unexpected SQLite type {other}"),
                };
                // A primary key is never null, whatever SQLite's notnull flag says.
                (name, (class.to_owned(), not_null == 0 && pk == 0))
            })
            .collect();
        tables.insert(table, columns);
    }
    // Named indexes (the ones a unique or primary key constraint makes have no SQL).
    let indexes = sqlx::query_scalar(
        "select name from sqlite_master where type = 'index' and sql is not null",
    )
    .fetch_all(pool)
    .await
    .unwrap()
    .into_iter()
    .collect();
    Schema { tables, indexes }
}

async fn postgres_schema(pool: &AnyPool) -> Schema {
    let rows: Vec<(String, String, String, String)> = sqlx::query_as(
        "select table_name::text, column_name::text, data_type::text, is_nullable::text \
         from information_schema.columns where table_schema = current_schema() \
         and table_name <> '_sqlx_migrations' order by table_name, ordinal_position",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut tables: BTreeMap<String, Columns> = BTreeMap::new();
    for (table, name, kind, nullable) in rows {
        let class = match kind.as_str() {
            "bigint" => "integer",
            "text" => "text",
            "bytea" => "bytes",
            // The session store's own type for its expiry (Unix seconds on SQLite).
            "timestamp with time zone" if table == "session" => "integer",
            other => panic!("{table}.{name}: unexpected PostgreSQL type {other}"),
        };
        tables
            .entry(table)
            .or_default()
            .insert(name, (class.to_owned(), nullable == "YES"));
    }
    // Named indexes, not the ones primary keys and unique constraints make (they carry the
    // constraint's name).
    let indexes = sqlx::query_scalar(
        "select indexname::text from pg_indexes where schemaname = current_schema() \
         and tablename <> '_sqlx_migrations' and indexname not in \
         (select conname from pg_constraint where connamespace = current_schema()::regnamespace)",
    )
    .fetch_all(pool)
    .await
    .unwrap()
    .into_iter()
    // SQLite says "unique collate nocase" on the column; PostgreSQL needs an index on lower().
    .filter(|name: &String| name != "admin_user_username")
    .collect();
    Schema { tables, indexes }
}

/// Both folders, applied to a fresh database each, build the same tables with the same
/// columns (type class and nullability) and the same indexes. Needs the PostgreSQL pass's
/// server; on the SQLite pass it says so and checks nothing.
#[tokio::test]
async fn both_migration_folders_build_the_same_schema() {
    let scratch = tempfile::tempdir().unwrap();
    let Some(url) = crate::helpers::postgres_url_for(scratch.path()) else {
        eprintln!("both_migration_folders_build_the_same_schema: runs on the PostgreSQL pass");
        return;
    };
    let postgres = sandbox_console::server::db::connect(&url).await.unwrap();
    sandbox_console::server::db::migrate(&postgres)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = sandbox_console::server::db::connect(&format!(
        "sqlite://{}",
        dir.path().join("schema.db").display()
    ))
    .await
    .unwrap();
    sandbox_console::server::db::migrate(&sqlite).await.unwrap();

    let (sqlite, postgres) = (
        sqlite_schema(&sqlite).await,
        postgres_schema(&postgres).await,
    );

    assert!(sqlite.tables.len() >= 12, "{sqlite:?}");
    assert_eq!(sqlite.tables, postgres.tables);
    assert_eq!(sqlite.indexes, postgres.indexes);
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
