//! `mcp-cursos-backend` as an operator meets it before it serves: `--help` documents every
//! setting with its environment variable, a setting that cannot be followed stops the start at
//! once with the cause first and the setting named (issue 16, ADR 0028), the `keys` commands'
//! files and the `check` command.

use std::process::Command;

use crate::support::{binary, in_container, run_to_end};

#[test]
fn help_documents_every_setting_with_its_environment_variable() {
    let output = Command::new(binary("mcp-cursos-backend")).arg("--help").output().expect("run --help");
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).expect("utf-8");
    for (flag, variable) in [
        ("--host", "HOST"),
        ("--port", "PORT"),
        ("--database-path", "DATABASE_PATH"),
        ("--api-key", "API_KEY"),
        ("--keys-file", "KEYS_FILE"),
        ("--policy-file", "POLICY_FILE"),
        ("--rate-limit", "RATE_LIMIT"),
        ("--max-sessions-per-key", "MAX_SESSIONS_PER_KEY"),
        ("--max-connections", "MAX_CONNECTIONS"),
        ("--header-read-timeout", "HEADER_READ_TIMEOUT"),
        ("--write-stall-timeout", "WRITE_STALL_TIMEOUT"),
        ("--max-connections-per-address", "MAX_CONNECTIONS_PER_ADDRESS"),
        ("--max-connections-per-key", "MAX_CONNECTIONS_PER_KEY"),
        ("--metrics", "METRICS"),
        ("--log-format", "LOG_FORMAT"),
        ("--database-url", "DATABASE_URL"),
        ("--unconfirmed-archive", "UNCONFIRMED_ARCHIVE"),
        ("--allowed-hosts", "ALLOWED_HOSTS"),
        ("--allowed-origins", "ALLOWED_ORIGINS"),
        ("--session-mode", "SESSION_MODE"),
        ("--session-idle-timeout", "SESSION_IDLE_TIMEOUT"),
        ("--resource-tools", "RESOURCE_TOOLS"),
        ("--no-auth", "NO_AUTH"),
        ("--confirmation-secret", "CONFIRMATION_SECRET"),
    ] {
        assert!(help.contains(flag), "--help should document {flag}:\n{help}");
        assert!(help.contains(&format!("[env: {variable}")), "--help should name {variable}:\n{help}");
    }
    assert!(
        help.contains("[default: 127.0.0.1]")
            && help.contains("[default: 3000]")
            && help.contains("[default: ./data/cursos.db]")
    );
}

/// `binary [subcommand...] flag`'s stdout, in an environment without the test's variables.
fn help_of(binary_name: &str, path: &[&str], flag: &str) -> String {
    let output = Command::new(binary(binary_name)).env_clear().args(path).arg(flag).output().expect("run help");
    assert!(output.status.success(), "{binary_name} {path:?} {flag}");
    String::from_utf8(output.stdout).expect("utf-8")
}

