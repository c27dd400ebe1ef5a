//! `spawn_app()`: the application as `main` builds it, on a free port, with a fresh database.

use std::sync::Arc;

use reqwest::{cookie::CookieStore, redirect::Policy, Response, Url};
use sandbox_console::{
    sandbox::{providers, registry::Registry},
    server::{config::Config, startup::Application},
};
use sqlx::AnyPool;
use tempfile::TempDir;

pub const ADMIN: &str = "admin";
pub const PASSWORD: &str = "correct horse battery";

pub struct TestApp {
    pub address: String,
    /// `--metrics-listen`'s address, when the test asked for one.
    pub metrics_address: Option<String>,
    pub pool: AnyPool,
    pub data_dir: TempDir,
    pub client: reqwest::Client,
    jar: Arc<reqwest::cookie::Jar>,
}

/// The PostgreSQL server the suite's second pass runs against (`make unit` sets it to
/// `scripts/postgres.sh url`); unset, every app has its SQLite file in its data directory.
pub const POSTGRES_ENV: &str = "SANDBOX_CONSOLE_TEST_POSTGRES";

/// Whether this pass runs on PostgreSQL.
pub fn on_postgres() -> bool {
    std::env::var_os(POSTGRES_ENV).is_some_and(|url| !url.is_empty())
}

/// The key a PostgreSQL console must be given (replicas share it); any 32 bytes will do here.
pub const TEST_SECRET_KEY: &str = "c2FuZGJveC1jb25zb2xlIHRlc3Qgc2VjcmV0IGtleSE=";

/// The PostgreSQL schema of the app whose data directory is `data_dir`.
pub fn postgres_schema_for(data_dir: &std::path::Path) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    data_dir.hash(&mut hasher);
    format!("t_{:016x}", hasher.finish())
}

/// On the PostgreSQL pass, the URL of a schema of its own for the console whose data
/// directory is `data_dir` (created if missing; the same directory, after a restart, finds
/// the same schema): tests see only their own rows, as with a SQLite file each.
pub fn postgres_url_for(data_dir: &std::path::Path) -> Option<String> {
    let server = std::env::var(POSTGRES_ENV)
        .ok()
        .filter(|url| !url.is_empty())?;
    let schema = postgres_schema_for(data_dir);
    let admin = server.clone();
    let create = format!("create schema if not exists {schema}");
    // Called from synchronous code inside a test's runtime: a thread with its own runtime.
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                use sqlx::{Connection, Executor};
                let mut conn = sqlx::PgConnection::connect(&admin).await?;
                conn.execute(create.as_str()).await?;
                conn.close().await
            })
    })
    .join()
    .unwrap()
    .expect("the test schema is created on the PostgreSQL server");
    let separator = if server.contains('?') { '&' } else { '?' };
    Some(format!("{server}{separator}options[search_path]={schema}"))
}

/// A test configuration: port 0, the data dir given, the first admin `admin`/`PASSWORD`, and
/// the pass's database (a SQLite file in the data dir, or a PostgreSQL schema of its own).
pub fn test_config(data_dir: &TempDir) -> Config {
    let mut config = Config::with_data_dir(data_dir.path());
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.database_url = postgres_url_for(data_dir.path());
    if config.database_url.is_some() {
        config.secret_key = Some(TEST_SECRET_KEY.into());
    }
    config.admin_username = ADMIN.into();
    config.admin_password = Some(PASSWORD.into());
    config.secure_cookies = false;
    // Tests build the environments they need; none builds RAGFlow's default in the background.
    config.build_default_environment = false;
    // Run folders of its own, where a test counts them: not the machine's temporary folder.
    config.run_dir = Some(data_dir.path().join(RUNS));
    config
}

/// The folder under an app's data directory where its local sandboxes keep their host
/// folders while they run.
pub const RUNS: &str = "runs";

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

pub async fn spawn_app_with(customize: impl FnOnce(&mut Config)) -> TestApp {
    spawn_app_in(tempfile::tempdir().unwrap(), customize).await
}

