//! The operator's policy (ADR 0036) on the real binaries: the policy file edited while the server
//! runs, the clients told on both eras, a disabled tool's call changing nothing, re-enabling; a
//! start with an invalid file refused naming the setting; the old tool names over stdio.

use std::path::Path;

use mcp_cursos_e2e::{ListsRecorder, course_uri, next_notice, protocol_error, read_json, tool_names, try_call as call};
use rmcp::ServiceError;
use rmcp::model::SubscriptionFilter;
use serde_json::json;
use tokio::sync::mpsc;

use crate::support::{Era, PATIENCE, binary, fresh_database, run_to_end, start_backend_with, stdio_client_with_env};

/// What an operator's editor or script does: write a temporary file, then rename it over the old.
fn write_policy(path: &Path, text: &str) {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, text).expect("write");
    std::fs::rename(&temporary, path).expect("rename");
}

fn refusal_message(outcome: Result<rmcp::model::CallToolResult, ServiceError>) -> String {
    let error = protocol_error(outcome, "a -32602 refusal");
    assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    error.message.to_string()
}

#[tokio::test]
async fn an_operator_puts_a_running_backend_in_read_only_mode_and_back_through_the_policy_file() {
    let (folder, database) = fresh_database();
    let policy_file = folder.path().join("politica");
    std::fs::write(&policy_file, "# tudo ativo\n").expect("write");
    let policy_setting = policy_file.to_str().expect("UTF-8 path");
    let backend = start_backend_with(
        &database,
        Some("chave-de-politica-longa"),
        &[("POLICY_FILE", policy_setting), ("METRICS", "true")],
    )
    .await;
    let (sender, mut received) = mpsc::unbounded_channel();
    let session = backend.client_with(ListsRecorder(sender), Era::Initialize).await;
    let modern = backend.client(Era::Discover).await;
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut stream = modern.listen(filter).await.expect("subscriptions/listen");
    let created = call(&session, "criar_curso", json!({"titulo": "Rust", "cargaHoraria": 10})).await.expect("created");
    let course = created.structured_content.expect("the course");
    let course_uri = course_uri(&course);

    write_policy(&policy_file, "somente-leitura\n");
    // Both eras are told, within the reload interval: a 2025 session and a 2026 listen stream.
    assert_eq!(next_notice(&mut received).await, "tools");
    let notice = tokio::time::timeout(PATIENCE, stream.next()).await.expect("in time").expect("open").expect("notice");
    assert_eq!(serde_json::to_value(&notice).expect("json")["method"], "notifications/tools/list_changed");
    assert!(tool_names(&session).await.is_empty(), "no writing tool is listed");
    assert!(tool_names(&modern).await.is_empty(), "the notice dropped the 2026 client's cached listing");

    let message = refusal_message(call(&session, "atualizar_curso", json!({"id": course["id"], "titulo": "Go"})).await);
    assert!(message.contains("modo somente leitura"), "{message}");
    assert!(message.contains("atualizar_curso está desativada pelo operador"), "{message}");
    let message = refusal_message(call(&modern, "criar_curso", json!({"titulo": "Go", "cargaHoraria": 5})).await);
    assert!(message.contains("criar_curso está desativada pelo operador"), "{message}");
    // Nothing changed, and reads, health and metrics keep working.
    assert_eq!(read_json(&session, &course_uri).await, course);
    assert_eq!(read_json(&modern, "cursos://catalogo").await["total"], 1);
    let health = reqwest::get(format!("{}/health", backend.base_url)).await.expect("health");
    assert!(health.status().is_success());
    let metrics = reqwest::get(format!("{}/metrics", backend.base_url)).await.expect("metrics");
    assert!(metrics.status().is_success());

    // A typo keeps the policy in force (and says so in the log), it never re-enables a tool.
    write_policy(&policy_file, "desativar ferramenta criar-curso\n");
    backend.wait_for_log("the policy file is not valid").await;
    assert!(tool_names(&session).await.is_empty(), "still read-only");

    write_policy(&policy_file, "# de volta\n");
    assert_eq!(next_notice(&mut received).await, "tools");
    assert_eq!(tool_names(&session).await, ["arquivar_curso", "atualizar_curso", "criar_curso"]);
    let renamed = call(&session, "atualizar_curso", json!({"id": course["id"], "titulo": "Rust 2024"})).await;
    assert_eq!(renamed.expect("updated").is_error, Some(false));
    stream.cancel().await.expect("cancel");
    session.cancel().await.expect("close");
    modern.cancel().await.expect("close");
    assert!(backend.stop().await.success());
}

#[test]
fn a_backend_with_an_invalid_policy_file_does_not_start_and_names_the_setting_and_the_line() {
    let (folder, database) = fresh_database();
    let policy_file = folder.path().join("politica");
    std::fs::write(&policy_file, "somente-leitura\ndesativar ferramenta apagar_curso\n").expect("write");
    let output = run_to_end(
        std::process::Command::new(binary("mcp-cursos-backend"))
            .env_clear()
            .env("API_KEY", "chave-de-teste-longa-o-bastante")
            .env("PORT", "0")
            .env("DATABASE_PATH", &database)
            .env("POLICY_FILE", &policy_file),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("line 2: unknown tool \"apagar_curso\""), "{stderr}");
    assert!(stderr.contains(&format!("invalid POLICY_FILE={}", policy_file.display())), "{stderr}");
    assert!(!database.exists(), "refused before the database was created");
}

