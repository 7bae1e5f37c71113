//! Starting the real binaries and connecting real MCP clients to them.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

pub(crate) use mcp_cursos_e2e::{ERAS, Era, Recorder};
use rmcp::RoleClient;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// How long a process may take to become ready or to stop before the test fails.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

pub(crate) type Client = RunningService<RoleClient, ()>;

/// The path of one of the workspace's binaries, built beside this test binary.
///
/// `cargo test` builds a package's binaries only for that package's own integration tests, and
/// the apps have none: every test that runs a binary lives in this one test binary. So the first
/// call builds both, once per run, with the same package selection and dev-dependencies as
/// `cargo test --workspace` (the workspace, with this test target): the binaries link the
/// libraries that command already built, nothing is compiled twice, and when they are up to date
/// the build is a no-op. Built every run, never "if missing", so a test never runs a stale binary.
pub(crate) fn binary(name: &str) -> PathBuf {
    // Every test starts here before it sends HTTP: reqwest needs a TLS provider in a workspace build.
    mcp_cursos_e2e::install_tls_provider();
    static PROFILE_DIR: OnceLock<PathBuf> = OnceLock::new();
    let profile_dir = PROFILE_DIR.get_or_init(|| {
        let test_binary = std::env::current_exe().expect("current exe");
        // target/<profile>/deps/e2e-<hash>
        let profile_dir = test_binary.parent().and_then(Path::parent).expect("target/<profile>").to_owned();
        let target_dir = profile_dir.parent().expect("the target folder");
        let profile = match profile_dir.file_name().and_then(|name| name.to_str()) {
            Some("debug") => "dev",
            Some(other) => other,
            None => panic!("no profile folder in {}", profile_dir.display()),
        };
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--locked", "--workspace", "--profile", profile, "--test", "e2e"])
            .args(["--bin", "mcp-cursos-stdio", "--bin", "mcp-cursos-backend", "--target-dir"])
            .arg(target_dir)
            .current_dir(workspace)
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building the binaries failed");
        profile_dir
    });
    profile_dir.join(name)
}

