//! Command line and environment configuration. Every flag has an environment variable;
//! the README lists them all.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Clone)]
#[command(
    name = "sandbox-console",
    version,
    about = "Admin console and execution gateway for code-execution sandboxes"
)]
pub struct Cli {
    #[command(flatten)]
    pub config: Config,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Clone, Debug)]
pub enum Command {
    /// Serve the console and the API (the default when no command is given).
    Serve,
    /// Manage administrator accounts.
    Admin {
        #[command(subcommand)]
        action: AdminAction,
    },
    /// List the provider kinds and their config schemas.
    Providers {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Validate and save a provider's settings (merged over what is saved); nothing is saved
    /// when a value is invalid.
    Configure {
        /// The provider kind, e.g. local.
        #[arg(long)]
        provider: String,
        /// A setting, KEY=VALUE; repeat for more.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Also read settings from the environment: SANDBOX_<KIND>_<KEY> for every field, and
        /// the provider's own variables (AGENTRUN_* for aliyun_codeinterpreter). --set wins.
        #[arg(long)]
        from_env: bool,
        /// Make this the active provider.
        #[arg(long)]
        activate: bool,
    },
    /// Run a program through the active provider and print its result. The exit code follows
    /// the status: 0 success, the program's own code on program_error, 124 timeout, 137 memory
    /// limit, 125 output or process limit, 75 pool busy, 69 provider failure, 64 bad input.
    Exec {
        /// The program; - reads standard input.
        file: PathBuf,
        /// python or javascript; guessed from the file extension when absent.
        #[arg(long)]
        language: Option<String>,
        /// Arguments for main(), a JSON object.
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        /// Seconds; the provider's own limit applies as well.
        #[arg(long)]
        timeout: Option<u32>,
        /// Print the full result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Manage API keys.
    ApiKey {
        #[command(subcommand)]
        action: ApiKeyAction,
    },
    /// Package environments: list, show, build, test.
    Env {
        #[command(subcommand)]
        action: EnvAction,
    },
    /// Ask the console serving on --listen whether it is ready (a container HEALTHCHECK):
    /// exit 0 when the path answers 200, 1 otherwise, within --timeout seconds.
    Probe {
        /// The path to ask: /readyz (the database answers) or /healthz (the process answers).
        #[arg(long, default_value = "/readyz")]
        path: String,
        /// Seconds to wait for the answer.
        #[arg(long, default_value_t = 5)]
        timeout: u64,
    },
}

#[derive(Subcommand, Clone, Debug)]
pub enum EnvAction {
    /// List the environments with their status.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show one environment: its spec, lock and verification.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Build an environment's current spec, printing the log as it goes; exits 0 when the
    /// build is ready, 1 when it failed.
    Build {
        name: String,
        /// Do nothing when the build in use is of the current spec already.
        #[arg(long)]
        if_needed: bool,
    },
    /// Import every module of an environment's ready build through the providers that mount
    /// it, and print how each fared; exits 1 when one failed.
    Test { name: String },
}

#[derive(Subcommand, Clone, Debug)]
pub enum ApiKeyAction {
    /// Create a key and print it (on standard output, alone: it is shown only now).
    Create {
        #[arg(long)]
        name: String,
        /// execute, admin; repeat or separate with commas.
        #[arg(long, value_delimiter = ',', required = true)]
        scope: Vec<crate::model::api_key::Scope>,
    },
    /// List the keys (never the keys themselves).
    List,
    /// Revoke the live key with this name.
    Revoke {
        #[arg(long)]
        name: String,
    },
}

#[derive(Subcommand, Clone, Debug)]
pub enum AdminAction {
    /// Create an administrator. The password comes from --password-stdin, else ADMIN_PASSWORD,
    /// else a random one is generated and printed once.
    Create {
        #[arg(long)]
        username: String,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Set a new password for an administrator and sign out all of their sessions.
    ResetPassword {
        #[arg(long)]
        username: String,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
    },
}

/// Settings of one running instance. `Debug` is written by hand: the admin password never
/// reaches a log.
#[derive(Args, Clone)]
pub struct Config {
    /// Address the HTTP server binds to (port 0 picks a free port).
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_LISTEN",
        default_value = "127.0.0.1:3000",
        global = true
    )]
    pub listen: SocketAddr,
    /// Directory for the embedded SQLite database and other state.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_DATA_DIR",
        default_value = "./data",
        global = true
    )]
    pub data_dir: PathBuf,
    /// Database URL: `sqlite://<file>` (the default is `<data-dir>/sandbox-console.db`) or
    /// `postgres://user:password@host/database`, shared by every replica of the console.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true, global = true)]
    pub database_url: Option<String>,
    /// Username of the administrator created on first start when none exists.
    #[arg(long, env = "ADMIN_USERNAME", default_value = "admin", global = true)]
    pub admin_username: String,
    /// Password for that first administrator (and for `admin create`); generated when unset.
    #[arg(long, env = "ADMIN_PASSWORD", hide_env_values = true, global = true)]
    pub admin_password: Option<String>,
    /// Key that encrypts provider secrets at rest: 32 bytes, base64. Without it, a key is
    /// generated once into `<data-dir>/secret.key` (mode 0600).
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_SECRET_KEY",
        hide_env_values = true,
        global = true
    )]
    pub secret_key: Option<String>,
    /// Mark the session cookie `Secure` (set this when the console is served over TLS).
    #[arg(long, env = "SANDBOX_CONSOLE_SECURE_COOKIES", global = true)]
    pub secure_cookies: bool,
    /// This console's name among replicas on one database (in logs, the background-job
    /// table and `GET /api/v1/providers`); defaults to the host name and process id.
    #[arg(long, env = "SANDBOX_CONSOLE_REPLICA_NAME", global = true)]
    pub replica_name: Option<String>,
    /// How often housekeeping runs (retention, expired sessions and artifacts, sign-in
    /// events); with replicas, one of them runs each round.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_HOUSEKEEPING_SECS",
        default_value_t = 600,
        global = true
    )]
    pub housekeeping_secs: u64,
    /// Sign an administrator out after this many minutes without a request.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_SESSION_IDLE_MINUTES",
        default_value_t = 480,
        global = true
    )]
    pub session_idle_minutes: u32,
    #[command(flatten)]
    pub sandbox_sessions: crate::server::session_limits::SessionLimits,
    #[command(flatten)]
    pub login: crate::server::login_limits::LoginLimits,
    /// Requests each API key may make per minute (`/api/v1/*` and `/run`); 0 means no limit.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_API_RATE_LIMIT",
        default_value_t = 0,
        global = true
    )]
    pub api_rate_limit: u32,
    /// Largest request body the API accepts, in bytes (larger ones get 413).
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_API_MAX_BODY_BYTES",
        default_value_t = 4 * 1024 * 1024,
        global = true
    )]
    pub api_max_body_bytes: usize,
    /// Also serve `/metrics` here, without authentication (e.g. 127.0.0.1:9464 for a local
    /// Prometheus). On the main address `/metrics` needs an admin session or an admin key.
    #[arg(long, env = "SANDBOX_CONSOLE_METRICS_LISTEN", global = true)]
    pub metrics_listen: Option<SocketAddr>,
    /// The address browsers use to reach the console (scheme, host and port, e.g.
    /// https://sandbox.example.com when behind a TLS proxy). State-changing requests whose
    /// `Origin` is anything else are refused. Default: http://<--listen>.
    #[arg(long, env = "SANDBOX_CONSOLE_PUBLIC_URL", global = true)]
    pub public_url: Option<String>,
    /// Seconds a client has to send a request's headers, from connecting or from its first
    /// byte after an idle spell; slower connections are closed.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_HEADER_READ_TIMEOUT_SECS",
        default_value_t = 10,
        global = true
    )]
    pub header_read_timeout_secs: u64,
    /// Seconds a keep-alive connection may stay idle between requests before it is closed.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_IDLE_TIMEOUT_SECS",
        default_value_t = 60,
        global = true
    )]
    pub idle_timeout_secs: u64,
    /// Seconds a request body may pause, or a client leave an answer unread, before its
    /// request fails or its connection is closed.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_STALL_TIMEOUT_SECS",
        default_value_t = 30,
        global = true
    )]
    pub stall_timeout_secs: u64,
    /// Seconds a whole request body may take to arrive, however steadily it trickles in.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_BODY_TIMEOUT_SECS",
        default_value_t = 60,
        global = true
    )]
    pub body_timeout_secs: u64,
    /// Connections served at once (also kept below the open-files limit); one more is
    /// answered 503 at once and closed.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_MAX_CONNECTIONS",
        default_value_t = 1024,
        global = true
    )]
    pub max_connections: usize,
    /// Connections one client address may hold at once (a trusted proxy's are not counted
    /// here: its clients are, behind it); one more is answered 503 at once and closed, so one
    /// client cannot take every connection.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_MAX_CONNECTIONS_PER_ADDRESS",
        default_value_t = 64,
        global = true
    )]
    pub max_connections_per_address: usize,
    /// After SIGTERM or SIGINT: how long runs and requests in flight get to finish before
    /// they are cancelled (their sandboxes killed and removed) and the console exits.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_SHUTDOWN_GRACE_SECS",
        default_value_t = 30,
        global = true
    )]
    pub shutdown_grace_secs: u64,
    /// Page loads and server-function calls handled at once; more wait in a queue.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_MAX_PAGE_REQUESTS",
        default_value_t = 16,
        global = true
    )]
    pub max_page_requests: usize,
    /// How long a page request may wait in that queue (and how many may wait: 16 per slot)
    /// before it is answered 503 with Retry-After.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_PAGE_QUEUE_SECS",
        default_value_t = 10,
        global = true
    )]
    pub page_queue_secs: u64,
    /// Reverse proxies (addresses or ranges, comma-separated, e.g. `10.0.0.0/8,127.0.0.1`)
    /// whose `X-Forwarded-For` names the client: for a request from one of them, the client
    /// is the nearest address in that header that is not a trusted proxy (sign-in limits, the
    /// audit, API keys' last address). Unset: the TCP peer, and the header is ignored.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_parser = parse_proxy_range,
        global = true
    )]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Connections in the database pool; a request that waits 5 s for one fails.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_DATABASE_CONNECTIONS",
        default_value_t = 8,
        global = true
    )]
    pub database_connections: u32,
    /// Where environment builds live. Default `<data-dir>/environments`, which the console
    /// also cleans of unused builds; a folder given here is treated as a cache shared with
    /// other consoles, and nothing is deleted from it.
    #[arg(long, env = "SANDBOX_CONSOLE_ENVIRONMENT_STORE", global = true)]
    pub environment_store: Option<PathBuf>,
    /// Where local sandboxes keep their private host folders (their artifacts) while they
    /// run. Default: the system's temporary folder.
    #[arg(long, env = "SANDBOX_CONSOLE_RUN_DIR", global = true)]
    pub run_dir: Option<PathBuf>,
    /// The Python whose pip builds environments: the interpreter sandboxes run.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_ENVIRONMENT_PYTHON",
        default_value = "/usr/bin/python3.11",
        global = true
    )]
    pub environment_python: PathBuf,
    /// The npm that builds environments.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_ENVIRONMENT_NPM",
        default_value = "/usr/bin/npm",
        global = true
    )]
    pub environment_npm: PathBuf,
    /// Package index for environment builds (pip's --index-url); unset: pip's own
    /// configuration on this host (pip.conf, PIP_INDEX_URL), so a mirror there just works.
    #[arg(long, env = "SANDBOX_CONSOLE_PACKAGE_INDEX", global = true)]
    pub package_index: Option<String>,
    /// npm registry for environment builds; unset: npm's own configuration (.npmrc).
    #[arg(long, env = "SANDBOX_CONSOLE_NPM_REGISTRY", global = true)]
    pub npm_registry: Option<String>,
    /// Build the default environment in the background when it has never been built (runs
    /// use the bare interpreter until it is ready). `false` leaves it to an admin.
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_BUILD_DEFAULT_ENVIRONMENT",
        default_value_t = true,
        action = clap::ArgAction::Set,
        global = true
    )]
    pub build_default_environment: bool,
    /// An unused environment build is deleted once it has been unused this long (runs that
    /// started on a build an environment has since replaced may still read it).
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_ENVIRONMENT_GC_GRACE_SECS",
        default_value_t = 900,
        global = true
    )]
    pub environment_gc_grace_secs: u64,
    /// Environment builds run at once; more wait in a queue (each shows its place).
    #[arg(
        long,
        env = "SANDBOX_CONSOLE_MAX_CONCURRENT_BUILDS",
        default_value_t = 2,
        global = true
    )]
    pub max_concurrent_builds: usize,
}

