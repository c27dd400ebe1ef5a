use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    app::components::error_view::ErrorView, model::overview::SystemOverview,
    server_fns::system::get_overview,
};

/// The landing page: what this installation is and how it is doing.
#[component]
pub fn OverviewPage() -> impl IntoView {
    let overview = Resource::new(|| (), |_| get_overview());
    view! {
        <Title text="Overview"/>
        <h1>"Overview"</h1>
        <Transition fallback=|| view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" Loading…"</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || overview.get().map(|result| result.map(|o| view! { <OverviewCard overview=o/> }))}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn OverviewCard(overview: SystemOverview) -> impl IntoView {
    view! {
        <section class="card" data-testid="overview">
            <h2>"This installation"</h2>
            <dl class="facts">
                <dt>"Version"</dt>
                <dd>{overview.version}</dd>
                <dt>"Database"</dt>
                <dd>{overview.database}</dd>
                <dt>"Administrators"</dt>
                <dd>{overview.admin_count}</dd>
                <dt>"Active sessions"</dt>
                <dd>{overview.active_sessions}</dd>
                <dt>"Running since"</dt>
                <dd>{overview.started_at} " (" {format_duration(overview.uptime_secs)} ")"</dd>
            </dl>
        </section>
    }
}

fn format_duration(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs} s"),
        60..=3599 => format!("{} min", secs / 60),
        3600..=86_399 => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
        _ => format!("{} d {} h", secs / 86_400, secs % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::format_duration;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(42), "42 s");
        assert_eq!(format_duration(125), "2 min");
        assert_eq!(format_duration(3 * 3600 + 5 * 60), "3 h 5 min");
        assert_eq!(format_duration(2 * 86_400 + 7200), "2 d 2 h");
    }
}
