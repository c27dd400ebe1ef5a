//! sandbox-console: the admin console and execution gateway for code-execution sandboxes.
//!
//! Layers (see STYLE.md): `app` (Leptos UI) → `server_fns` → `server` (ssr-only host) → `model`.

pub mod app;
pub mod model;
pub mod server_fns;

#[cfg(feature = "ssr")]
pub mod server;

#[cfg(feature = "ssr")]
pub mod sandbox;

/// Entry point of the browser bundle: hydrates the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
    // Lets end-to-end tests (and curious admins) see that the page is interactive.
    if let Some(body) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.body())
    {
        let _ = body.set_attribute("data-hydrated", "true");
    }
}