/// Runs `command` to its end, killing it if it has not ended within a generous bound (a start-up
/// error is reported at once; before, a database that could not be opened took 30 s).
pub(crate) fn run_to_end(command: &mut std::process::Command) -> std::process::Output {
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!("still running after 20 s: {}", String::from_utf8_lossy(&output.stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// A fresh folder with a database path inside (not yet created).
pub(crate) fn fresh_database() -> (tempfile::TempDir, PathBuf) {
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("dados/cursos.db");
    (folder, path)
}

/// Lines a child wrote, collected as they arrive; and whether its stream has ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lines(Arc<Mutex<Vec<String>>>, Arc<std::sync::atomic::AtomicBool>);

impl Lines {
    pub(crate) fn all(&self) -> String {
        self.0.lock().expect("lines").join("\n")
    }

    /// Every line the child wrote, once its stream has ended (it exited, or closed it): waits,
    /// bounded by [`PATIENCE`], so that a test can tell that something was never written.
    pub(crate) async fn all_at_end(&self) -> String {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !self.1.load(std::sync::atomic::Ordering::Acquire) {
            assert!(tokio::time::Instant::now() < deadline, "the stream never ended:\n{}", self.all());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.all()
    }

    fn collect(
        &self,
        stream: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        found: Option<mpsc::UnboundedSender<String>>,
    ) {
        let lines = self.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if let Some(found) = &found {
                    let _ = found.send(line.clone());
                }
                lines.0.lock().expect("lines").push(line);
            }
            lines.1.store(true, std::sync::atomic::Ordering::Release);
        });
    }
}

/// A running `mcp-cursos-backend`.
pub(crate) struct Backend {
    child: Child,
    /// `http://127.0.0.1:<port>`
    pub(crate) base_url: String,
    /// `http://127.0.0.1:<port>/mcp`
    pub(crate) mcp_url: String,
    pub(crate) api_key: String,
    pub(crate) stdout: Lines,
    pub(crate) stderr: Lines,
}

/// Starts the backend on a free loopback port. Without `api_key`, reads the generated one from stdout.
pub(crate) async fn start_backend(database: &Path, api_key: Option<&str>) -> Backend {
    start_backend_with(database, api_key, &[]).await
}

/// [`start_backend`] with extra environment variables (`SESSION_MODE`, ...).
pub(crate) async fn start_backend_with(
    database: &Path,
    api_key: Option<&str>,
    environment: &[(&str, &str)],
) -> Backend {
    spawn_backend(database, api_key, environment, api_key.is_none()).await
}

/// Starts the backend with no key configured on a database folder that already keeps a
/// generated key (ADR 0048): no key is printed then, so [`Backend::api_key`] is `kept_key`, the
/// key the first start printed.
pub(crate) async fn restart_backend_keeping_generated_key(
    database: &Path,
    kept_key: &str,
    environment: &[(&str, &str)],
) -> Backend {
    let mut backend = spawn_backend(database, None, environment, false).await;
    kept_key.clone_into(&mut backend.api_key);
    backend
}

/// Starts the backend with `KEYS_FILE` (and the extra `environment`): no key is generated then,
/// so [`Backend::api_key`] is empty; connect with [`Backend::client_with_key`].
pub(crate) async fn start_backend_with_keys_file(
    database: &Path,
    keys_file: &Path,
    environment: &[(&str, &str)],
) -> Backend {
    let keys_file = keys_file.to_str().expect("UTF-8 path");
    let mut all = vec![("KEYS_FILE", keys_file)];
    all.extend_from_slice(environment);
    spawn_backend(database, None, &all, false).await
}

/// True when these tests run in a container (Podman's `/run/.containerenv`, Docker's
/// `/.dockerenv`), as the binaries tell: some of their messages differ there (issue 25).
pub(crate) fn in_container() -> bool {
    Path::new("/run/.containerenv").exists() || Path::new("/.dockerenv").exists()
}

/// The backend on `database`, a free loopback port, `RUST_LOG=info` and `api_key` if any, with
/// nothing else from the test's environment; stdin closed, killed when dropped.
fn backend_command(database: &Path, api_key: Option<&str>) -> Command {
    let mut command = Command::new(binary("mcp-cursos-backend"));
    command
        .env_clear()
        .env("HOST", "127.0.0.1")
        .env("PORT", "0")
        .env("DATABASE_PATH", database)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    if let Some(key) = api_key {
        command.env("API_KEY", key);
    }
    command
}

async fn spawn_backend(
    database: &Path,
    api_key: Option<&str>,
    environment: &[(&str, &str)],
    read_generated_key: bool,
) -> Backend {
    let mut command = backend_command(database, api_key);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command.envs(environment.iter().copied());
    let mut child = command.spawn().expect("spawn backend");
    let (stderr_found, mut stderr_events) = mpsc::unbounded_channel();
    let (stdout_found, mut stdout_events) = mpsc::unbounded_channel();
    let stderr = Lines::default();
    let stdout = Lines::default();
    stderr.collect(child.stderr.take().expect("stderr"), Some(stderr_found));
    stdout.collect(child.stdout.take().expect("stdout"), Some(stdout_found));

    let mcp_url = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = stderr_events.recv().await {
            if line.contains("listening")
                && let Some(url) = line.split_whitespace().find_map(|word| word.strip_prefix("url="))
            {
                return url.to_owned();
            }
            // LOG_FORMAT=json: {"message":"mcp-cursos-backend listening","url":"http://...",...}
            if let Ok(event) = serde_json::from_str::<serde_json::Value>(&line)
                && event["message"].as_str().is_some_and(|message| message.contains("listening"))
                && let Some(url) = event["url"].as_str()
            {
                return url.to_owned();
            }
        }
        panic!("the backend exited before listening:\n{}", stderr.all());
    })
    .await
    .unwrap_or_else(|_| panic!("the backend did not start listening in time:\n{}", stderr.all()));

    let api_key = match api_key {
        Some(key) => key.to_owned(),
        None if !read_generated_key => String::new(),
        None => tokio::time::timeout(PATIENCE, async {
            while let Some(line) = stdout_events.recv().await {
                if let Some(key) = line.strip_prefix("API_KEY=") {
                    return key.to_owned();
                }
            }
            panic!("no generated key on stdout:\n{}", stdout.all());
        })
        .await
        .expect("the generated key in time"),
    };
    let base_url = mcp_url.trim_end_matches("/mcp").to_owned();
    Backend { child, base_url, mcp_url, api_key, stdout, stderr }
}

