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
    assert!(help.contains("[default: ./data/cursos.db]"), "{help}");
    assert!(help.contains("--resource-tools") && help.contains("[env: RESOURCE_TOOLS"), "{help}");
}
