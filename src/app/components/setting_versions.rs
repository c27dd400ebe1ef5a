use leptos::prelude::*;

use crate::{
    app::{components::confirm::Confirm, format::When},
    i18n::{t, td_string, use_i18n},
    model::settings::SettingVersion,
    server_fns::sandbox::get_setting_versions,
};

/// A provider's saved versions, newest first: who saved each and when, what changed from the
/// one before (secrets only as "changed"), and Restore for every one that is not current.
/// `current` is the version stored now (sent with a restore, so a restore loses to a save
/// made in between). `restore_again` offers "Restore anyway" for a version whose restore
/// the health check refused.
#[component]
pub fn SettingVersions(
    kind: String,
    current: Option<i64>,
    restore_again: Option<i64>,
    /// The version whose Restore asks to be confirmed (`?restore=<id>`).
    confirm: Option<i64>,
) -> impl IntoView {
    let i18n = use_i18n();
    let versions = Resource::new(
        {
            let kind = kind.clone();
            move || kind.clone()
        },
        get_setting_versions,
    );
    view! {
        <section class="card versions" data-testid="versions" aria-labelledby="versions-title">
            <h2 id="versions-title">{t!(i18n, versions.title)}</h2>
            <p class="muted">{t!(i18n, versions.intro)}</p>
            <Transition fallback=move || view! { <p class="loading">{t!(i18n, common.loading)}</p> }>
                {move || {
                    let kind = kind.clone();
                    versions.get().map(|list| match list {
                        Err(e) => view! { <p class="notice error">{e.to_string()}</p> }.into_any(),
                        Ok(list) if list.is_empty() => view! { <p class="muted">{t!(i18n, versions.empty)}</p> }.into_any(),
                        Ok(list) => view! {
                            <div class="table-wrap">
                                <table class="table">
                                    <thead><tr><th>"#"</th><th>{t!(i18n, versions.saved_at)}</th><th>{t!(i18n, versions.by)}</th><th>{t!(i18n, versions.what)}</th><th>{t!(i18n, versions.changes)}</th><th></th></tr></thead>
                                    <tbody>
                                        {list.into_iter().map(|v| view! { <VersionRow version=v kind=kind.clone() current restore_again confirm/> }).collect_view()}
                                    </tbody>
                                </table>
                            </div>
                        }.into_any(),
                    })
                }}
            </Transition>
        </section>
    }
}

#[component]
fn VersionRow(
    version: SettingVersion,
    kind: String,
    current: Option<i64>,
    restore_again: Option<i64>,
    confirm: Option<i64>,
) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let what = match (
        version.action.as_str(),
        version.version,
        version.restored_from,
    ) {
        ("restore", Some(version), Some(from)) => {
            td_string!(locale, versions.restored_from, version, from).to_string()
        }
        ("kept", _, _) => td_string!(locale, versions.kept).to_string(),
        (_, Some(version), _) => td_string!(locale, versions.version, version).to_string(),
        _ => version.action.clone(),
    };
    let none = td_string!(locale, versions.none).to_string();
    let changes = if version.first {
        view! { <span class="muted">{t!(i18n, versions.first)}</span> }.into_any()
    } else if version.changes.is_empty() {
        view! { <span class="muted">{t!(i18n, versions.no_change)}</span> }.into_any()
    } else {
        view! {
            <ul class="changes">
                {version.changes.into_iter().map(|c| {
                    let text = if c.secret {
                        td_string!(locale, versions.changed, label = c.label).to_string()
                    } else {
                        format!(
                            "{}: {} → {}",
                            c.label,
                            c.before.unwrap_or_else(|| none.clone()),
                            c.after.unwrap_or_else(|| none.clone())
                        )
                    };
                    view! { <li>{text}</li> }
                }).collect_view()}
            </ul>
        }
        .into_any()
    };
    let id = version.id;
    let again = restore_again == Some(id);
    view! {
        <tr data-testid="version" data-id=id.to_string() class:current=version.current>
            <td>{format!("#{id}")}</td>
            <td><When stamp=version.saved_at.clone()/></td>
            <td>{version.saved_by.clone().unwrap_or_default()}</td>
            <td>{what} {version.current.then(|| view! { " " <span class="badge success">{t!(i18n, versions.current)}</span> })}</td>
            <td>{changes}</td>
            <td>
                {(!version.current).then(|| {
                    let expected = current.map(|v| v.to_string()).unwrap_or_default();
                    let back = crate::server_fns::sandbox::history_url(&kind);
                    if again {
                        // The health check refused this restore: "Restore anyway" is the
                        // explicit second step already.
                        view! {
                            <form method="post" action="/rpc/restore_sandbox_settings" class="inline">
                                <input type="hidden" name="kind" value=kind.clone()/>
                                <input type="hidden" name="id" value=id.to_string()/>
                                <input type="hidden" name="expected_version" value=expected/>
                                <button type="submit" class="button danger" name="anyway" value="activate" data-testid="restore-anyway">{t!(i18n, versions.restore_anyway)}</button>
                            </form>
                        }.into_any()
                    } else if confirm == Some(id) {
                        view! {
                            <Confirm action="restore_sandbox_settings"
                                question=td_string!(locale, versions.restore_q, id).to_string()
                                fields=vec![("kind", kind.clone()), ("id", id.to_string()), ("expected_version", expected)]
                                submit=td_string!(locale, versions.restore).to_string()
                                cancel=back testid="confirm-restore"/>
                        }.into_any()
                    } else {
                        view! {
                            <a href=format!("{back}&restore={id}") class="button ghost" data-testid="restore">{t!(i18n, versions.restore)} "…"</a>
                        }.into_any()
                    }
                })}
            </td>
        </tr>
    }
}
