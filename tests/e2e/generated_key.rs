//! The key the backend generates when none is configured (issue 25, item 4; ADR 0048): printed
//! once at the first start, its hash kept beside the database so that a restart accepts the same
//! key, replaced by deleting its file, ignored when `API_KEY` or `KEYS_FILE` is set, refused when
//! the file is not one the server wrote; and `keys create` on a fresh data folder, as
//! `docs/deploy.md` shows it. On PostgreSQL (no data folder) a new key at every start, said.

use std::path::{Path, PathBuf};

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{
    Backend, Era, PostgresSchema, binary, fresh_database, restart_backend_keeping_generated_key, run_to_end,
    start_backend, start_backend_with, start_backend_with_keys_file,
};

/// Where the backend keeps the generated key of the database at `database`.
fn generated_key_file(database: &Path) -> PathBuf {
    database.parent().expect("the database's folder").join("generated-key")
}

/// `POST /mcp` (an `initialize`) presenting `key`: its status.
async fn status_with_key(backend: &Backend, key: &str) -> StatusCode {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "chave", "version": "1"}}});
    let bearer = format!("Bearer {key}");
    let headers = [("mcp-protocol-version", "2025-11-25"), ("authorization", bearer.as_str())];
    mcp_cursos_e2e::post(&backend.mcp_url, &headers, body.to_string()).await.status()
}

/// The key a client sends is accepted: an MCP client lists the tools with it.
async fn accepted(backend: &Backend, key: &str) {
    let client = backend.client_with_key(key, Era::Initialize).await;
    assert_eq!(client.list_all_tools().await.expect("tools with the key").len(), 3);
    client.cancel().await.expect("close");
}