pub async fn spawn_app_in(data_dir: TempDir, customize: impl FnOnce(&mut Config)) -> TestApp {
    spawn_app_full(data_dir, customize, providers::registry()).await
}

/// The application with the product's providers plus the test tree's `scripted` provider.
pub async fn spawn_app_with_scripted(customize: impl FnOnce(&mut Config)) -> TestApp {
    let registry = providers::registry().register(crate::scripted::kind());
    spawn_app_full(tempfile::tempdir().unwrap(), customize, registry).await
}

/// An application that a test stops itself (as SIGTERM would): send on the returned sender,
/// then await the handle for `run_until`'s end.
pub async fn spawn_app_stoppable(
    data_dir: TempDir,
    customize: impl FnOnce(&mut Config),
) -> (
    TestApp,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let mut config = test_config(&data_dir);
    customize(&mut config);
    let app = Application::build_with_registry(config, providers::registry())
        .await
        .expect("the application builds");
    let address = format!("http://127.0.0.1:{}", app.port());
    let pool = app.state().pool.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(app.run_until(async move {
        let _ = stopped.await;
    }));
    let jar = Arc::new(reqwest::cookie::Jar::default());
    let app = TestApp {
        address,
        metrics_address: None,
        pool,
        data_dir,
        client: client_with(jar.clone()),
        jar,
    };
    (app, stop, running)
}

async fn spawn_app_full(
    data_dir: TempDir,
    customize: impl FnOnce(&mut Config),
    registry: Registry,
) -> TestApp {
    let mut config = test_config(&data_dir);
    customize(&mut config);
    let app = Application::build_with_registry(config, registry)
        .await
        .expect("the application builds");
    let address = format!("http://127.0.0.1:{}", app.port());
    let metrics_address = app.metrics_addr().map(|a| format!("http://{a}"));
    let pool = app.state().pool.clone();
    tokio::spawn(app.run_until_stopped());
    let jar = Arc::new(reqwest::cookie::Jar::default());
    TestApp {
        address,
        metrics_address,
        pool,
        data_dir,
        client: client_with(jar.clone()),
        jar,
    }
}

/// A request that hangs fails the test instead of stalling the whole run.
const CLIENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

fn client_with(jar: Arc<reqwest::cookie::Jar>) -> reqwest::Client {
    client_waiting(jar, CLIENT_TIMEOUT)
}