/// [`start_backend`] with its stderr (its log) appended to the file `log`, as an operator's
/// `2>>cursos.log` does; the listening line is polled for in that file.
pub(crate) async fn start_backend_logging_to(database: &Path, api_key: &str, log: &Path) -> Backend {
    let file = std::fs::OpenOptions::new().create(true).append(true).open(log).expect("the log file");
    let child = backend_command(database, Some(api_key))
        .stdout(Stdio::null())
        .stderr(Stdio::from(file))
        .spawn()
        .expect("spawn backend");
    let started = std::time::Instant::now();
    let mcp_url = loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(url) = text
            .lines()
            .filter(|line| line.contains("listening"))
            .find_map(|line| line.split_whitespace().find_map(|word| word.strip_prefix("url=")))
        {
            break url.to_owned();
        }
        assert!(started.elapsed() < PATIENCE, "the backend did not start listening in time:\n{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let base_url = mcp_url.trim_end_matches("/mcp").to_owned();
    Backend {
        child,
        base_url,
        mcp_url,
        api_key: api_key.to_owned(),
        stdout: Lines::default(),
        stderr: Lines::default(),
    }
}

impl Backend {
    /// An MCP client over Streamable HTTP with the Bearer key.
    pub(crate) async fn client(&self, era: Era) -> Client {
        self.client_with((), era).await
    }

    /// An MCP client over Streamable HTTP presenting `key`.
    pub(crate) async fn client_with_key(&self, key: &str, era: Era) -> Client {
        self.client_with_handler_and_key((), key, era).await
    }

    /// An MCP client with its own handler (to receive notifications).
    pub(crate) async fn client_with<H: rmcp::ClientHandler>(
        &self,
        handler: H,
        era: Era,
    ) -> RunningService<RoleClient, H> {
        self.client_with_handler_and_key(handler, &self.api_key, era).await
    }

    /// An MCP client with its own handler, presenting `key`.
    pub(crate) async fn client_with_handler_and_key<H: rmcp::ClientHandler>(
        &self,
        handler: H,
        key: &str,
        era: Era,
    ) -> RunningService<RoleClient, H> {
        let config = StreamableHttpClientTransportConfig::with_uri(self.mcp_url.clone()).auth_header(key.to_owned());
        connect_with(handler, StreamableHttpClientTransport::from_config(config), era).await
    }

    /// SIGTERM, then waits for a clean exit.
    pub(crate) async fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().expect("running");
        let status = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().expect("kill");
        assert!(status.success());
        tokio::time::timeout(PATIENCE, self.child.wait()).await.expect("stopped in time").expect("exit status")
    }
}

