use crate::helpers::spawn_app;

#[tokio::test]
async fn unknown_pages_render_the_404_page_with_a_404_status() {
    let app = spawn_app().await;
    app.login().await;

    let response = app.get("/no/such/page").await;

    assert_eq!(response.status().as_u16(), 404);
    let html = response.text().await.unwrap();
    assert!(html.contains("Page not found"));
    assert!(
        html.contains(r#"data-testid="admin-name""#),
        "the 404 page keeps the app shell"
    );
}

#[tokio::test]
async fn the_navigation_lists_only_pages_that_exist() {
    let app = spawn_app().await;
    app.login().await;
    let html = app.get("/").await.text().await.unwrap();
    let nav = html
        .split(r#"class="mainnav""#)
        .nth(1)
        .unwrap()
        .split("</nav>")
        .next()
        .unwrap();

    for href in nav
        .split("href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap())
    {
        let status = app.get(href).await.status().as_u16();
        assert_eq!(status, 200, "nav link {href}");
    }
}

#[tokio::test]
async fn pages_carry_security_headers() {
    let app = spawn_app().await;

    let response = app.get("/login").await;

    assert_eq!(response.headers()["x-frame-options"], "DENY");
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
}