/// The subcommands a help lists under `Commands:` (but `help`).
fn subcommands_in(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn short_help_fits_a_terminal_and_the_long_help_keeps_the_whole_text() {
    // Issue 25: `-h` printed descriptions of up to 964 characters on one line.
    for binary_name in ["mcp-cursos-backend", "mcp-cursos-stdio"] {
        let mut commands: Vec<Vec<String>> = vec![Vec::new()];
        while let Some(path) = commands.pop() {
            let path_refs: Vec<&str> = path.iter().map(String::as_str).collect();
            let short = help_of(binary_name, &path_refs, "-h");
            for line in short.lines() {
                assert!(line.chars().count() <= 100, "{binary_name} {path:?} -h has a line of {}: {line}", line.len());
            }
            let long = help_of(binary_name, &path_refs, "--help");
            assert!(long.len() > short.len(), "{binary_name} {path:?} --help says more than -h");
            for subcommand in subcommands_in(&short) {
                commands.push(path.iter().cloned().chain([subcommand]).collect());
            }
        }
    }
    let long = help_of("mcp-cursos-backend", &["import"], "--help");
    assert!(long.contains("Idempotent: a row whose course is already in the catalog"), "{long}");
    let short = help_of("mcp-cursos-backend", &[], "-h");
    assert!(short.contains("Imports courses from JSON Lines or CSV") && !short.contains("Idempotent"), "{short}");
    let long = help_of("mcp-cursos-backend", &[], "--help");
    assert!(long.contains("Keep the loopback default unless a proxy"), "{long}");
    let long = help_of("mcp-cursos-stdio", &[], "--help");
    assert!(long.contains("whatever the working directory an editor, npx or uvx starts the app in"), "{long}");
}

#[test]
fn help_never_shows_the_api_key_taken_from_the_environment() {
    let output = Command::new(binary("mcp-cursos-backend"))
        .arg("--help")
        .env("API_KEY", "segredo-que-nao-pode-aparecer")
        .env("CONFIRMATION_SECRET", "outro-segredo-que-nao-pode-aparecer-nunca")
        .output()
        .expect("run --help");
    let help = String::from_utf8(output.stdout).expect("utf-8");
    assert!(!help.contains("segredo-que-nao-pode-aparecer"), "{help}");
}

#[test]
fn a_short_confirmation_secret_fails_at_start_without_being_echoed() {
    let folder = tempfile::tempdir().expect("temp dir");
    let database = folder.path().join("cursos.db");
    let output = Command::new(binary("mcp-cursos-backend"))
        .env("API_KEY", "chave-de-teste-longa-o-bastante")
        .env("CONFIRMATION_SECRET", "curto-demais")
        .env("PORT", "0")
        .env("DATABASE_PATH", &database)
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid CONFIRMATION_SECRET") && stderr.contains("at least 32 bytes"), "{stderr}");
    assert!(!stderr.contains("curto-demais"), "the secret is not echoed: {stderr}");
}

#[test]
fn an_invalid_setting_fails_at_start_with_a_clear_message() {
    let output = Command::new(binary("mcp-cursos-backend"))
        .env("API_KEY", "chave com espaço")
        .env("PORT", "0")
        .env("DATABASE_PATH", std::env::temp_dir().join("mcp-cursos-cli-test-never-created/cursos.db"))
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid API_KEY"), "{stderr}");
    assert!(!stderr.contains("chave com espaço"), "the key is not echoed: {stderr}");

    // Issue 24: a one-character key was accepted.
    let output = Command::new(binary("mcp-cursos-backend"))
        .env("API_KEY", "k")
        .env("PORT", "0")
        .env("DATABASE_PATH", std::env::temp_dir().join("mcp-cursos-cli-test-never-created/cursos.db"))
        .output()
        .expect("run");
    assert!(!output.status.success(), "a one-character key started the server");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid API_KEY") && stderr.contains("use at least 16"), "{stderr}");
}

#[test]
fn no_auth_is_refused_on_an_address_other_than_loopback() {
    let database = std::env::temp_dir().join(format!("mcp-cursos-cli-test-no-auth-{}/cursos.db", std::process::id()));
    let output = Command::new(binary("mcp-cursos-backend"))
        .env("NO_AUTH", "true")
        .env("HOST", "0.0.0.0")
        .env("PORT", "0")
        .env("DATABASE_PATH", &database)
        .output()
        .expect("run");
    assert!(!database.exists(), "refused before touching anything");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("NO_AUTH is only allowed on a loopback HOST"), "{stderr}");
}

/// The key is printed before it takes effect: when stdout is a pipe nobody reads any more, the
/// command fails and the key is not added (before, it was added and never shown).
#[cfg(unix)]
#[test]
fn keys_create_adds_no_key_when_it_cannot_print_it() {
    let folder = tempfile::tempdir().expect("temp dir");
    let keys_file = folder.path().join("keys");
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let output = Command::new(binary("mcp-cursos-backend"))
        .args(["keys", "create", "--name", "ci", "--scope", "escrita"])
        .env("KEYS_FILE", &keys_file)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run");
    let text = std::fs::read_to_string(&keys_file).unwrap_or_default();
    assert!(!text.contains("ci escrita"), "the unshown key was added: {text}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("not added"), "{stderr}");

    let mut left: Vec<String> = std::fs::read_dir(folder.path())
        .expect("dir")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".tmp-"))
        .collect();
    left.sort();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

