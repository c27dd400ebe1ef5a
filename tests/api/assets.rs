use crate::helpers::spawn_app;

#[tokio::test]
async fn site_assets_are_public_typed_and_revalidated_by_etag() {
    let app = spawn_app().await;

    let css = app.get("/pkg/sandbox-console.css").await;
    assert_eq!(
        css.status().as_u16(),
        200,
        "assets need no session: the login page uses them"
    );
    assert!(css.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/css"));
    let etag = css.headers()["etag"].to_str().unwrap().to_owned();

    let again = app
        .client
        .get(app.url("/pkg/sandbox-console.css"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status().as_u16(), 304);

    let wasm = app.get("/pkg/sandbox-console.wasm").await;
    assert_eq!(wasm.status().as_u16(), 200);
    assert_eq!(wasm.headers()["content-type"], "application/wasm");
}

#[tokio::test]
async fn the_login_page_references_the_assets_it_needs() {
    let app = spawn_app().await;

    let html = app.get("/login").await.text().await.unwrap();

    assert!(html.contains("/pkg/sandbox-console.css"));
    assert!(html.contains("/pkg/sandbox-console.js"));
    assert!(html.contains("/pkg/sandbox-console.wasm"));
}
