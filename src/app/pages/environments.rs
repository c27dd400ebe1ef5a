use leptos::prelude::*;
use leptos_meta::{Meta, Title};
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    app::{
        components::{confirm::Confirm, error_view::ErrorView},
        format::{textarea_html, When},
    },
    i18n::{t, td_string, use_i18n, Locale},
    model::environment::{
        BuildInfo, BuildStatus, EnvironmentFlash, EnvironmentForm, EnvironmentInfo,
        EnvironmentPage, LockedPackage, Verification,
    },
    server_fns::environments::{get_environment, list_environments},
};

/// Package environments: the list with status, packages and use; a form to create one.
/// Plain forms: the page works with JavaScript off.
#[component]
pub fn EnvironmentsPage() -> impl IntoView {
    let list = Resource::new(|| (), |_| list_environments());
    let i18n = use_i18n();
    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), nav.environments).to_string()/>
        <h1>{t!(i18n, nav.environments)}</h1>
        <p class="muted intro">{t!(i18n, env.intro)}</p>
        <Transition fallback=move || view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.loading)}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || list.get().map(|r| r.map(|(list, flash)| view! { <EnvironmentList list flash/> }))}
            </ErrorBoundary>
        </Transition>
    }
}

fn status_badge(locale: Locale, status: &'static str) -> impl IntoView {
    let (class, label) = match status {
        "ready" => (
            "badge success",
            td_string!(locale, env.status.ready).to_string(),
        ),
        "failed" => (
            "badge failure",
            td_string!(locale, env.status.failed).to_string(),
        ),
        "building" => ("badge", td_string!(locale, env.status.building).to_string()),
        "new" => (
            "badge",
            td_string!(locale, env.status.not_built).to_string(),
        ),
        other => ("badge", other.to_owned()),
    };
    view! { <span class=class data-testid="env-status" data-status=status>{label}</span> }
}

fn mib(bytes: Option<i64>) -> String {
    bytes.map_or("—".into(), |b| {
        format!("{:.1} MiB", b as f64 / 1024.0 / 1024.0)
    })
}