/// The backend with no key configured, on `database`, run to its end (a start that is refused).
fn refused_start(database: &Path) -> std::process::Output {
    run_to_end(
        std::process::Command::new(binary("mcp-cursos-backend"))
            .env_clear()
            .env("RUST_LOG", "info")
            .env("HOST", "127.0.0.1")
            .env("PORT", "0")
            .env("DATABASE_PATH", database),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_key_is_kept_as_its_hash_only_and_a_restart_accepts_it_without_printing_it_again() {
    let (_folder, database) = fresh_database();
    let first = start_backend(&database, None).await;
    let key = first.api_key.clone();
    accepted(&first, &key).await;
    let first_stdout = first.stdout.clone();
    assert!(first.stop().await.success());
    let printed = first_stdout.all_at_end().await;
    assert!(printed.contains(&format!("API_KEY={key}")), "{printed}");
    assert!(printed.contains("accepts the same key after a restart"), "{printed}");
    assert!(!printed.contains("changes at every start"), "{printed}");

    let kept = generated_key_file(&database);
    let text = std::fs::read_to_string(&kept).expect("the generated key's file");
    assert!(!text.contains(&key) && !text.contains(&key[4..]), "never the key itself:\n{text}");
    let line: Vec<&str> = text.lines().filter(|line| !line.starts_with('#')).collect();
    assert_eq!(line.len(), 1, "{text}");
    let fields: Vec<&str> = line[0].split(' ').collect();
    assert!(fields.len() == 2 && fields[0].starts_with("sha256:") && fields[0].len() == 71, "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kept).expect("metadata").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "owner only");
    }

    let second = restart_backend_keeping_generated_key(&database, &key, &[]).await;
    accepted(&second, &key).await;
    // The key with its last character changed (a key ending in '0' once made this "wrong" key the key).
    let last = if key.ends_with('0') { '1' } else { '0' };
    let wrong = format!("{}{last}", &key[..key.len() - 1]);
    assert_ne!(wrong, key);
    assert_eq!(status_with_key(&second, &wrong).await, StatusCode::UNAUTHORIZED, "a wrong key is still refused");
    let log = second.stderr.all();
    let said = format!("the API key generated on {} is in use", fields[1]);
    assert!(log.contains(&said) && log.contains(&kept.display().to_string()), "{said}:\n{log}");
    assert!(log.contains("delete that file and restart"), "how to replace it:\n{log}");
    let (stdout, stderr) = (second.stdout.clone(), second.stderr.clone());
    assert!(second.stop().await.success());
    assert_eq!(stdout.all_at_end().await, "", "nothing printed on stdout at a later start");
    assert!(!stderr.all().contains(&key), "the key is never logged");
    assert_eq!(std::fs::read_to_string(&kept).expect("file"), text, "the file is left as it was");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_generated_key_file_gives_a_new_key_at_the_next_start() {
    let (_folder, database) = fresh_database();
    let first = start_backend(&database, None).await;
    let old_key = first.api_key.clone();
    assert!(first.stop().await.success());
    std::fs::remove_file(generated_key_file(&database)).expect("delete the file");

    let second = start_backend(&database, None).await;
    assert_ne!(second.api_key, old_key, "a new key");
    accepted(&second, &second.api_key).await;
    assert_eq!(status_with_key(&second, &old_key).await, StatusCode::UNAUTHORIZED, "the old key is gone");
    assert!(second.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_api_key_set_the_generated_key_file_is_not_used_and_the_log_says_so() {
    let (_folder, database) = fresh_database();
    let first = start_backend(&database, None).await;
    let generated = first.api_key.clone();
    assert!(first.stop().await.success());
    let kept = generated_key_file(&database);
    let before = std::fs::read_to_string(&kept).expect("file");

    let configured = "chave-configurada-pelo-operador";
    let backend = start_backend(&database, Some(configured)).await;
    accepted(&backend, configured).await;
    assert_eq!(status_with_key(&backend, &generated).await, StatusCode::UNAUTHORIZED, "API_KEY takes precedence");
    let log = backend.stderr.all();
    assert!(log.contains("source=API_KEY"), "what is in use:\n{log}");
    assert!(
        log.contains(&format!("API_KEY is set: the generated key kept in {} is not accepted", kept.display())),
        "{log}"
    );
    let stdout = backend.stdout.clone();
    assert!(backend.stop().await.success());
    assert_eq!(stdout.all_at_end().await, "", "no key printed");
    assert_eq!(std::fs::read_to_string(&kept).expect("file"), before, "left as it was");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_key_file_the_server_did_not_write_is_refused_naming_it_and_left_as_it_is() {
    let (folder, database) = fresh_database();
    std::fs::create_dir_all(database.parent().expect("folder")).expect("the data folder");
    let kept = generated_key_file(&database);
    // A key pasted into the file, as someone might to "set" it.
    let pasted = "mcp_4f0c9e1d2b3a49586776a5b4c3d2e1f00112233445566778899aabbccddeeff";
    std::fs::write(&kept, format!("{pasted}\n")).expect("write");
    let output = refused_start(&database);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains(&format!("the generated key's file {} is not valid", kept.display())), "{stderr}");
    assert!(last.contains("delete it") && last.contains("set API_KEY or KEYS_FILE"), "what to do:\n{stderr}");
    assert!(!stderr.contains(pasted), "never echoed:\n{stderr}");
    assert!(output.stdout.is_empty(), "no key printed");
    assert_eq!(std::fs::read_to_string(&kept).expect("file"), format!("{pasted}\n"), "nothing overwritten");

    // `check` says the same, as an error, without serving.
    let check = run_to_end(
        std::process::Command::new(binary("mcp-cursos-backend"))
            .env_clear()
            .env("HOST", "127.0.0.1")
            .env("PORT", "0")
            .env("DATABASE_PATH", &database)
            .arg("check"),
    );
    assert_eq!(check.status.code(), Some(1));
    let findings = String::from_utf8_lossy(&check.stdout);
    assert!(
        findings.contains(&format!("error: the generated key's file {} is not valid", kept.display())),
        "{findings}"
    );

    // Not a regular file: a directory in its place.
    std::fs::remove_file(&kept).expect("remove");
    std::fs::create_dir(&kept).expect("a directory");
    let output = refused_start(&database);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is not a regular file (it is a directory)"), "{stderr}");
    assert!(kept.is_dir(), "left as it is");
    drop(folder);
}

/// `docs/deploy.md`: the container runs on its generated key; `keys create` run beside it (as
/// `podman exec` does) makes the first key of a fresh volume; started again with `KEYS_FILE`,
/// the server accepts that key and no longer the generated one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_create_makes_the_first_keys_file_of_a_fresh_data_folder_beside_a_running_server() {
    let (_folder, database) = fresh_database();
    let data = database.parent().expect("the data folder").to_owned();
    let first = start_backend(&database, None).await;
    let generated = first.api_key.clone();
    let keys_file = data.join("keys");
    let output = run_to_end(
        std::process::Command::new(binary("mcp-cursos-backend"))
            .env_clear()
            .env("DATABASE_PATH", &database)
            .args(["keys", "create", "--keys-file"])
            .arg(&keys_file)
            .args(["--name", "ana", "--scope", "escrita"]),
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let ana = String::from_utf8(output.stdout).expect("utf-8").trim().to_owned();
    assert!(ana.starts_with("mcp_"), "the key, printed once: {ana}");
    accepted(&first, &generated).await;
    assert!(first.stop().await.success());

    let backend = start_backend_with_keys_file(&database, &keys_file, &[]).await;
    accepted(&backend, &ana).await;
    assert_eq!(status_with_key(&backend, &generated).await, StatusCode::UNAUTHORIZED, "KEYS_FILE takes precedence");
    let log = backend.stderr.all();
    assert!(log.contains(&format!("source=KEYS_FILE={}", keys_file.display())), "{log}");
    assert!(log.contains("KEYS_FILE is set: the generated key kept in"), "{log}");
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_without_a_key_each_start_prints_a_new_key_and_warns() {
    let Some(schema) = PostgresSchema::create() else {
        return;
    };
    let (_folder, database) = fresh_database();
    let url = schema.url();
    let mut keys = Vec::new();
    for _ in 0..2 {
        let backend = start_backend_with(&database, None, &[("DATABASE_URL", &url)]).await;
        accepted(&backend, &backend.api_key).await;
        let (stdout, log) = (backend.stdout.clone(), backend.stderr.all());
        assert!(log.contains("WARN") && log.contains("for this start only"), "{log}");
        keys.push(backend.api_key.clone());
        assert!(backend.stop().await.success());
        let printed = stdout.all_at_end().await;
        assert!(printed.contains("changes at every start") && printed.contains("DATABASE_URL"), "{printed}");
    }
    assert_ne!(keys[0], keys[1], "a new key at every start");
    assert!(!generated_key_file(&database).exists(), "no file beside an unused DATABASE_PATH");
}
