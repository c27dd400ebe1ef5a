use leptos::prelude::*;
use leptos_meta::{Meta, Title};
use leptos_router::hooks::use_params_map;

use crate::{
    app::components::error_view::ErrorView,
    model::environment::{
        BuildInfo, BuildStatus, EnvironmentFlash, EnvironmentForm, EnvironmentInfo,
        EnvironmentPage, LockedPackage, Verification,
    },
    server_fns::environments::{get_environment, list_environments},
};

const LOADING: &str = " Loading…";

/// Package environments: the list with status, packages and use; a form to create one.
/// Plain forms: the page works with JavaScript off.
#[component]
pub fn EnvironmentsPage() -> impl IntoView {
    let list = Resource::new(|| (), |_| list_environments());
    view! {
        <Title text="Environments"/>
        <h1>"Environments"</h1>
        <p class="muted intro">
            "An environment is a set of Python packages (pip requirements) and npm packages, built once into a \
             read-only folder and mounted into every sandbox of the providers that name it (local and docker). \
             Builds take wheels only, unless an environment allows source distributions. A failed build never \
             replaces the build in use."
        </p>
        <Transition fallback=|| view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>{LOADING}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || list.get().map(|r| r.map(|(list, flash)| view! { <EnvironmentList list flash/> }))}
            </ErrorBoundary>
        </Transition>
    }
}

