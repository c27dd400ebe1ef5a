use crate::helpers::spawn_app;

#[tokio::test]
async fn healthz_answers_without_a_session() {
    let app = spawn_app().await;

    let response = app.get("/healthz").await;

    assert_eq!(response.status().as_u16(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"], "ok");
}

#[tokio::test]
async fn readyz_is_ready_with_a_working_database() {
    let app = spawn_app().await;

    let response = app.get("/readyz").await;

    assert_eq!(response.status().as_u16(), 200);
    if !crate::helpers::on_postgres() {
        assert!(app.data_dir.path().join("sandbox-console.db").exists());
    }
}

#[tokio::test]
async fn readyz_fails_when_the_database_file_is_deleted() {
    if crate::helpers::sqlite_only("a deleted database file") {
        return;
    }
    let app = spawn_app().await;
    std::fs::remove_file(app.data_dir.path().join("sandbox-console.db")).unwrap();

    let response = app.get("/readyz").await;

    assert_eq!(response.status().as_u16(), 503);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body["database"].as_str().unwrap().contains("missing"),
        "{body}"
    );
}

#[tokio::test]
async fn readyz_fails_when_the_database_connections_are_gone() {
    let app = spawn_app().await;
    app.pool.close().await;

    let response = app.get("/readyz").await;

    assert_eq!(response.status().as_u16(), 503);
}