// ---- Start-up errors (issue 16): the cause first, the setting to change, at once. ----

fn backend() -> Command {
    let mut command = Command::new(binary("mcp-cursos-backend"));
    command.env_clear().env("RUST_LOG", "info").env("API_KEY", "chave-de-teste-longa-o-bastante").env("PORT", "0");
    command
}

/// `keys create --name ci --scope escrita` on `keys_file`, run to its end.
fn create_ci_key(keys_file: &std::path::Path) -> std::process::Output {
    let mut command = Command::new(binary("mcp-cursos-backend"));
    command.env_clear().args(["keys", "create", "--name", "ci", "--scope", "escrita"]).env("KEYS_FILE", keys_file);
    run_to_end(&mut command)
}

fn failed_with(output: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "should have failed: {stderr}");
    stderr
}

/// A port nobody listens on: bound, then released.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

fn postgres_url() -> String {
    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

#[test]
fn a_database_path_that_is_a_folder_fails_at_once_with_sqlite_s_cause_and_the_setting() {
    let folder = tempfile::tempdir().expect("temp dir");
    let output = run_to_end(backend().env("DATABASE_PATH", folder.path()));
    let stderr = failed_with(&output);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("Error: unable to open database file"), "the cause first: {stderr}");
    assert!(last.contains(&format!("DATABASE_PATH={}", folder.path().display())), "{stderr}");
    assert!(!stderr.contains("timed out"), "{stderr}");
}

#[test]
fn a_relative_database_path_that_cannot_be_created_names_the_setting_and_the_absolute_path() {
    // The default ./data/cursos.db, started in a folder where `data` is a regular file.
    let folder = tempfile::tempdir().expect("temp dir");
    std::fs::write(folder.path().join("data"), "").expect("file");
    let output = run_to_end(backend().current_dir(folder.path()));
    let stderr = failed_with(&output);
    let absolute = folder.path().join("data").join("cursos.db");
    assert!(stderr.contains(&format!("DATABASE_PATH={}", absolute.display())), "{stderr}");
    assert!(stderr.contains("given as ./data/cursos.db"), "{stderr}");
}

#[test]
fn a_database_url_that_is_not_postgresql_is_refused_without_echoing_it() {
    let folder = tempfile::tempdir().expect("temp dir");
    let database = folder.path().join("cursos.db");
    let output = run_to_end(
        backend().env("DATABASE_URL", "mysql://root:senha-secreta@db/cursos").env("DATABASE_PATH", &database),
    );
    let stderr = failed_with(&output);
    assert!(stderr.contains("DATABASE_URL is set but is not a PostgreSQL URL"), "{stderr}");
    assert!(!stderr.contains("senha-secreta"), "{stderr}");
    assert!(!database.exists(), "SQLite was not used instead");
}