/// `mcp-cursos-stdio` on `database` with only `environment` besides, its stdin and stdout piped
/// for raw bytes and its stderr to `stderr`; killed when dropped.
pub(crate) fn spawn_raw_stdio(database: &Path, environment: &[(&str, &str)], stderr: Stdio) -> Child {
    Command::new(binary("mcp-cursos-stdio"))
        .env_clear()
        .env("DATABASE_PATH", database)
        .envs(environment.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the stdio app")
}

/// An MCP client connected to a fresh `mcp-cursos-stdio` child process.
pub(crate) async fn stdio_client(database: &Path, era: Era) -> (Client, Lines) {
    stdio_client_with((), database, era).await
}

/// [`stdio_client`] with its own handler (to receive notifications).
/// [`stdio_client`] for the app started with `--catalog <catalog>` (ADR 0035).
pub(crate) async fn stdio_client_in_catalog(database: &Path, catalog: &str, era: Era) -> Client {
    let command = Command::new(binary("mcp-cursos-stdio")).configure(|command| {
        command.env_clear().env("DATABASE_PATH", database).env("RUST_LOG", "info").args(["--catalog", catalog]);
    });
    let (transport, _stderr) = TokioChildProcess::builder(command).spawn().expect("spawn stdio app");
    connect_with((), transport, era).await
}

pub(crate) async fn stdio_client_with<H: rmcp::ClientHandler>(
    handler: H,
    database: &Path,
    era: Era,
) -> (RunningService<RoleClient, H>, Lines) {
    stdio_client_with_env(handler, database, era, &[]).await
}

/// [`stdio_client_with`] with extra environment variables (`POLICY_FILE`, ...).
pub(crate) async fn stdio_client_with_env<H: rmcp::ClientHandler>(
    handler: H,
    database: &Path,
    era: Era,
    environment: &[(&str, &str)],
) -> (RunningService<RoleClient, H>, Lines) {
    let command = Command::new(binary("mcp-cursos-stdio")).configure(|command| {
        command.env_clear().env("DATABASE_PATH", database).env("RUST_LOG", "info").envs(environment.iter().copied());
    });
    let (transport, stderr) =
        TokioChildProcess::builder(command).stderr(Stdio::piped()).spawn().expect("spawn stdio app");
    let lines = Lines::default();
    lines.collect(stderr.expect("stderr"), None);
    (connect_with(handler, transport, era).await, lines)
}

async fn connect_with<H, T, E, A>(handler: H, transport: T, era: Era) -> RunningService<RoleClient, H>
where
    H: rmcp::ClientHandler,
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    tokio::time::timeout(PATIENCE, era.connect(handler, transport))
        .await
        .expect("connected in time")
        .expect("MCP connection")
}

impl Backend {
    /// The backend's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// SIGKILL (no graceful shutdown, no chance to flush anything), then reaps the process.
    pub(crate) async fn kill(mut self) -> std::process::ExitStatus {
        self.child.start_kill().expect("SIGKILL");
        tokio::time::timeout(PATIENCE, self.child.wait()).await.expect("killed in time").expect("exit status")
    }

    /// Reads `/health` until `done` holds, bounded by [`PATIENCE`]; fails naming `what`.
    pub(crate) async fn poll_health(&self, what: &str, done: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let health = self.health().await;
            if done(&health) {
                return health;
            }
            assert!(tokio::time::Instant::now() < deadline, "{what}: {health}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (bounded by [`PATIENCE`]) until the backend's log (its stderr) contains `text`.
    pub(crate) async fn wait_for_log(&self, text: &str) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !self.stderr.all().contains(text) {
            assert!(tokio::time::Instant::now() < deadline, "never logged {text:?}:\n{}", self.stderr.all());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `GET /health` as JSON.
    pub(crate) async fn health(&self) -> serde_json::Value {
        reqwest::get(format!("{}/health", self.base_url)).await.expect("health").json().await.expect("health JSON")
    }
}

/// A process's resident memory (`VmRSS` in `/proc/<pid>/status`), in KiB.
pub(crate) fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/<pid>/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in kB")
}

/// How many threads the process `pid` has now, from `/proc/<pid>/status`.
pub(crate) fn thread_count(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/<pid>/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|value| value.trim().parse().ok())
        .expect("Threads")
}

/// A PostgreSQL schema of its own for one test, in the database of `TEST_DATABASE_URL` (default
/// the local `test` database); dropped with everything in it when the test ends. The apps reach it
/// through [`PostgresSchema::url`], whose `search_path` names it.
pub(crate) struct PostgresSchema {
    base_url: String,
    name: String,
}

impl PostgresSchema {
    /// `None` when PostgreSQL does not answer and `REQUIRE_POSTGRES` is not set: the caller
    /// skips its test (announced once on stderr; ADR 0031).
    pub(crate) fn create() -> Option<Self> {
        use diesel::{Connection, RunQueryDsl};
        let base_url = courses_domain::testing::postgres_for_tests()?;
        let name = format!("e2e_{}", uuid_like());
        let mut connection = diesel::PgConnection::establish(&base_url)
            .unwrap_or_else(|error| panic!("PostgreSQL stopped answering (TEST_DATABASE_URL): {error}"));
        // pg_trgm is database-wide: kept in public so that dropping this schema drops no other's index.
        for statement in [
            format!("CREATE SCHEMA \"{name}\""),
            "CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public".to_owned(),
        ] {
            diesel::sql_query(statement).execute(&mut connection).expect("prepare the test schema");
        }
        Some(Self { base_url, name })
    }

