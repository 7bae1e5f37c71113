//! Deployment defaults (issue 16, ADR 0029) on the real process: probes behind a load balancer
//! and refusals that say what to change on every interface, the end of a session, the printed
//! client configurations and machine-readable logs. CORS for browser clients is tested in process
//! (`apps/backend/src/app_tests.rs`).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Backend, Era, PATIENCE, fresh_database, in_container, start_backend, start_backend_with};

const KEY: &str = "chave-de-teste-da-implantacao";

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "implantacao", "version": "1"}}})
    .to_string()
}

/// [`mcp_cursos_e2e::post`] of `body` with `mcp-protocol-version: 2025-11-25` and `headers`.
async fn post(backend: &Backend, headers: &[(&str, &str)], body: String) -> reqwest::Response {
    let mut all = vec![("mcp-protocol-version", "2025-11-25")];
    all.extend_from_slice(headers);
    mcp_cursos_e2e::post(&backend.mcp_url, &all, body).await
}

/// Polls `condition` on the lines collected so far until it holds, or fails after [`PATIENCE`].
async fn wait_for(what: &str, lines: impl Fn() -> String, condition: impl Fn(&str) -> bool) -> String {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let text = lines();
        if condition(&text) {
            return text;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what} never appeared in:\n{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_every_interface_without_allowed_hosts_probes_still_answer_and_a_refusal_says_what_to_set() {
    let (_folder, database) = fresh_database();
    let mut backend = start_backend_with(&database, Some(KEY), &[("HOST", "0.0.0.0")]).await;
    backend.base_url = backend.base_url.replace("0.0.0.0", "127.0.0.1");
    backend.mcp_url = backend.mcp_url.replace("0.0.0.0", "127.0.0.1");
    let port = backend.base_url.rsplit(':').next().expect("port").to_owned();
    let logs = backend.stderr.all();
    let warned_at_start = logs
        .lines()
        .any(|line| line.contains("WARN") && line.contains("HOST=0.0.0.0") && line.contains("ALLOWED_HOSTS"));
    // In a container, HOST=0.0.0.0 is the image's default and a port published on loopback is
    // served as is: the first refused Host is what warns (below), not the start (issue 25).
    assert_eq!(warned_at_start, !in_container(), "a warning at start names HOST and ALLOWED_HOSTS:\n{logs}");

    // A load balancer's probe sends the machine's address as Host.
    let machine = format!("10.1.2.3:{port}");
    for probe in ["health", "ready"] {
        let response = reqwest::Client::new()
            .get(format!("{}/{probe}", backend.base_url))
            .header("host", &machine)
            .send()
            .await
            .expect("probe");
        assert_eq!(response.status(), StatusCode::OK, "/{probe} answers whatever the Host");
    }

    let bearer = format!("Bearer {KEY}");
    let refused = post(&backend, &[("authorization", &bearer), ("host", &machine)], initialize_body()).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let body: Value = refused.json().await.expect("json");
    // A JSON-RPC error (SDK clients show its message), the operator's fields in its data.
    assert_eq!(body["error"]["code"], -32003, "{body}");
    assert_eq!(body["error"]["data"]["host"], machine.as_str(), "{body}");
    assert_eq!(body["error"]["data"]["setting"], "ALLOWED_HOSTS", "{body}");
    let message = body["error"]["message"].as_str().expect("message");
    assert!(message.contains(&machine) && message.contains("ALLOWED_HOSTS"), "{message}");
    wait_for(
        "the refusal's warning",
        || backend.stderr.all(),
        |logs| {
            logs.lines().any(|line| line.contains("WARN") && line.contains(&machine) && line.contains("ALLOWED_HOSTS"))
        },
    )
    .await;

    let headers = [("authorization", bearer.as_str()), ("origin", "https://app.example.com")];
    let refused = post(&backend, &headers, initialize_body()).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["data"]["origin"], "https://app.example.com", "{body}");
    assert_eq!(body["error"]["data"]["setting"], "ALLOWED_ORIGINS", "{body}");
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_live_session_answers_204_as_the_python_and_typescript_sdks_expect() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some(KEY)).await;
    let bearer = format!("Bearer {KEY}");
    let initialized = post(&backend, &[("authorization", &bearer)], initialize_body()).await;
    assert_eq!(initialized.status(), StatusCode::OK);
    let session = initialized.headers().get("mcp-session-id").expect("session").to_str().expect("ascii").to_owned();
    let notice = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let accepted = post(&backend, &[("authorization", &bearer), ("mcp-session-id", &session)], notice).await;
    assert_eq!(accepted.status(), StatusCode::ACCEPTED, "notices keep their 202");
    let delete = || {
        reqwest::Client::new()
            .delete(&backend.mcp_url)
            .header("authorization", &bearer)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
    };
    let deleted = delete().await.expect("delete");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert!(deleted.bytes().await.expect("body").is_empty());
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let after = post(&backend, &[("authorization", &bearer), ("mcp-session-id", &session)], list).await;
    assert_eq!(after.status(), StatusCode::NOT_FOUND, "the session is gone");
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_key_comes_with_the_configuration_of_every_client_the_readme_covers() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, None).await;
    let key = backend.api_key.clone();
    let url = backend.mcp_url.clone();
    let stdout =
        wait_for("the Claude Code command line", || backend.stdout.all(), |text| text.contains("claude mcp add")).await;
    let blocks: Vec<Value> = stdout
        .split("\n\n")
        .filter_map(|block| {
            let json_start = block.find('{')?;
            block.lines().next().is_some_and(|line| line.starts_with('#')).then(|| &block[json_start..])
        })
        .map(|text| serde_json::from_str(text).unwrap_or_else(|error| panic!("{error}: {text}")))
        .collect();
    assert_eq!(blocks.len(), 3, "Cursor, VS Code, Claude Desktop:\n{stdout}");
    let bearer = format!("Bearer {key}");
    let cursor = &blocks[0]["mcpServers"]["cursos"];
    assert_eq!((cursor["url"].as_str(), cursor["headers"]["Authorization"].as_str()), (Some(&*url), Some(&*bearer)));
    let vscode = &blocks[1]["servers"]["cursos"];
    assert_eq!(vscode["type"], "http");
    assert_eq!((vscode["url"].as_str(), vscode["headers"]["Authorization"].as_str()), (Some(&*url), Some(&*bearer)));
    let desktop = &blocks[2]["mcpServers"]["cursos"];
    assert_eq!(desktop["command"], "npx");
    assert_eq!(
        desktop["args"],
        json!(["-y", "mcp-remote", url, "--header", "Authorization: Bearer ${CURSOS_API_KEY}"])
    );
    assert_eq!(desktop["env"]["CURSOS_API_KEY"], key.as_str());
    let command = stdout.lines().find(|line| line.starts_with("claude mcp add")).expect("command line");
    assert_eq!(command, format!("claude mcp add --transport http cursos {url} --header \"Authorization: {bearer}\""));
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_log_format_json_each_mcp_request_is_one_json_event_with_its_fields_and_no_key() {
    let (_folder, database) = fresh_database();
    let backend = start_backend_with(&database, Some(KEY), &[("LOG_FORMAT", "json")]).await;
    let client = backend.client(Era::Initialize).await;
    let arguments = json!({"titulo": "Observabilidade", "cargaHoraria": 8});
    mcp_cursos_e2e::try_call(&client, "criar_curso", arguments).await.expect("call");
    client.cancel().await.expect("close");
    // A refused request (no session): its outcome is logged too.
    let unknown =
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "nao_existe", "arguments": {}}});
    let refused = post(&backend, &[("authorization", &format!("Bearer {KEY}"))], unknown.to_string()).await;
    drop(refused.bytes().await);
    let events = |text: &str| -> Vec<Value> {
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}")))
            .collect()
    };
    // Both events: each is written when its response has been sent, through the log's writer
    // thread, so the refusal's may reach stderr after the test has read the answer.
    let logs = wait_for(
        "the criar_curso and nao_existe events",
        || backend.stderr.all(),
        |text| {
            let events = events(text);
            let logged =
                |name: &str| events.iter().any(|event| event["message"] == "mcp request" && event["name"] == name);
            logged("criar_curso") && logged("nao_existe")
        },
    )
    .await;
    let events = events(&logs);
    let call = events
        .iter()
        .find(|event| event["message"] == "mcp request" && event["name"] == "criar_curso")
        .expect("the call's event");
    assert_eq!(call["method"], "tools/call", "{call}");
    assert_eq!(call["caller"], "api-key", "{call}");
    assert_eq!(call["status"], 200, "{call}");
    assert!(call["duration_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{call}");
    assert!(call["level"] == "INFO" && call["timestamp"].is_string(), "{call}");
    assert!(
        events.iter().any(|event| event["method"] == "initialize" && event["caller"] == "api-key"),
        "every request has its event:\n{logs}"
    );
    assert!(
        events.iter().any(|event| event["name"] == "nao_existe" && event["status"] == 400),
        "a refusal has its event and status:\n{logs}"
    );
    assert!(!logs.contains(KEY), "the key never reaches the log:\n{logs}");
    assert!(backend.stop().await.success());
}