#[test]
fn an_unknown_postgresql_role_fails_at_once_with_the_server_s_cause() {
    let url = postgres_url().replacen("postgres://postgres@", "postgres://papel_que_nao_existe@", 1);
    let output = run_to_end(backend().env("DATABASE_URL", &url));
    let stderr = failed_with(&output);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains(r#"role "papel_que_nao_existe" does not exist"#), "{stderr}");
    assert!(last.contains("DATABASE_URL"), "{stderr}");
    assert!(!stderr.contains("trying again"), "a permanent error is not retried: {stderr}");
}

#[test]
fn a_closed_postgresql_port_is_tried_again_with_a_line_per_try_then_fails_naming_the_setting() {
    let url = format!("postgres://postgres@127.0.0.1:{}/test", closed_port());
    let output = run_to_end(backend().env("DATABASE_URL", &url));
    let stderr = failed_with(&output);
    assert_eq!(stderr.matches("PostgreSQL is not accepting connections yet; trying again").count(), 4, "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("Error: connection to server at"), "{stderr}");
    assert!(last.contains("Connection refused") && last.contains("after 5 tries"), "{stderr}");
    assert!(last.contains("DATABASE_URL"), "{stderr}");
}

#[test]
fn a_port_in_use_is_named_and_nothing_is_created() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("address").port();
    let folder = tempfile::tempdir().expect("temp dir");
    let database = folder.path().join("cursos.db");
    let output = run_to_end(backend().env("PORT", port.to_string()).env("DATABASE_PATH", &database));
    let stderr = failed_with(&output);
    assert!(stderr.contains(&format!("cannot listen on HOST=127.0.0.1 PORT={port}")), "{stderr}");
    assert!(stderr.contains("choose another PORT"), "{stderr}");
    assert!(!database.exists(), "the database is not created when the port is taken");
}

#[test]
fn a_missing_keys_file_says_to_run_keys_create() {
    let folder = tempfile::tempdir().expect("temp dir");
    let keys_file = folder.path().join("keys");
    let output = run_to_end(
        backend().env_remove("API_KEY").env("KEYS_FILE", &keys_file).env("DATABASE_PATH", folder.path().join("c.db")),
    );
    let stderr = failed_with(&output);
    assert!(stderr.contains(&format!("KEYS_FILE={} does not exist", keys_file.display())), "{stderr}");
    assert!(stderr.contains("mcp-cursos-backend keys create --name"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn keys_create_makes_a_missing_folder_for_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let folder = tempfile::tempdir().expect("temp dir");
    let keys_file = folder.path().join("etc/mcp-cursos/keys");
    let output = create_ci_key(&keys_file);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("mcp_"), "the key is printed");
    assert!(std::fs::read_to_string(&keys_file).expect("keys file").contains("ci escrita"));
    for created in [folder.path().join("etc"), folder.path().join("etc/mcp-cursos")] {
        let mode = std::fs::metadata(&created).expect("folder").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", created.display());
    }
}

#[cfg(unix)]
#[test]
fn an_io_error_of_keys_create_is_printed_once() {
    // The keys file's folder cannot be created: its parent is a regular file.
    let folder = tempfile::tempdir().expect("temp dir");
    std::fs::write(folder.path().join("etc"), "").expect("file");
    let output = create_ci_key(&folder.path().join("etc/mcp-cursos/keys"));
    let stderr = failed_with(&output);
    assert_eq!(stderr.matches("Not a directory").count(), 1, "{stderr}");
}

#[test]
fn check_passes_on_a_working_configuration_with_one_line_per_finding() {
    let folder = tempfile::tempdir().expect("temp dir");
    let keys_file = folder.path().join("keys");
    assert!(create_ci_key(&keys_file).status.success());
    let database = folder.path().join("cursos.db");
    let output = run_to_end(
        backend()
            .env_remove("API_KEY")
            .arg("check")
            .env("KEYS_FILE", &keys_file)
            .env("DATABASE_PATH", &database)
            .env("PORT", closed_port().to_string()),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.lines().all(|line| line.starts_with("ok: ")), "{stdout}");
    assert!(stdout.contains("KEYS_FILE (1 keys)"), "{stdout}");
    assert!(stdout.contains(&format!("database {} opened and migrated", database.display())), "{stdout}");
}

#[test]
fn check_fails_with_a_line_naming_each_wrong_setting() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("address").port();
    let folder = tempfile::tempdir().expect("temp dir");
    let output = run_to_end(
        backend()
            .env_remove("API_KEY")
            .arg("check")
            .env("KEYS_FILE", folder.path().join("keys"))
            .env("DATABASE_PATH", folder.path())
            .env("ALLOWED_HOSTS", "mcp.example.com/x")
            .env("PORT", port.to_string()),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let errors: Vec<&str> = stdout.lines().filter(|line| line.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 4, "{stdout}");
    for setting in ["KEYS_FILE=", "ALLOWED_HOSTS", &format!("PORT={port}"), "DATABASE_PATH="] {
        assert!(errors.iter().any(|line| line.contains(setting)), "no line names {setting}: {stdout}");
    }
}

#[test]
fn check_warns_about_a_host_beyond_loopback_without_allowed_hosts_but_passes() {
    let folder = tempfile::tempdir().expect("temp dir");
    let output =
        run_to_end(backend().arg("check").env("HOST", "0.0.0.0").env("DATABASE_PATH", folder.path().join("cursos.db")));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    // In a container (the image sets HOST=0.0.0.0) a port published on loopback is served as is.
    let expected = if in_container() { "ok: HOST=0.0.0.0 in a container" } else { "warning: HOST=0.0.0.0" };
    assert!(stdout.lines().any(|line| line.starts_with(expected) && line.contains("ALLOWED_HOSTS")), "{stdout}");
}

// ---- The small texts of issue 25, item 6. ----

#[test]
fn with_rust_backtrace_set_a_start_up_error_is_still_one_line_and_exits_1() {
    let folder = tempfile::tempdir().expect("temp dir");
    let output = run_to_end(
        backend()
            .env("RUST_BACKTRACE", "1")
            .env("API_KEY", "curta")
            .env("DATABASE_PATH", folder.path().join("cursos.db")),
    );
    let stderr = failed_with(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let error_lines: Vec<&str> = stderr.lines().skip_while(|line| !line.starts_with("Error: ")).collect();
    assert_eq!(error_lines.len(), 1, "one line, no backtrace nor `Caused by`: {stderr}");
    assert!(
        error_lines[0].starts_with("Error: invalid API_KEY: ") && error_lines[0].contains("at least 16"),
        "{stderr}"
    );
}

#[test]
fn a_keys_file_that_is_a_folder_is_called_unreadable_with_the_path_and_what_to_do() {
    let folder = tempfile::tempdir().expect("temp dir");
    let keys_folder = folder.path().join("chaves");
    std::fs::create_dir(&keys_folder).expect("folder");
    let output = run_to_end(
        backend().env_remove("API_KEY").env("KEYS_FILE", &keys_folder).env("DATABASE_PATH", folder.path().join("c.db")),
    );
    let stderr = failed_with(&output);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains(&format!("cannot read KEYS_FILE={}", keys_folder.display())), "{stderr}");
    assert!(last.contains("not a regular file") && last.contains("point KEYS_FILE at the keys file"), "{stderr}");
    assert!(!last.contains("invalid"), "{stderr}");
}

#[test]
fn an_empty_variable_means_unset_so_an_empty_database_url_keeps_the_sqlite_file() {
    let folder = tempfile::tempdir().expect("temp dir");
    let database = folder.path().join("cursos.db");
    let output = run_to_end(
        backend()
            .arg("check")
            .env("DATABASE_URL", "")
            .env("RATE_LIMIT", "")
            .env("HOST", "")
            .env("DATABASE_PATH", &database)
            .env("PORT", closed_port().to_string()),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains(&format!("database {} opened and migrated", database.display())), "{stdout}");
    assert!(stdout.contains("HOST and PORT: 127.0.0.1:"), "an empty HOST is the default: {stdout}");
}

#[test]
fn a_loopback_database_url_that_cannot_be_reached_in_a_container_says_so() {
    let url = format!("postgres://postgres:senha-secreta@127.0.0.1:{}/test", closed_port());
    let output = run_to_end(backend().env("DATABASE_URL", &url));
    let stderr = failed_with(&output);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains("DATABASE_URL") && !stderr.contains("senha-secreta"), "{stderr}");
    // The machine this test runs on decides which message the binary must give.
    assert_eq!(last.contains("127.0.0.1 is the container itself"), in_container(), "{stderr}");
    if in_container() {
        assert!(last.contains("host.containers.internal") || last.contains("host.docker.internal"), "{stderr}");
    }
}
