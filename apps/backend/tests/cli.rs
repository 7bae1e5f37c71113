//! The binary documents every setting in `--help`, each with its environment variable.
//!
//! (Having an integration test also makes `cargo test` build this binary, which the end-to-end
//! tests in `tests/` then run.)

use std::process::Command;

#[test]
fn help_documents_every_setting_with_its_environment_variable() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-cursos-backend")).arg("--help").output().expect("run --help");
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).expect("utf-8");
    for (flag, variable) in [
        ("--host", "HOST"),
        ("--port", "PORT"),
        ("--database-path", "DATABASE_PATH"),
        ("--api-key", "API_KEY"),
        ("--keys-file", "KEYS_FILE"),
        ("--rate-limit", "RATE_LIMIT"),
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

#[test]
fn help_never_shows_the_api_key_taken_from_the_environment() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-cursos-backend"))
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
    let database = std::env::temp_dir().join(format!("mcp-cursos-cli-test-secret-{}/cursos.db", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-cursos-backend"))
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
    if let Some(folder) = database.parent() {
        let _ = std::fs::remove_dir_all(folder);
    }
}

#[test]
fn an_invalid_setting_fails_at_start_with_a_clear_message() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-cursos-backend"))
        .env("API_KEY", "chave com espaço")
        .env("PORT", "0")
        .env("DATABASE_PATH", std::env::temp_dir().join("mcp-cursos-cli-test-never-created/cursos.db"))
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid API_KEY"), "{stderr}");
    assert!(!stderr.contains("chave com espaço"), "the key is not echoed: {stderr}");
}

#[test]
fn no_auth_is_refused_on_an_address_other_than_loopback() {
    let database = std::env::temp_dir().join(format!("mcp-cursos-cli-test-no-auth-{}/cursos.db", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-cursos-backend"))
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
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-cursos-backend"))
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