/// The packages asked for, with the versions the build in use installed.
fn requested(build: Option<&BuildInfo>, env: &EnvironmentInfo) -> String {
    match build {
        Some(build) => build
            .lock
            .iter()
            .filter(|p| p.requested)
            .map(|p| format!("{} {}", p.name, p.version))
            .collect::<Vec<_>>()
            .join(", "),
        None => env
            .python_requirements
            .lines()
            .chain(env.npm_packages.lines())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn notice(flash: Option<&EnvironmentFlash>) -> Option<impl IntoView> {
    flash.map(|flash| match flash {
        EnvironmentFlash::Done { message } => view! {
            <p class="notice info" role="status" data-testid="env-notice">{message.clone()}</p>
        }
        .into_any(),
        EnvironmentFlash::Refused { message, .. } => view! {
            <p class="notice error" role="alert" data-testid="env-notice">{message.clone()}</p>
        }
        .into_any(),
    })
}

#[component]
fn EnvironmentList(list: Vec<EnvironmentInfo>, flash: Option<EnvironmentFlash>) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let building = list.iter().any(|e| e.status() == "building");
    let names: Vec<String> = list.iter().map(|e| e.name.clone()).collect();
    // A new environment adds to the default one unless the admin says otherwise.
    let default_base = list
        .iter()
        .find(|e| e.is_default)
        .map(|e| e.name.clone())
        .unwrap_or_default();
    let (form, errors) = match &flash {
        Some(EnvironmentFlash::Refused {
            form: Some(form),
            errors,
            ..
        }) if form.version.is_none() => (form.clone(), errors.clone()),
        _ => (
            EnvironmentForm {
                base: default_base,
                preload: crate::model::environment::DEFAULT_PRELOAD.into(),
                ..EnvironmentForm::default()
            },
            Default::default(),
        ),
    };
    view! {
        {building.then(|| view! { <Meta http_equiv="refresh" content="3"/> })}
        {notice(flash.as_ref())}
        <section class="card">
            <h2>{t!(i18n, nav.environments)}</h2>
            {if list.is_empty() {
                view! { <p class="muted" data-testid="no-environments">{t!(i18n, env.none)}</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                    <table class="table" data-testid="environments">
                        <thead><tr>
                            <th>{t!(i18n, common.name)}</th><th>{t!(i18n, common.status)}</th><th>{t!(i18n, env.packages)}</th><th>{t!(i18n, env.size)}</th><th>{t!(i18n, env.used_by)}</th>
                        </tr></thead>
                        <tbody>
                            {list.into_iter().map(|env| {
                                let href = format!("/admin/environments/{}", env.name);
                                let packages = requested(env.ready.as_ref(), &env);
                                view! {
                                    <tr data-testid=format!("env-{}", env.name)>
                                        <td>
                                            <a href=href>{env.name.clone()}</a>
                                            {env.is_default.then(|| view! { " " <span class="badge">{t!(i18n, env.default)}</span> })}
                                        </td>
                                        <td>{status_badge(locale, env.status())}</td>
                                        <td class="mono">{packages}</td>
                                        <td>{mib(env.ready.as_ref().and_then(|b| b.size_bytes))}</td>
                                        <td>{if env.used_by.is_empty() { "—".to_owned() } else { env.used_by.join(", ") }}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                    </div>
                }.into_any()
            }}
        </section>
        <section class="card">
            <h2>{t!(i18n, env.create_title)}</h2>
            <SpecForm form errors editing=false bases=names/>
        </section>
    }
}

/// The create/edit form: name, requirements, npm packages, the sdist switch.
#[component]
fn SpecForm(
    form: EnvironmentForm,
    errors: std::collections::BTreeMap<String, String>,
    editing: bool,
    /// Environments it may be based on (itself left out here).
    bases: Vec<String>,
) -> impl IntoView {
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let error = |key: &str| {
        errors.get(key).cloned().map(|message| {
            let id = format!("{key}-error");
            view! { <p class="field-error" id=id>{message}</p> }
        })
    };
    let (name_bad, python_bad, npm_bad) = (
        errors.contains_key("name"),
        errors.contains_key("python_requirements"),
        errors.contains_key("npm_packages"),
    );
    let (name_error, python_error, npm_error, base_error) = (
        error("name"),
        error("python_requirements"),
        error("npm_packages"),
        error("base"),
    );
    let base_bad = errors.contains_key("base");
    let (preload_bad, preload_error) = (errors.contains_key("preload"), error("preload"));
    let own = form.name.clone();
    let chosen = form.base.clone();
    view! {
        <form method="post" action="/rpc/save_environment" data-testid="environment-form">
            {if editing {
                view! {
                    <input type="hidden" name="name" value=form.name.clone()/>
                    <input type="hidden" name="version" value=form.version.map(|v| v.to_string()).unwrap_or_default()/>
                }.into_any()
            } else {
                view! {
                    <div class="field" class:has-error=name_bad>
                        <label for="env-name">{t!(i18n, common.name)} " " <span class="required" aria-hidden="true">"*"</span></label>
                        <input id="env-name" name="name" required maxlength="40" value=form.name.clone()
                            placeholder="data-science" autocomplete="off" aria-describedby="env-name-help"/>
                        <p class="help" id="env-name-help">{t!(i18n, env.name_help)}</p>
                        {name_error}
                    </div>
                }.into_any()
            }}
            <div class="field" class:has-error=base_bad>
                <label for="env-base">{t!(i18n, env.base)}</label>
                <select id="env-base" name="base" aria-describedby="env-base-help" data-testid="env-base">
                    <option value="" selected=chosen.is_empty()>{t!(i18n, env.base_none)}</option>
                    {bases.into_iter().filter(|b| *b != own).map(|b| {
                        let selected = b == chosen;
                        view! { <option value=b.clone() selected=selected>{b.clone()}</option> }
                    }).collect_view()}
                </select>
                <p class="help" id="env-base-help">{t!(i18n, env.base_help)}</p>
                {base_error}
            </div>
            <div class="field" class:has-error=python_bad>
                <label for="env-python">{t!(i18n, env.python)}</label>
                <textarea id="env-python" name="python_requirements" rows="6" class="mono"
                    placeholder="numpy\npandas<3\nrequests==2.32.3" aria-describedby="env-python-help"
                    inner_html=textarea_html(&form.python_requirements)></textarea>
                <p class="help" id="env-python-help">{t!(i18n, env.python_help)}</p>
                {python_error}
            </div>
            <div class="field" class:has-error=npm_bad>
                <label for="env-npm">{t!(i18n, env.npm)}</label>
                <textarea id="env-npm" name="npm_packages" rows="3" class="mono"
                    placeholder="axios\nlodash@^4" aria-describedby="env-npm-help"
                    inner_html=textarea_html(&form.npm_packages)></textarea>
                <p class="help" id="env-npm-help">{t!(i18n, env.npm_help)}</p>
                {npm_error}
            </div>
            <div class="field" class:has-error=preload_bad>
                <label for="env-preload">{t!(i18n, env.preload)}</label>
                <input id="env-preload" name="preload" class="mono" maxlength="4000" autocomplete="off"
                    value=form.preload.clone() aria-describedby="env-preload-help" data-testid="env-preload"/>
                <p class="help" id="env-preload-help">{t!(i18n, env.preload_help)}</p>
                {preload_error}
            </div>
            <label class="check">
                <input type="checkbox" name="allow_sdists" value="on" checked=form.allow_sdists data-testid="allow-sdists"/>
                " " {t!(i18n, env.sdists)} " "
                <span class="muted">{t!(i18n, env.sdists_help)}</span>
            </label>
            <div class="actions">
                <button type="submit" class="button" data-testid="save-environment">
                    {if editing { td_string!(locale, env.save_build).to_string() } else { td_string!(locale, env.create_build).to_string() }}
                </button>
            </div>
        </form>
    }
}

/// One environment: its spec (editable), the newest build with its live log, the lock of the
/// build in use, and how each provider fared importing it.
#[component]
pub fn EnvironmentDetailPage() -> impl IntoView {
    let params = use_params_map();
    let name = move || params.with(|p| p.get("name").unwrap_or_default());
    let page = Resource::new(name, get_environment);
    let query = use_query_map();
    let i18n = use_i18n();
    view! {
        <Title text=td_string!(i18n.get_locale_untracked(), env.title).to_string()/>
        <p><a href="/admin/environments">"← " {t!(i18n, nav.environments)}</a></p>
        <Transition fallback=move || view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, common.loading)}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || {
                    let deleting = query.with(|q| q.get("delete")).is_some();
                    page.get().map(|r| r.map(|page| view! { <EnvironmentView page deleting/> }))
                }}
            </ErrorBoundary>
        </Transition>
    }
}

fn button(action: &'static str, name: &str, label: String, class: &'static str) -> impl IntoView {
    let testid = action.replace('_', "-");
    view! {
        <form method="post" action=format!("/rpc/{action}") class="inline">
            <input type="hidden" name="name" value=name.to_owned()/>
            <button type="submit" class=class data-testid=testid>{label}</button>
        </form>
    }
}

#[component]
fn EnvironmentView(page: EnvironmentPage, deleting: bool) -> impl IntoView {
    let EnvironmentPage {
        environment: env,
        log,
        flash,
        names,
    } = page;
    let building = env.status() == "building";
    let (form, errors) = match &flash {
        Some(EnvironmentFlash::Refused {
            form: Some(form),
            errors,
            ..
        }) => (form.clone(), errors.clone()),
        _ => (
            EnvironmentForm {
                name: env.name.clone(),
                python_requirements: env.python_requirements.clone(),
                npm_packages: env.npm_packages.clone(),
                allow_sdists: env.allow_sdists,
                base: env.base.clone(),
                preload: env.preload.clone(),
                version: Some(env.version),
            },
            Default::default(),
        ),
    };
    let name = env.name.clone();
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    view! {
        {building.then(|| view! { <Meta http_equiv="refresh" content="2"/> })}
        <h1>{env.name.clone()} " " {status_badge(locale, env.status())}
            {env.is_default.then(|| view! { " " <span class="badge">{t!(i18n, env.default)}</span> })}
        </h1>
        {notice(flash.as_ref())}
        <section class="card">
            <dl class="facts">
                <dt>{t!(i18n, dash.version)}</dt><dd>{env.version} " — " {env.updated_by.clone()} ", " <When stamp=env.updated_at.clone()/></dd>
                <dt>{t!(i18n, env.base)}</dt><dd data-testid="env-based-on">{if env.base.is_empty() { td_string!(locale, env.base_none).to_string() } else { env.base.clone() }}</dd>
                <dt>{t!(i18n, env.used_by)}</dt><dd data-testid="env-used-by">{if env.used_by.is_empty() { td_string!(locale, env.no_provider).to_string() } else { env.used_by.join(", ") }}</dd>
                <dt>{t!(i18n, env.in_use)}</dt><dd>{env.ready.as_ref().map_or(td_string!(locale, env.no_build).to_string(), |b| td_string!(locale, env.build_line, id = b.id, hash = b.spec_hash.clone(), size = mib(b.size_bytes)).to_string())}</dd>
            </dl>
            <div class="actions">
                {button("build_environment", &name, td_string!(locale, env.build_again).to_string(), "button")}
                {env.ready.is_some().then(|| button("test_environment", &name, td_string!(locale, env.test).to_string(), "button ghost"))}
                {(!env.is_default && env.ready.is_some()).then(|| button("make_default_environment", &name, td_string!(locale, env.make_default).to_string(), "button ghost"))}
                {if deleting {
                    view! {
                        <Confirm action="delete_environment"
                            question=td_string!(locale, env.delete_q, name = name.clone()).to_string()
                            fields=vec![("name", name.clone())]
                            submit=td_string!(locale, env.delete).to_string()
                            cancel=format!("/admin/environments/{name}") testid="confirm-delete"/>
                    }.into_any()
                } else {
                    view! {
                        <a href=format!("/admin/environments/{name}?delete=1") class="button ghost danger"
                            data-testid="delete-environment">{t!(i18n, env.delete)} "…"</a>
                    }.into_any()
                }}
            </div>
        </section>
        {log.map(|log| view! { <BuildView log/> })}
        {env.ready.as_ref().map(|ready| view! {
            <section class="card">
                <h2>{t!(i18n, env.verification)}</h2>
                <VerificationTable results=ready.verification.clone()/>
                <h2>{t!(i18n, env.lock)} " " <span class="muted">{td_string!(locale, env.lock_count, count = ready.lock.len()).to_string()}</span></h2>
                <LockTable lock=ready.lock.clone()/>
            </section>
        })}
        <section class="card">
            <h2>{t!(i18n, env.spec)}</h2>
            <SpecForm form errors editing=true bases=names/>
        </section>
    }
}

#[component]
fn BuildView(log: crate::model::environment::BuildLog) -> impl IntoView {
    let build = log.build;
    let i18n = use_i18n();
    let locale = i18n.get_locale_untracked();
    let stage = match build.status {
        BuildStatus::Building => build.stage.clone(),
        BuildStatus::Ready => td_string!(locale, env.status.ready).to_string(),
        BuildStatus::Failed => td_string!(locale, env.status.failed).to_string(),
    };
    let title = td_string!(locale, env.build_title, id = build.id, stage).to_string();
    let failed = (build.status == BuildStatus::Failed).then(|| build.stage.clone());
    view! {
        <section class="card" data-testid="build">
            <h2>{title}</h2>
            <p class="muted">{t!(i18n, env.started)} " " <When stamp=build.started_at.clone()/> " · " {build.started_by.clone()}
                {build.finished_at.clone().map(|at| view! { " · " {t!(i18n, env.finished)} " " <When stamp=at/> })}</p>
            {(build.status == BuildStatus::Building).then(|| view! {
                <p class="loading" role="status"><span class="spinner" aria-hidden="true"></span>" " {t!(i18n, env.building_note)}</p>
            })}
            {failed.map(|why| view! { <p class="notice error" role="alert" data-testid="build-error">{why}</p> })}
            <details open=build.status != BuildStatus::Ready>
                <summary>{t!(i18n, env.log)}</summary>
                <pre class="output mono" data-testid="build-log">{log.log}</pre>
            </details>
        </section>
    }
}

#[component]
fn VerificationTable(results: Vec<Verification>) -> impl IntoView {
    let i18n = use_i18n();
    if results.is_empty() {
        return view! { <p class="muted">{t!(i18n, env.not_verified)}</p> }.into_any();
    }
    view! {
        <div class="table-wrap">
        <table class="table" data-testid="verification">
            <thead><tr><th>{t!(i18n, common.provider)}</th><th>{t!(i18n, env.result)}</th><th>{t!(i18n, env.import_time)}</th><th>{t!(i18n, env.checked)}</th></tr></thead>
            <tbody>
                {results.into_iter().map(|r| view! {
                    <tr>
                        <td>{r.provider}</td>
                        <td>{if r.ok {
                            view! { <span class="badge success">{t!(i18n, env.usable)}</span> }.into_any()
                        } else {
                            view! { <span class="badge failure">{t!(i18n, env.unusable)}</span> " " <span class="mono">{r.error.unwrap_or_default()}</span> }.into_any()
                        }}</td>
                        <td>{r.import_ms.map_or("—".into(), |ms| format!("{ms} ms"))}</td>
                        <td><When stamp=r.checked_at/></td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        </div>
    }
    .into_any()
}

#[component]
fn LockTable(lock: Vec<LockedPackage>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="table-wrap">
        <table class="table" data-testid="lock">
            <thead><tr><th>{t!(i18n, env.package)}</th><th>{t!(i18n, dash.version)}</th><th>{t!(i18n, env.from)}</th></tr></thead>
            <tbody>
                {lock.into_iter().map(|p| view! {
                    <tr>
                        <td class="mono">{p.name}{p.requested.then_some(" *")}</td>
                        <td class="mono">{p.version}</td>
                        <td>{p.ecosystem}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        </div>
        <p class="muted">{t!(i18n, env.asked_note)}</p>
    }
}