fn status_badge(status: &'static str) -> impl IntoView {
    let class = match status {
        "ready" => "badge success",
        "failed" => "badge failure",
        _ => "badge",
    };
    view! { <span class=class data-testid="env-status">{status}</span> }
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
    let building = list.iter().any(|e| e.status() == "building");
    let (form, errors) = match &flash {
        Some(EnvironmentFlash::Refused {
            form: Some(form),
            errors,
            ..
        }) if form.version.is_none() => (form.clone(), errors.clone()),
        _ => (EnvironmentForm::default(), Default::default()),
    };
    view! {
        {building.then(|| view! { <Meta http_equiv="refresh" content="3"/> })}
        {notice(flash.as_ref())}
        <section class="card">
            <h2>"Environments"</h2>
            {if list.is_empty() {
                view! { <p class="muted" data-testid="no-environments">"No environments yet."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                    <table class="table" data-testid="environments">
                        <thead><tr>
                            <th>"Name"</th><th>"Status"</th><th>"Packages"</th><th>"Size"</th><th>"Used by"</th>
                        </tr></thead>
                        <tbody>
                            {list.into_iter().map(|env| {
                                let href = format!("/admin/environments/{}", env.name);
                                let packages = requested(env.ready.as_ref(), &env);
                                view! {
                                    <tr data-testid=format!("env-{}", env.name)>
                                        <td>
                                            <a href=href>{env.name.clone()}</a>
                                            {env.is_default.then(|| view! { " " <span class="badge">"default"</span> })}
                                        </td>
                                        <td>{status_badge(env.status())}</td>
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
            <h2>"Create an environment"</h2>
            <SpecForm form errors editing=false/>
        </section>
    }
}

/// The create/edit form: name, requirements, npm packages, the sdist switch.
#[component]
fn SpecForm(
    form: EnvironmentForm,
    errors: std::collections::BTreeMap<String, String>,
    editing: bool,
) -> impl IntoView {
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
    let (name_error, python_error, npm_error) = (
        error("name"),
        error("python_requirements"),
        error("npm_packages"),
    );
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
                        <label for="env-name">"Name " <span class="required" aria-hidden="true">"*"</span></label>
                        <input id="env-name" name="name" required maxlength="40" value=form.name.clone()
                            placeholder="data-science" autocomplete="off" aria-describedby="env-name-help"/>
                        <p class="help" id="env-name-help">"Lowercase letters, digits, - and _. Providers name it in their Environment field."</p>
                        {name_error}
                    </div>
                }.into_any()
            }}
            <div class="field" class:has-error=python_bad>
                <label for="env-python">"Python requirements"</label>
                <textarea id="env-python" name="python_requirements" rows="6" class="mono"
                    placeholder="numpy\npandas<3\nrequests==2.32.3" aria-describedby="env-python-help">
                    {form.python_requirements.clone()}
                </textarea>
                <p class="help" id="env-python-help">"One requirement per line, pip syntax. No options or URLs: the package index is a console setting."</p>
                {python_error}
            </div>
            <div class="field" class:has-error=npm_bad>
                <label for="env-npm">"npm packages"</label>
                <textarea id="env-npm" name="npm_packages" rows="3" class="mono"
                    placeholder="axios\nlodash@^4" aria-describedby="env-npm-help">
                    {form.npm_packages.clone()}
                </textarea>
                <p class="help" id="env-npm-help">"name or name@version, one per line. Install scripts never run."</p>
                {npm_error}
            </div>
            <label class="check">
                <input type="checkbox" name="allow_sdists" value="on" checked=form.allow_sdists data-testid="allow-sdists"/>
                " Allow source distributions "
                <span class="muted">"(building a package from source runs its own code on this host: only for packages you trust)"</span>
            </label>
            <div class="actions">
                <button type="submit" class="button" data-testid="save-environment">
                    {if editing { "Save and build" } else { "Create and build" }}
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
    view! {
        <Title text="Environment"/>
        <p><a href="/admin/environments">"← Environments"</a></p>
        <Transition fallback=|| view! { <p class="loading"><span class="spinner" aria-hidden="true"></span>{LOADING}</p> }>
            <ErrorBoundary fallback=|errors| view! { <ErrorView errors/> }>
                {move || page.get().map(|r| r.map(|page| view! { <EnvironmentView page/> }))}
            </ErrorBoundary>
        </Transition>
    }
}

fn button(
    action: &'static str,
    name: &str,
    label: &'static str,
    class: &'static str,
) -> impl IntoView {
    let testid = action.replace('_', "-");
    view! {
        <form method="post" action=format!("/rpc/{action}") class="inline">
            <input type="hidden" name="name" value=name.to_owned()/>
            <button type="submit" class=class data-testid=testid>{label}</button>
        </form>
    }
}

#[component]
fn EnvironmentView(page: EnvironmentPage) -> impl IntoView {
    let EnvironmentPage {
        environment: env,
        log,
        flash,
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
                version: Some(env.version),
            },
            Default::default(),
        ),
    };
    let name = env.name.clone();
    view! {
        {building.then(|| view! { <Meta http_equiv="refresh" content="2"/> })}
        <h1>{env.name.clone()} " " {status_badge(env.status())}
            {env.is_default.then(|| view! { " " <span class="badge">"default"</span> })}
        </h1>
        {notice(flash.as_ref())}
        <section class="card">
            <dl class="facts">
                <dt>"Version"</dt><dd>{env.version} " — by " {env.updated_by.clone()} " at " {env.updated_at.clone()} " UTC"</dd>
                <dt>"Used by"</dt><dd data-testid="env-used-by">{if env.used_by.is_empty() { "no provider".to_owned() } else { env.used_by.join(", ") }}</dd>
                <dt>"In use"</dt><dd>{env.ready.as_ref().map_or("no ready build yet: runs use the bare interpreter".to_owned(), |b| format!("build {} ({}), {}", b.id, b.spec_hash, mib(b.size_bytes)))}</dd>
            </dl>
            <div class="actions">
                {button("build_environment", &name, "Build again", "button")}
                {env.ready.is_some().then(|| button("test_environment", &name, "Test", "button ghost"))}
                {(!env.is_default && env.ready.is_some()).then(|| button("make_default_environment", &name, "Make default", "button ghost"))}
                {button("delete_environment", &name, "Delete", "button ghost danger")}
            </div>
        </section>
        {log.map(|log| view! { <BuildView log/> })}
        {env.ready.as_ref().map(|ready| view! {
            <section class="card">
                <h2>"Verification"</h2>
                <VerificationTable results=ready.verification.clone()/>
                <h2>"Lock " <span class="muted">{format!("({} packages)", ready.lock.len())}</span></h2>
                <LockTable lock=ready.lock.clone()/>
            </section>
        })}
        <section class="card">
            <h2>"Spec"</h2>
            <SpecForm form errors editing=true/>
        </section>
    }
}

#[component]
fn BuildView(log: crate::model::environment::BuildLog) -> impl IntoView {
    let build = log.build;
    let title = match build.status {
        BuildStatus::Building => format!("Build {} — {}", build.id, build.stage),
        BuildStatus::Ready => format!("Build {} — ready", build.id),
        BuildStatus::Failed => format!("Build {} — failed", build.id),
    };
    let failed = (build.status == BuildStatus::Failed).then(|| build.stage.clone());
    view! {
        <section class="card" data-testid="build">
            <h2>{title}</h2>
            <p class="muted">"Started " {build.started_at.clone()} " UTC by " {build.started_by.clone()}
                {build.finished_at.clone().map(|at| format!(", finished {at} UTC"))}</p>
            {(build.status == BuildStatus::Building).then(|| view! {
                <p class="loading" role="status"><span class="spinner" aria-hidden="true"></span>" Building… this page refreshes until it is done."</p>
            })}
            {failed.map(|why| view! { <p class="notice error" role="alert" data-testid="build-error">{why}</p> })}
            <details open=build.status != BuildStatus::Ready>
                <summary>"Log"</summary>
                <pre class="output mono" data-testid="build-log">{log.log}</pre>
            </details>
        </section>
    }
}

#[component]
fn VerificationTable(results: Vec<Verification>) -> impl IntoView {
    if results.is_empty() {
        return view! { <p class="muted">"Not verified yet."</p> }.into_any();
    }
    view! {
        <div class="table-wrap">
        <table class="table" data-testid="verification">
            <thead><tr><th>"Provider"</th><th>"Result"</th><th>"Import time"</th><th>"Checked (UTC)"</th></tr></thead>
            <tbody>
                {results.into_iter().map(|r| view! {
                    <tr>
                        <td>{r.provider}</td>
                        <td>{if r.ok {
                            view! { <span class="badge success">"usable"</span> }.into_any()
                        } else {
                            view! { <span class="badge failure">"unusable"</span> " " <span class="mono">{r.error.unwrap_or_default()}</span> }.into_any()
                        }}</td>
                        <td>{r.import_ms.map_or("—".into(), |ms| format!("{ms} ms"))}</td>
                        <td>{r.checked_at}</td>
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
    view! {
        <div class="table-wrap">
        <table class="table" data-testid="lock">
            <thead><tr><th>"Package"</th><th>"Version"</th><th>"From"</th></tr></thead>
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
        <p class="muted">"* asked for by name; the rest are dependencies."</p>
    }
}