fn client_waiting(jar: Arc<reqwest::cookie::Jar>, timeout: std::time::Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .cookie_provider(jar)
        .redirect(Policy::none())
        .build()
        .unwrap()
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    /// The body of a GET (a page's HTML), whatever its status.
    pub async fn text_of(&self, path: &str) -> String {
        self.get(path).await.text().await.unwrap()
    }

    pub async fn get(&self, path: &str) -> Response {
        self.client.get(self.url(path)).send().await.expect("GET")
    }

    /// A GET from a browser that prefers `language` (its `Accept-Language`).
    pub async fn get_in(&self, path: &str, language: &str) -> Response {
        self.client
            .get(self.url(path))
            .header("accept-language", language)
            .send()
            .await
            .expect("GET")
    }

    /// Posts the sign-in form as a browser does.
    pub async fn login_as(&self, username: &str, password: &str, next: &str) -> Response {
        self.client
            .post(self.url("/auth/login"))
            .header("accept", "text/html")
            .form(&[
                ("username", username),
                ("password", password),
                ("next", next),
            ])
            .send()
            .await
            .expect("POST /auth/login")
    }

    /// Posts the sign-in form as an API client that asks for JSON answers.
    pub async fn login_json(&self, username: &str, password: &str) -> Response {
        self.client
            .post(self.url("/auth/login"))
            .header("accept", "application/json")
            .form(&[("username", username), ("password", password)])
            .send()
            .await
            .expect("POST /auth/login")
    }

    pub async fn login(&self) -> Response {
        let response = self.login_as(ADMIN, PASSWORD, "/").await;
        assert_eq!(response.status().as_u16(), 303, "sign-in should succeed");
        response
    }

    pub async fn call_server_fn(&self, name: &str) -> Response {
        self.call(name, &[]).await
    }

    /// Calls a server function the way the hydrated page does: a urlencoded form, JSON back.
    pub async fn call(&self, name: &str, form: &[(&str, &str)]) -> Response {
        self.rpc(name, form, None).await
    }

    /// `call` from a browser that prefers `language` (its `Accept-Language`).
    pub async fn call_in(&self, name: &str, form: &[(&str, &str)], language: &str) -> Response {
        self.rpc(name, form, Some(language)).await
    }

    async fn rpc(&self, name: &str, form: &[(&str, &str)], language: Option<&str>) -> Response {
        let mut request = self
            .client
            .post(self.url(&format!("/rpc/{name}")))
            .header("accept", "application/json");
        if let Some(language) = language {
            request = request.header("accept-language", language);
        }
        request.form(form).send().await.expect("POST server fn")
    }

    /// `call`, expecting 200 and JSON.
    pub async fn call_ok(&self, name: &str, form: &[(&str, &str)]) -> serde_json::Value {
        let response = self.call(name, form).await;
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        assert_eq!(status, 200, "{name}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// The session cookie value the client holds now, if any.
    pub fn session_id(&self) -> Option<String> {
        let url: Url = self.address.parse().unwrap();
        let cookies = self.jar.cookies(&url)?;
        cookies
            .to_str()
            .ok()?
            .split("; ")
            .find_map(|c| c.strip_prefix("sandbox_console_session="))
            .map(str::to_owned)
    }

    /// GET `path` from a separate client that presents the given session id and nothing else.
    pub async fn get_with_session(&self, id: &str, path: &str) -> Response {
        let jar = Arc::new(reqwest::cookie::Jar::default());
        jar.add_cookie_str(
            &format!("sandbox_console_session={id}"),
            &self.address.parse().unwrap(),
        );
        client_with(jar)
            .get(self.url(path))
            .send()
            .await
            .expect("GET")
    }
}

pub fn location(response: &Response) -> String {
    response
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

impl TestApp {
    /// Creates an API key with `scopes` (comma-separated) through the console, as an admin.
    pub async fn api_key(&self, name: &str, scopes: &[&str]) -> String {
        let admin = TestApp::sibling(self);
        admin.login().await;
        let mut form = vec![("name", name)];
        form.extend(scopes.iter().map(|s| (*s, "on")));
        let created = admin.call_ok("create_api_key", &form).await;
        created["key"].as_str().unwrap().to_owned()
    }

    /// A client of the console at `address` (a process a test started) on `pool`.
    pub fn remote(address: &str, pool: AnyPool) -> TestApp {
        let jar = Arc::new(reqwest::cookie::Jar::default());
        TestApp {
            address: address.to_owned(),
            metrics_address: None,
            pool,
            data_dir: tempfile::tempdir().unwrap(),
            client: client_with(jar.clone()),
            jar,
        }
    }

    /// The same client and cookies, talking to the console at `address` (another replica).
    pub fn at(&self, address: &str) -> TestApp {
        TestApp {
            address: address.to_owned(),
            ..self.same_session()
        }
    }

    /// Another handle on the same client and cookies (the same signed-in session).
    pub fn same_session(&self) -> TestApp {
        TestApp {
            address: self.address.clone(),
            metrics_address: self.metrics_address.clone(),
            pool: self.pool.clone(),
            data_dir: tempfile::tempdir().unwrap(),
            client: self.client.clone(),
            jar: self.jar.clone(),
        }
    }

    /// [`Self::sibling`] whose requests may take up to `timeout` (runs that may queue longer
    /// than the usual minute).
    pub fn patient_sibling(&self, timeout: std::time::Duration) -> TestApp {
        let jar = Arc::new(reqwest::cookie::Jar::default());
        TestApp {
            address: self.address.clone(),
            metrics_address: self.metrics_address.clone(),
            pool: self.pool.clone(),
            data_dir: tempfile::tempdir().unwrap(),
            client: client_waiting(jar.clone(), timeout),
            jar,
        }
    }

    /// A second client on the same server, with its own cookies.
    pub fn sibling(&self) -> TestApp {
        self.patient_sibling(CLIENT_TIMEOUT)
    }

    /// POSTs `body` as JSON to `path` with `key` as a bearer token (none when empty).
    pub async fn post_json(&self, path: &str, key: &str, body: &serde_json::Value) -> Response {
        let mut request = self.client.post(self.url(path)).json(body);
        if !key.is_empty() {
            request = request.bearer_auth(key);
        }
        request.send().await.expect("POST")
    }

    pub async fn get_with_key(&self, path: &str, key: &str) -> Response {
        let mut request = self.client.get(self.url(path));
        if !key.is_empty() {
            request = request.bearer_auth(key);
        }
        request.send().await.expect("GET")
    }
}

/// One run in a fresh instance of `provider`; a failed clean-up fails the run too.
pub async fn run_once(
    provider: &dyn sandbox_console::sandbox::SandboxProvider,
    request: &sandbox_console::model::execution::ExecRequest,
) -> Result<sandbox_console::model::execution::ExecutionResult, sandbox_console::sandbox::Error> {
    let (result, destroyed) = sandbox_console::sandbox::run_once(provider, request).await;
    destroyed?;
    result
}

/// The time `offset_secs` from now (negative: in the past) as the database stores times:
/// fixed-width UTC text to the millisecond, computed here so test data reads the same on
/// every database.
pub fn utc_text(offset_secs: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    chrono::DateTime::from_timestamp(now.as_secs() as i64 + offset_secs, now.subsec_nanos())
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// The console's own binary.
pub const BIN: &str = env!("CARGO_BIN_EXE_sandbox-console");

/// The console's binary as a test runs it on `data_dir` (a command, a server): with
/// `--data-dir`, and on the PostgreSQL pass `--database-url` of the schema an app on that
/// data directory uses, with the pass's secret key. Put the subcommand after it.
pub fn console_command(data_dir: &std::path::Path) -> std::process::Command {
    let mut command = std::process::Command::new(BIN);
    command
        .env_remove("DATABASE_URL")
        .env_remove("SANDBOX_CONSOLE_SECRET_KEY")
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--run-dir")
        .arg(data_dir.join(RUNS));
    if let Some(url) = postgres_url_for(data_dir) {
        command
            .arg("--database-url")
            .arg(url)
            .env("SANDBOX_CONSOLE_SECRET_KEY", TEST_SECRET_KEY);
    }
    command
}

/// The database an app (or a command) on `data_dir` uses, opened by the test itself.
pub async fn open_database(data_dir: &std::path::Path) -> AnyPool {
    let url = postgres_url_for(data_dir)
        .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("sandbox-console.db").display()));
    sandbox_console::server::db::connect(&url).await.unwrap()
}

/// On the PostgreSQL pass, a test of something only a SQLite file has (its file modes, a
/// deleted file, another process's lock) says so and is skipped: true when it must return.
pub fn sqlite_only(what: &str) -> bool {
    if on_postgres() {
        eprintln!("skipped on the PostgreSQL pass: {what} is about the SQLite file");
    }
    on_postgres()
}

/// Reads a console child's standard output up to its "listening on" line and returns the
/// address (`http://…`); the rest of the output is drained on a thread, so a console that
/// writes more never blocks on a full pipe.
pub fn listening_address(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("the child's stdout is piped");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let address = loop {
        let line = lines
            .next()
            .expect("the console prints its address before it ends")
            .unwrap();
        if let Some(address) = line.strip_prefix("sandbox-console listening on ") {
            break address.to_owned();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    address
}