    /// The connection URI the apps get as `DATABASE_URL`: this schema first on the `search_path`.
    pub(crate) fn url(&self) -> String {
        let separator = if self.base_url.contains('?') { '&' } else { '?' };
        format!("{}{separator}options=-csearch_path%3D{}%2Cpublic", self.base_url, self.name)
    }

    /// A connection to the database that holds this schema, for the checks below.
    fn connect(&self) -> diesel::PgConnection {
        diesel::Connection::establish(&self.base_url).expect("PostgreSQL answers")
    }

    /// Every index of this schema: its name and definition (the schema's name taken out), sorted.
    pub(crate) fn indexes(&self) -> Vec<(String, String)> {
        use diesel::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Index {
            #[diesel(sql_type = diesel::sql_types::Text)]
            indexname: String,
            #[diesel(sql_type = diesel::sql_types::Text)]
            indexdef: String,
        }
        let mut connection = self.connect();
        let indexes: Vec<Index> =
            diesel::sql_query("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname")
                .bind::<diesel::sql_types::Text, _>(&self.name)
                .load(&mut connection)
                .expect("read the schema's indexes");
        indexes.into_iter().map(|index| (index.indexname, index.indexdef.replace(&self.name, "<schema>"))).collect()
    }

    /// The tables of this schema PostgreSQL has statistics for (`pg_stats`), sorted.
    pub(crate) fn analyzed_tables(&self) -> Vec<String> {
        use diesel::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Table {
            #[diesel(sql_type = diesel::sql_types::Text)]
            tablename: String,
        }
        let mut connection = self.connect();
        let tables: Vec<Table> =
            diesel::sql_query("SELECT DISTINCT tablename::text FROM pg_stats WHERE schemaname = $1 ORDER BY 1")
                .bind::<diesel::sql_types::Text, _>(&self.name)
                .load(&mut connection)
                .expect("read the schema's statistics");
        tables.into_iter().map(|table| table.tablename).collect()
    }
}

impl Drop for PostgresSchema {
    fn drop(&mut self) {
        courses_domain::testing::drop_schema(&self.base_url, &self.name);
    }
}

/// 32 lowercase hex characters, unique enough for a schema name.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{:x}{:08x}", nanos, std::process::id())
}

/// Runs `mcp-cursos-backend keys <arguments>` on `keys_file`.
pub(crate) fn keys(keys_file: &Path, arguments: &[&str]) -> std::process::Output {
    std::process::Command::new(binary("mcp-cursos-backend"))
        .env_clear()
        .env("KEYS_FILE", keys_file)
        .arg("keys")
        .args(arguments)
        .output()
        .expect("run the keys command")
}

/// `keys create <arguments>` on `keys_file`: the new key, printed on stdout.
pub(crate) fn new_key(keys_file: &Path, arguments: &[&str]) -> String {
    let output = keys(keys_file, &[&["create"], arguments].concat());
    assert!(output.status.success(), "keys create {arguments:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf-8").trim().to_owned()
}
