//! `mcp-cursos-stdio` as a host starts it: `--help` documents its settings, the default database
//! lives in the per-user data folder (ADR 0032), start-up errors name the setting (ADR 0028),
//! SIGINT stops it gracefully and `LOG_FORMAT=json` writes JSON lines.

use std::process::Command;

use crate::support::{binary, run_to_end};

#[test]
fn help_documents_every_setting_with_its_default_and_environment_variable() {
    let output = Command::new(binary("mcp-cursos-stdio")).arg("--help").output().expect("run --help");
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).expect("utf-8");
    assert!(help.contains("--database-path"), "{help}");
    assert!(help.contains("[env: DATABASE_PATH"), "{help}");
    assert!(help.contains("per-user data folder") && !help.contains("./data/cursos.db"), "{help}");
    assert!(help.contains("--resource-tools") && help.contains("[env: RESOURCE_TOOLS"), "{help}");
    assert!(help.contains("--policy-file") && help.contains("[env: POLICY_FILE"), "{help}");
}

#[test]
fn without_database_path_the_catalog_lives_in_the_per_user_data_folder_whatever_the_working_directory() {
    let home = std::env::temp_dir().join(format!("mcp-cursos-stdio-home-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).expect("home");
    let xdg = home.join("xdg-data");
    for (xdg_data_home, expected) in
        [(None, home.join(".local/share/mcp-cursos/cursos.db")), (Some(&xdg), xdg.join("mcp-cursos/cursos.db"))]
    {
        let mut command = Command::new(binary("mcp-cursos-stdio"));
        // Started in / with stdin closed at once, as a launcher in an unknown folder might.
        command.env_clear().env("HOME", &home).env("RUST_LOG", "info").current_dir("/");
        if let Some(folder) = xdg_data_home {
            command.env("XDG_DATA_HOME", folder);
        }
        let output = command.stdin(std::process::Stdio::null()).output().expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        assert!(expected.exists(), "{} was not created: {stderr}", expected.display());
        assert!(stderr.contains(&expected.display().to_string()), "stderr names the file: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&home);
}

// ---- Start-up errors and stopping (issue 16). ----

fn stdio_app(folder: &std::path::Path) -> Command {
    let mut command = Command::new(binary("mcp-cursos-stdio"));
    command.env_clear().env("RUST_LOG", "info").env("HOME", folder);
    command
}

#[test]
fn a_database_path_that_is_a_folder_fails_at_once_with_sqlite_s_cause_and_the_setting() {
    let temporary = tempfile::tempdir().expect("temp dir");
    let folder = temporary.path();
    let output = run_to_end(stdio_app(folder).env("DATABASE_PATH", folder));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("Error: unable to open database file"), "the cause first: {stderr}");
    assert!(last.contains(&format!("DATABASE_PATH={}", folder.display())), "{stderr}");
}

#[test]
fn with_rust_backtrace_set_a_start_up_error_is_still_one_line_and_exits_1() {
    let temporary = tempfile::tempdir().expect("temp dir");
    let folder = temporary.path();
    let output = run_to_end(stdio_app(folder).env("RUST_BACKTRACE", "1").env("DATABASE_URL", "mysql://db/cursos"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let error_lines: Vec<&str> = stderr.lines().skip_while(|line| !line.starts_with("Error: ")).collect();
    assert_eq!(error_lines.len(), 1, "one line, no backtrace: {stderr}");
    assert!(error_lines[0].contains("DATABASE_URL is set but is not a PostgreSQL URL"), "{stderr}");
}

#[test]
fn an_empty_database_url_means_unset() {
    let temporary = tempfile::tempdir().expect("temp dir");
    let folder = temporary.path();
    let database = folder.join("cursos.db");
    let output = run_to_end(stdio_app(folder).arg("check").env("DATABASE_URL", "").env("DATABASE_PATH", &database));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(database.exists(), "the SQLite file was used: {stdout}");
}

#[test]
fn a_database_url_that_is_not_postgresql_is_refused() {
    let temporary = tempfile::tempdir().expect("temp dir");
    let folder = temporary.path();
    let database = folder.join("cursos.db");
    let output = run_to_end(
        stdio_app(folder).env("DATABASE_URL", "sqlite://senha-secreta@cursos").env("DATABASE_PATH", &database),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("DATABASE_URL is set but is not a PostgreSQL URL"), "{stderr}");
    assert!(!stderr.contains("senha-secreta"), "{stderr}");
    assert!(!database.exists(), "SQLite was not used instead");
}

#[test]
fn check_reports_the_database_on_one_line_and_exits_with_its_verdict() {
    let temporary = tempfile::tempdir().expect("temp dir");
    let folder = temporary.path();
    let database = folder.join("cursos.db");
    let good = run_to_end(stdio_app(folder).arg("check").env("DATABASE_PATH", &database));
    let stdout = String::from_utf8_lossy(&good.stdout);
    assert!(good.status.success(), "{stdout}");
    assert_eq!(stdout, format!("ok: database {} opened and migrated\n", database.display()));

    let bad = run_to_end(stdio_app(folder).arg("check").env("DATABASE_PATH", folder));
    let stdout = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1), "{stdout}");
    assert!(stdout.starts_with("error: unable to open database file") && stdout.contains("DATABASE_PATH="), "{stdout}");
}

/// SIGINT (Ctrl-C in a terminal, or a host stopping the app) ends the session as a closed stdin
/// does: the "stopped" line, exit status 0. Before, the process died of the signal.
#[cfg(unix)]
#[test]
fn sigint_stops_the_app_gracefully_with_its_stopped_line() {
    use std::io::BufRead;
    let temporary = tempfile::tempdir().expect("temp dir");
    let folder = temporary.path();
    let mut child = stdio_app(folder)
        .env("DATABASE_PATH", folder.join("cursos.db"))
        // stdin stays open: the app waits for the host.
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).expect("read") > 0, "ended before it was ready: {seen}");
        seen.push_str(&line);
        if line.contains("ready on stdin/stdout") {
            break;
        }
    }
    let signalled = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill");
    assert!(signalled.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running 20 s after SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("read");
    assert!(status.success(), "{status}: {seen}{rest}");
    assert!(rest.contains("SIGINT received") && rest.contains("mcp-cursos-stdio stopped"), "{rest}");
}

#[test]
fn with_log_format_json_every_stderr_line_is_a_json_object_with_its_fields() {
    let folder = std::env::temp_dir().join(format!("mcp-cursos-stdio-json-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let database = folder.join("cursos.db");
    let output = Command::new(binary("mcp-cursos-stdio"))
        .env_clear()
        .env("DATABASE_PATH", &database)
        .env("RUST_LOG", "info")
        .env("LOG_FORMAT", "json")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line:?}")))
        .collect();
    assert!(!lines.is_empty(), "some log lines");
    assert!(
        lines.iter().all(|line| line["level"].is_string() && line["message"].is_string()),
        "level and message at the top level: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&folder);
}