/// An address range (`10.0.0.0/8`) or one address (`127.0.0.1`, `::1`).
fn parse_proxy_range(text: &str) -> Result<ipnet::IpNet, String> {
    let text = text.trim();
    text.parse::<ipnet::IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("{text:?} is not an address or an address range like 10.0.0.0/8"))
}

impl Config {
    /// Settings for one instance with its state in `data_dir` and every other value at its default.
    pub fn with_data_dir(data_dir: impl Into<PathBuf>) -> Self {
        let mut cli = Cli::parse_from(["sandbox-console"]);
        cli.config.data_dir = data_dir.into();
        cli.config
    }

    /// The replica the history notes beside this process's runs: on PostgreSQL (where
    /// replicas exist) the replica name, and for a command (`exec`) `--replica-name` or `cli`;
    /// on SQLite nothing, as one console's default name changes with every start.
    pub fn history_replica(&self, command: bool) -> String {
        if crate::server::db::Backend::of_url(&self.database_url())
            != Some(crate::server::db::Backend::Postgres)
        {
            return String::new();
        }
        match (&self.replica_name, command) {
            (None, true) => "cli".to_owned(),
            _ => self.replica(),
        }
    }

    /// This console's name among replicas: `--replica-name`, else `<host name>-<pid>`.
    pub fn replica(&self) -> String {
        self.replica_name.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|name| name.trim().to_owned())
                .unwrap_or_default();
            let host = if host.is_empty() {
                "console".to_owned()
            } else {
                host
            };
            format!("{host}-{}", std::process::id())
        })
    }

    /// The database URL in force: the explicit one, or the SQLite file in the data directory.
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.clone(),
            None => format!(
                "sqlite://{}",
                self.data_dir.join("sandbox-console.db").display()
            ),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("data_dir", &self.data_dir)
            .field(
                "database_url",
                &crate::server::db::redacted_url(&self.database_url()),
            )
            .field("admin_username", &self.admin_username)
            .field(
                "admin_password",
                &self.admin_password.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "secret_key",
                &self.secret_key.as_ref().map(|_| "<redacted>"),
            )
            .field("secure_cookies", &self.secure_cookies)
            .field("session_idle_minutes", &self.session_idle_minutes)
            .field("sandbox_sessions", &self.sandbox_sessions)
            .field("login", &self.login)
            .field("api_rate_limit", &self.api_rate_limit)
            .field("api_max_body_bytes", &self.api_max_body_bytes)
            .field("metrics_listen", &self.metrics_listen)
            .field("public_url", &self.public_url)
            .field("header_read_timeout_secs", &self.header_read_timeout_secs)
            .field("idle_timeout_secs", &self.idle_timeout_secs)
            .field("stall_timeout_secs", &self.stall_timeout_secs)
            .field("body_timeout_secs", &self.body_timeout_secs)
            .field("max_connections", &self.max_connections)
            .field(
                "max_connections_per_address",
                &self.max_connections_per_address,
            )
            .field("shutdown_grace_secs", &self.shutdown_grace_secs)
            .field("max_page_requests", &self.max_page_requests)
            .field("page_queue_secs", &self.page_queue_secs)
            .field("database_connections", &self.database_connections)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("environment_store", &self.environment_store)
            .field("run_dir", &self.run_dir)
            .field("environment_python", &self.environment_python)
            .field("environment_npm", &self.environment_npm)
            .field("package_index", &self.package_index)
            .field("npm_registry", &self.npm_registry)
            .field("build_default_environment", &self.build_default_environment)
            .field("environment_gc_grace_secs", &self.environment_gc_grace_secs)
            .field("max_concurrent_builds", &self.max_concurrent_builds)
            .field("replica_name", &self.replica_name)
            .field("housekeeping_secs", &self.housekeeping_secs)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_names_replicas_only_where_replicas_exist() {
        let mut config = Config::with_data_dir("/tmp/none");
        // SQLite: one console, whose default name changes with every start.
        assert_eq!(config.history_replica(false), "");
        assert_eq!(config.history_replica(true), "");
        config.database_url = Some("postgres://console@db/console".into());
        let server = config.history_replica(false);
        assert!(!server.is_empty() && server != "cli", "{server}");
        assert_eq!(server, config.replica());
        assert_eq!(config.history_replica(true), "cli");
        config.replica_name = Some("console-a".into());
        assert_eq!(config.history_replica(false), "console-a");
        assert_eq!(config.history_replica(true), "console-a");
    }
}
