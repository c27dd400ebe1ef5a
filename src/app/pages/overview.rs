use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    app::{
        components::{
            error_view::ErrorView,
            trial_panel::{status_hint, status_label},
        },
        format::{pool_line, When},
    },
    i18n::{t, td_string, use_i18n},
    model::{
        dashboard::{duration_label, plot, Dashboard, BUCKET_MINUTES, WINDOW_MINUTES},
        overview::SystemOverview,
    },
    server_fns::system::{get_dashboard, get_overview},
};

/// The landing page: the active provider and how it is doing, what ran lately, latency over
/// time, recent failures, and this installation.
#[component]
pub fn OverviewPage() -> impl IntoView {
    let dashboard = Resource::new(|| (), |_| get_dashboard());
    let overview = Resource::new(|| (), |_| get_overview());
    let i18n = use_i18n();
    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), nav.dashboard).to_string()/>
        <h1>{t!(i18n, nav.dashboard)}</h1>
        <Transition fallback=move || view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.loading)}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || dashboard.get().map(|result| result.map(|d| view! { <DashboardView dashboard=d/> }))}
                {move || overview.get().map(|result| result.map(|o| view! { <OverviewCard overview=o/> }))}
            </ErrorBoundary>
        </Transition>
    }
}

#[component]
fn DashboardView(dashboard: Dashboard) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let health = dashboard.health.clone();
    let (badge, label) = if health.healthy {
        (
            "badge success",
            td_string!(locale, settings.healthy).to_string(),
        )
    } else {
        (
            "badge failure",
            td_string!(locale, settings.unhealthy).to_string(),
        )
    };
    let total: i64 = dashboard.last_hour.iter().map(|(_, n)| n).sum();
    let runs_in_window: u32 = dashboard.latency.iter().map(|b| b.runs).sum();
    view! {
        <div class="dashboard-grid">
            <section class="card" data-testid="dashboard-provider">
                <h2>{t!(i18n, dash.active_provider)}</h2>
                {if dashboard.active_kind.is_empty() {
                    view! { <p class="notice error">{t!(i18n, dash.none_active)} " " <a href="/admin/sandbox-settings">{t!(i18n, dash.configure_one)}</a></p> }.into_any()
                } else {
                    view! {
                        <p class="provider-line">
                            <a href=format!("/admin/sandbox-settings?provider={}", dashboard.active_kind)><b>{dashboard.active_name.clone()}</b></a>
                            " " <span class=badge data-testid="dashboard-health" title=health.message.clone()>{label}</span>
                        </p>
                    }.into_any()
                }}
                <p class="muted">{health.message.clone()}</p>
                {dashboard.pool.map(|pool| view! {
                    <p data-testid="dashboard-pool">{pool_line(locale, &pool, health.healthy)}</p>
                })}
            </section>
            <section class="card" data-testid="dashboard-last-hour">
                <h2>{t!(i18n, dash.last_hour)}</h2>
                {if total == 0 {
                    view! { <p class="muted">{t!(i18n, dash.no_runs)}</p> }.into_any()
                } else {
                    view! {
                        <p class="big">{total} " " <span class="muted">{t!(i18n, dash.runs)}</span></p>
                        <ul class="status-list">
                            {dashboard.last_hour.iter().map(|(status, n)| view! {
                                <li><a href=format!("/admin/history?status={status}&from={}", dashboard.last_hour_from)>{status_label(locale, status)}</a> ": " {*n}</li>
                            }).collect_view()}
                        </ul>
                    }.into_any()
                }}
            </section>
        </div>
        <section class="card" data-testid="dashboard-latency">
            <h2>{td_string!(locale, dash.latency, hours = WINDOW_MINUTES / 60, minutes = BUCKET_MINUTES).to_string()}</h2>
            {if runs_in_window == 0 {
                view! { <p class="muted" data-testid="no-latency">{t!(i18n, dash.no_latency)}</p> }.into_any()
            } else {
                view! { <LatencyPlot dashboard=dashboard.clone()/> }.into_any()
            }}
        </section>
        <section class="card" data-testid="dashboard-failures">
            <h2>{t!(i18n, dash.recent_failures)}</h2>
            {if dashboard.recent_failures.is_empty() {
                view! { <p class="muted">{t!(i18n, common.none)}</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                    <table class="table">
                        <thead><tr><th>"#"</th><th>{t!(i18n, common.when)}</th><th>{t!(i18n, common.caller)}</th><th>{t!(i18n, common.source)}</th><th>{t!(i18n, common.status)}</th></tr></thead>
                        <tbody>
                            {dashboard.recent_failures.into_iter().map(|r| view! {
                                <tr>
                                    <td><a href=format!("/admin/history/{}", r.id)>{r.id}</a></td>
                                    <td><When stamp=r.created_at/></td>
                                    <td>{r.caller}</td>
                                    <td>{r.source}</td>
                                    <td><span class="badge failure" title=status_hint(locale, &r.status)>{status_label(locale, &r.status)}</span></td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
}

/// p50 and p95 per bucket as a server-rendered SVG (no script, no chart service).
#[component]
fn LatencyPlot(dashboard: Dashboard) -> impl IntoView {
    const W: f64 = 600.0;
    const H: f64 = 160.0;
    let geometry = plot(&dashboard.latency, W, H);
    let hours = WINDOW_MINUTES / 60;
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    view! {
        <svg class="plot" viewBox="-72 -12 692 200" role="img" data-testid="latency-plot"
            aria-label=td_string!(locale, dash.plot_label, hours, top = duration_label(geometry.top_ms)).to_string()>
            // Grid lines at a quarter, a half and three quarters of the scale.
            {[0.25, 0.5, 0.75].map(|f| {
                let y = H * (1.0 - f);
                let label = duration_label((geometry.top_ms as f64 * f).round() as u64);
                view! {
                    <line x1="0" y1=format!("{y:.1}") x2=W.to_string() y2=format!("{y:.1}") class="grid"/>
                    <text x="-6" y=format!("{:.1}", y + 4.0) class="tick" text-anchor="end">{label}</text>
                }
            })}
            <line x1="0" y1=H.to_string() x2=W.to_string() y2=H.to_string() class="axis"/>
            <line x1="0" y1="0" x2="0" y2=H.to_string() class="axis"/>
            <text x="-6" y="4" class="tick" text-anchor="end" data-testid="plot-top">{duration_label(geometry.top_ms)}</text>
            <text x="-6" y=H.to_string() class="tick" text-anchor="end">"0"</text>
            <text x="0" y=(H + 18.0).to_string() class="tick">{format!("-{hours} h")}</text>
            <text x=W.to_string() y=(H + 18.0).to_string() class="tick" text-anchor="end">{t!(i18n, dash.now)}</text>
            <polyline points=geometry.p95.clone() class="line p95"/>
            <polyline points=geometry.p50.clone() class="line p50"/>
            {geometry.points.iter().zip(dashboard.latency.iter().filter(|b| b.runs > 0)).map(|((x, y50, y95), b)| {
                let hover = td_string!(locale, dash.hover, p50 = duration_label(b.p50_ms), p95 = duration_label(b.p95_ms), runs = b.runs).to_string();
                view! {
                    <circle cx=format!("{x:.1}") cy=format!("{y95:.1}") r="4" class="dot p95"><title>{hover.clone()}</title></circle>
                    <circle cx=format!("{x:.1}") cy=format!("{y50:.1}") r="4" class="dot p50"><title>{hover}</title></circle>
                }
            }).collect_view()}
        </svg>
        <p class="legend"><span class="key p50"></span>" p50 " <span class="key p95"></span>" p95"</p>
    }
}

#[component]
fn OverviewCard(overview: SystemOverview) -> impl IntoView {
    let i18n = use_i18n();
    let backlog = overview.history_backlog;
    view! {
        <section class="card" data-testid="overview">
            <h2>{t!(i18n, dash.installation)}</h2>
            {(backlog > 0).then(|| view! {
                <p class="notice info" role="status" data-testid="history-backlog">
                    {t!(i18n, dash.history_backlog, rows = backlog)}
                </p>
            })}
            <dl class="facts">
                <dt>{t!(i18n, dash.version)}</dt>
                <dd>{overview.version}</dd>
                <dt>{t!(i18n, dash.database)}</dt>
                <dd>{overview.database}</dd>
                <dt>{t!(i18n, nav.administrators)}</dt>
                <dd>{overview.admin_count}</dd>
                <dt>{t!(i18n, dash.sessions)}</dt>
                <dd>{overview.active_sessions}</dd>
                <dt>{t!(i18n, dash.sandbox_sessions)}</dt>
                <dd><a href="/admin/sessions" data-testid="sandbox-sessions">{overview.sandbox_sessions}</a></dd>
                <dt>{t!(i18n, dash.running_since)}</dt>
                <dd><When stamp=overview.started_at/> " (" {format_duration(overview.uptime_secs)} ")"</dd>
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
