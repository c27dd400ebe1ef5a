use leptos::prelude::*;
use leptos_meta::MetaTags;

/// The HTML document around the app, rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        // `lang` is set to the page's locale by the i18n provider (the hydrated page reads it back).
        <html>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <super::App/>
            </body>
        </html>
    }
}
