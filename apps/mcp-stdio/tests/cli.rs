//! The binary documents its setting in `--help`.
//!
//! (Having an integration test also makes `cargo test` build this binary, which the end-to-end
//! tests in `tests/` then run.)

use std::process::Command;

#[test]
fn help_documents_every_setting_with_its_default_and_environment_variable() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-cursos-stdio")).arg("--help").output().expect("run --help");
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).expect("utf-8");
    assert!(help.contains("--database-path"), "{help}");
    assert!(help.contains("[env: DATABASE_PATH"), "{help}");
    assert!(help.contains("per-user data folder") && !help.contains("./data/cursos.db"), "{help}");
    assert!(help.contains("--resource-tools") && help.contains("[env: RESOURCE_TOOLS"), "{help}");
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
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-cursos-stdio"));
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

#[test]
fn with_log_format_json_every_stderr_line_is_a_json_object_with_its_fields() {
    let folder = std::env::temp_dir().join(format!("mcp-cursos-stdio-json-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let database = folder.join("cursos.db");
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-cursos-stdio"))
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