/// Issue 24, item 9: a FIFO as `POLICY_FILE` is refused at start without blocking, as is an empty
/// file (which a reread treats as being written: one meaning); a FIFO put in place of the file
/// while the backend runs keeps the policy in force, and SIGTERM still stops the backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_or_an_empty_policy_file_is_refused_and_never_blocks_the_server() {
    let (folder, database) = fresh_database();
    let policy_file = folder.path().join("politica");
    let mkfifo = |path: &Path| {
        let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo");
        assert!(status.success(), "mkfifo");
    };
    mkfifo(&policy_file);
    let start = |policy_file: &Path| {
        run_to_end(
            std::process::Command::new(binary("mcp-cursos-backend"))
                .env_clear()
                .env("API_KEY", "chave-de-teste-longa-o-bastante")
                .env("PORT", "0")
                .env("DATABASE_PATH", &database)
                .env("POLICY_FILE", policy_file),
        )
    };
    for (what, says) in [("a FIFO", "not a regular file"), ("an empty file", "the file is empty")] {
        if what == "an empty file" {
            std::fs::remove_file(&policy_file).expect("remove the FIFO");
            std::fs::write(&policy_file, "").expect("empty");
        }
        let output = start(&policy_file);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{what}: {stderr}");
        assert!(stderr.contains(&format!("invalid POLICY_FILE={}", policy_file.display())), "{what}: {stderr}");
        assert!(stderr.contains(says), "{what}: {stderr}");
    }

    std::fs::write(&policy_file, "desativar ferramenta criar_curso\n").expect("write");
    let setting = policy_file.to_str().expect("UTF-8 path");
    let backend =
        start_backend_with(&database, Some("chave-de-teste-longa-o-bastante"), &[("POLICY_FILE", setting)]).await;
    std::fs::remove_file(&policy_file).expect("remove");
    mkfifo(&policy_file);
    let started = std::time::Instant::now();
    while !backend.stderr.all().contains("not a regular file") {
        assert!(started.elapsed() < PATIENCE, "the FIFO was never reported:\n{}", backend.stderr.all());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let client = backend.client(Era::Discover).await;
    let tools = tool_names(&client).await;
    assert!(!tools.contains(&"criar_curso".to_owned()), "the policy in force is kept: {tools:?}");
    let _ = client.cancel().await;
    assert!(backend.stop().await.success(), "SIGTERM stops a backend whose policy file is a FIFO");
}

#[tokio::test]
async fn the_stdio_app_follows_its_policy_file_and_answers_old_tool_names_in_portuguese() {
    let (folder, database) = fresh_database();
    let policy_file = folder.path().join("politica");
    std::fs::write(&policy_file, "desativar prompt criar-curso\n").expect("write");
    let policy_setting = policy_file.to_str().expect("UTF-8 path");
    let (sender, mut received) = mpsc::unbounded_channel();
    let (client, _stderr) =
        stdio_client_with_env(ListsRecorder(sender), &database, Era::Initialize, &[("POLICY_FILE", policy_setting)])
            .await;
    assert!(client.list_all_prompts().await.expect("prompts/list").is_empty(), "off from the start");

    write_policy(&policy_file, "desativar ferramenta criar_curso\n");
    let mut seen = vec![next_notice(&mut received).await, next_notice(&mut received).await];
    seen.sort_unstable();
    assert_eq!(seen, ["prompts", "tools"]);
    assert_eq!(tool_names(&client).await, ["arquivar_curso", "atualizar_curso"]);
    let message = refusal_message(call(&client, "criar_curso", json!({"titulo": "Rust", "cargaHoraria": 10})).await);
    assert!(message.contains("criar_curso está desativada pelo operador"), "{message}");
    assert_eq!(read_json(&client, "cursos://catalogo").await["total"], 0, "nothing was written");

    let message = refusal_message(call(&client, "listar_cursos", json!({})).await);
    assert!(message.contains("leia o recurso cursos://catalogo"), "{message}");
    let message = refusal_message(call(&client, "buscar_curso", json!({"id": "x"})).await);
    assert!(message.contains("cursos://{uuid}"), "{message}");
    let message = refusal_message(call(&client, "ferramenta_inexistente", json!({})).await);
    assert!(message.starts_with("Ferramenta desconhecida"), "{message}");
    client.cancel().await.expect("close");
}

/// Issue 24, item 9: a policy rule for a catalog no key names and no course uses (a typo such as
/// `time-azull`) applied to no one, silently. Now the backend warns at start and at each reload,
/// naming it; the catalog its key is in is not named.
#[tokio::test]
async fn a_policy_catalog_that_no_key_and_no_course_uses_is_warned_of_at_start_and_on_reload() {
    let (folder, database) = fresh_database();
    let policy_file = folder.path().join("politica.txt");
    std::fs::write(
        &policy_file,
        "catalogo padrao desativar ferramenta arquivar_curso\ncatalogo time-azull somente-leitura\n",
    )
    .expect("write");
    let setting = policy_file.to_str().expect("UTF-8 path");
    let backend =
        start_backend_with(&database, Some("chave-de-teste-longa-o-bastante"), &[("POLICY_FILE", setting)]).await;
    backend.wait_for_log("catalog=time-azull").await;
    let warnings = |backend: &crate::support::Backend| -> Vec<String> {
        backend.stderr.all().lines().filter(|line| line.contains("apply to no one")).map(str::to_owned).collect()
    };
    assert!(warnings(&backend).iter().all(|line| !line.contains("catalog=padrao")), "{:?}", warnings(&backend));

    // Rewritten with another typo: warned of again, by its name.
    std::fs::write(&policy_file, "catalogo time-verde somente-leitura\n").expect("write");
    backend.wait_for_log("catalog=time-verde").await;
    assert!(warnings(&backend).len() >= 2, "{:?}", warnings(&backend));
    assert!(backend.stop().await.success());
}
