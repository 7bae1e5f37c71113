//! The negative security suite over HTTP, on the real process: keys from a keys file (made and
//! revoked with the real `keys` commands), scopes on both eras, hot revocation, and every hostile
//! request we know of, over a real socket. Each gets the right status or error, the store is
//! unchanged afterwards, and no key reaches the process's output. The rate limit and the session
//! cap per key, and every variant of the router's refusals, are tested in process
//! (`apps/backend/src/app_tests.rs`).

use std::path::Path;

use mcp_cursos_e2e::{create, protocol_error, read_json, try_call};
use reqwest::StatusCode;
use rmcp::model::GetPromptRequestParams;
use serde_json::{Value, json};

use crate::support::{Backend, ERAS, Era, PATIENCE, binary, fresh_database, keys, start_backend_with_keys_file};

const WRITING_TOOLS: [&str; 3] = ["criar_curso", "atualizar_curso", "arquivar_curso"];
const MODERN: &str = "2026-07-28";

/// `keys create`: the key, printed once on stdout and nowhere else.
fn create_key(keys_file: &Path, name: &str, scope: &str) -> String {
    let output = keys(keys_file, &["create", "--name", name, "--scope", scope]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "keys create {name}: {stderr}");
    let key = String::from_utf8(output.stdout).expect("utf-8").trim().to_owned();
    assert!(key.starts_with("mcp_") && key.len() == 68, "a 256-bit key: {key}");
    assert!(!stderr.contains(&key), "the key goes to stdout only: {stderr}");
    assert!(stderr.contains(name) && stderr.contains(scope), "{stderr}");
    let file = std::fs::read_to_string(keys_file).expect("keys file");
    assert!(!file.contains(&key), "the keys file holds only hashes");
    key
}

fn revoke_key(keys_file: &Path, name: &str) {
    let output = keys(keys_file, &["revoke", "--name", name]);
    assert!(output.status.success(), "keys revoke {name}: {}", String::from_utf8_lossy(&output.stderr));
}

async fn post(backend: &Backend, headers: &[(&str, &str)], body: String) -> reqwest::Response {
    mcp_cursos_e2e::post(&backend.mcp_url, headers, body).await
}

fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostil", "version": "1"}}})
    .to_string()
}

/// A 2026-07-28 request (which needs no session) with `_meta` saying `meta_version`.
fn modern_body(method: &str, mut params: Value, meta_version: &str) -> String {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": meta_version,
                             "io.modelcontextprotocol/clientInfo": {"name": "hostil", "version": "1"},
                             "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string()
}

/// A 2026-07-28 `tools/call` of `criar_curso` with `_meta` saying `meta_version`.
fn modern_create_body(titulo: &str, meta_version: &str) -> String {
    let params = json!({"name": "criar_curso", "arguments": {"titulo": titulo, "cargaHoraria": 10}});
    modern_body("tools/call", params, meta_version)
}

/// The headers a 2026-07-28 `tools/call criar_curso` carries besides the key.
fn modern_headers(authorization: &str) -> [(&str, &str); 4] {
    [
        ("authorization", authorization),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "criar_curso"),
    ]
}

/// The catalog read with one 2026-07-28 request (a client would spend several on its handshake).
async fn catalog_in_one_request(backend: &Backend, key: &str) -> Value {
    let authorization = bearer(key);
    let headers = [
        ("authorization", authorization.as_str()),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "resources/read"),
        ("mcp-name", "cursos://catalogo"),
    ];
    let body = modern_body("resources/read", json!({"uri": "cursos://catalogo"}), MODERN);
    let message = jsonrpc_message(post(backend, &headers, body).await).await;
    let text = message["result"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("a catalog: {message}"));
    serde_json::from_str(text).expect("json")
}

/// The JSON-RPC message of a response, whether sent as JSON or as one SSE event.
async fn jsonrpc_message(response: reqwest::Response) -> Value {
    let text = response.text().await.expect("body");
    if let Ok(message) = serde_json::from_str(&text) {
        return message;
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC message in {text}"))
}

/// The catalog as a client with `key` reads it: the store's observable state.
async fn catalog(backend: &Backend, key: &str) -> Value {
    let client = backend.client_with_key(key, Era::Initialize).await;
    let catalog = read_json(&client, "cursos://catalogo").await;
    client.cancel().await.expect("close");
    catalog
}

/// Sends `initialize` with `key` until it gets `expected` (a reload takes up to half a second).
async fn poll_until_status(backend: &Backend, key: &str, expected: StatusCode) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let status = post(
            backend,
            &[("authorization", &bearer(key)), ("mcp-protocol-version", "2025-11-25")],
            initialize_body(),
        )
        .await
        .status();
        if status == expected {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "still {status}, never {expected}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

fn assert_no_key_in_logs(backend: &Backend, secrets: &[&str]) {
    let (stdout, stderr) = (backend.stdout.all(), backend.stderr.all());
    for secret in secrets {
        assert!(!stdout.contains(secret) && !stderr.contains(secret), "a key reached the logs:\n{stdout}\n{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keys_commands_create_list_and_revoke_named_scoped_keys_and_refuse_duplicates() {
    let folder = tempfile::tempdir().expect("temp dir");
    let keys_file = folder.path().join("chaves");
    let missing = keys(&keys_file, &["list"]);
    assert!(!missing.status.success(), "listing a missing file fails");

    create_key(&keys_file, "painel", "leitura");
    create_key(&keys_file, "ci", "escrita");
    let duplicate = keys(&keys_file, &["create", "--name", "ci", "--scope", "leitura"]);
    assert!(!duplicate.status.success() && duplicate.stdout.is_empty(), "a taken name prints no key");
    assert!(String::from_utf8_lossy(&duplicate.stderr).contains("already exists"));
    for (name, scope) in [("api-key", "escrita"), ("Maiuscula", "leitura"), ("ok", "admin")] {
        let refused = keys(&keys_file, &["create", "--name", name, "--scope", scope]);
        assert!(!refused.status.success() && refused.stdout.is_empty(), "{name} {scope}");
    }

    let listed = keys(&keys_file, &["list"]);
    assert!(listed.status.success());
    assert_eq!(
        String::from_utf8(listed.stdout).expect("utf-8"),
        "painel leitura padrao\nci escrita padrao\n",
        "names and scopes only"
    );

    revoke_key(&keys_file, "painel");
    let listed = keys(&keys_file, &["list"]);
    assert_eq!(String::from_utf8(listed.stdout).expect("utf-8"), "ci escrita padrao\n");
    let again = keys(&keys_file, &["revoke", "--name", "painel"]);
    assert!(!again.status.success(), "revoking an unknown name fails");

    let without_file = std::process::Command::new(binary("mcp-cursos-backend"))
        .env_clear()
        .args(["keys", "list"])
        .output()
        .expect("run");
    assert!(!without_file.status.success());
    assert!(String::from_utf8_lossy(&without_file.stderr).contains("KEYS_FILE"));
}

/// Eight `keys create` processes started at once on one keys file: they take turns on its lock,
/// so every key lands in the file and none is lost to another's rewrite.
#[test]
fn key_commands_run_at_once_lose_no_key() {
    const PROCESSES: usize = 8;
    let folder = tempfile::tempdir().expect("temp dir");
    let keys_file = folder.path().join("chaves");
    let children: Vec<_> = (0..PROCESSES)
        .map(|number| {
            std::process::Command::new(binary("mcp-cursos-backend"))
                .env_clear()
                .env("KEYS_FILE", &keys_file)
                .args(["keys", "create", "--name", &format!("painel-{number}"), "--scope", "leitura"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn keys create")
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().expect("keys create");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let listed = keys(&keys_file, &["list"]);
    let mut names: Vec<String> = String::from_utf8(listed.stdout)
        .expect("utf-8")
        .lines()
        .map(|line| line.split(' ').next().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    let mut expected: Vec<String> = (0..PROCESSES).map(|number| format!("painel-{number}")).collect();
    expected.sort();
    assert_eq!(names, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_keys_file_stops_the_backend_at_start_with_the_line_and_reason() {
    let (folder, database) = fresh_database();
    let keys_file = folder.path().join("chaves");
    let hash = format!("sha256:{}", "ab".repeat(32));
    std::fs::write(&keys_file, format!("# chaves\npainel admin {hash}\n")).expect("write");
    let output = std::process::Command::new(binary("mcp-cursos-backend"))
        .env_clear()
        .env("KEYS_FILE", &keys_file)
        .env("PORT", "0")
        .env("DATABASE_PATH", &database)
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid KEYS_FILE") && stderr.contains("line 2") && stderr.contains("admin"), "{stderr}");
    assert!(!stderr.contains(&hash[7..]), "the hash is not echoed: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_key_never_sees_nor_calls_a_writing_tool_but_reads_everything_on_both_eras() {
    let (folder, database) = fresh_database();
    let keys_file = folder.path().join("chaves");
    let reader = create_key(&keys_file, "painel", "leitura");
    let writer = create_key(&keys_file, "ci", "escrita");
    let backend = start_backend_with_keys_file(&database, &keys_file, &[]).await;
    let writing = backend.client_with_key(&writer, Era::Initialize).await;
    let created = create(&writing, "Rust").await;
    assert_eq!(created["isError"], false, "{created}");
    let tools = writing.list_all_tools().await.expect("tools");
    assert!(WRITING_TOOLS.iter().all(|tool| tools.iter().any(|listed| listed.name == *tool)), "escrita sees all");
    writing.cancel().await.expect("close");
    let before = catalog(&backend, &writer).await;

    for era in ERAS {
        let reading = backend.client_with_key(&reader, era).await;
        let tools = reading.list_all_tools().await.expect("tools");
        for tool in WRITING_TOOLS {
            assert!(tools.iter().all(|listed| listed.name != tool), "{era:?}: {tool} is hidden from a read key");
        }
        for tool in WRITING_TOOLS {
            let arguments = json!({"titulo": "Invasor", "cargaHoraria": 10, "id": created["structuredContent"]["id"]});
            let refused = try_call(&reading, tool, arguments).await;
            let error = protocol_error(refused, &format!("{era:?}: {tool} must be refused"));
            assert_eq!(error.code.0, -32602, "{era:?}: {tool}: {error:?}");
            assert!(error.message.contains("leitura"), "the message names the scope: {}", error.message);
        }
        assert_eq!(read_json(&reading, "cursos://catalogo").await, before, "{era:?}: resources are readable");
        let prompt =
            reading
                .get_prompt(GetPromptRequestParams::new("criar-curso").with_arguments(
                    json!({"titulo": "Rust", "cargaHoraria": "40"}).as_object().cloned().expect("object"),
                ))
                .await;
        assert!(prompt.is_ok(), "{era:?}: prompts are allowed to a read key: {prompt:?}");
        reading.cancel().await.expect("close");
    }
    assert_eq!(catalog(&backend, &writer).await, before, "the read key changed nothing");
    assert_no_key_in_logs(&backend, &[&reader, &writer]);
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_added_or_revoked_with_the_commands_count_without_a_restart() {
    let (folder, database) = fresh_database();
    let keys_file = folder.path().join("chaves");
    let staying = create_key(&keys_file, "ci", "escrita");
    let leaving = create_key(&keys_file, "temporaria", "escrita");
    let backend = start_backend_with_keys_file(&database, &keys_file, &[]).await;
    let connected = backend.client_with_key(&leaving, Era::Initialize).await;
    assert_eq!(connected.list_all_tools().await.expect("tools").len(), 3);

    revoke_key(&keys_file, "temporaria");
    poll_until_status(&backend, &leaving, StatusCode::UNAUTHORIZED).await;
    assert!(connected.list_all_tools().await.is_err(), "an open session of a revoked key is refused too");
    poll_until_status(&backend, &staying, StatusCode::OK).await;

    let added = create_key(&keys_file, "nova", "leitura");
    poll_until_status(&backend, &added, StatusCode::OK).await;
    let reading = backend.client_with_key(&added, Era::Discover).await;
    assert!(
        reading.list_all_tools().await.expect("tools").iter().all(|tool| !WRITING_TOOLS.contains(&tool.name.as_ref()))
    );
    reading.cancel().await.expect("close");

    std::fs::write(&keys_file, "meio-escri").expect("a half-written file");
    backend.wait_for_log("the keys file is not valid").await;
    assert_eq!(catalog(&backend, &staying).await["total"], 0, "a broken file keeps the keys loaded before");
    assert!(backend.stderr.all().contains("keys file reloaded"), "reloads are logged by name");
    assert_no_key_in_logs(&backend, &[&staying, &leaving, &added]);
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_the_right_status_and_leave_the_store_unchanged() {
    let (folder, database) = fresh_database();
    let keys_file = folder.path().join("chaves");
    let reader = create_key(&keys_file, "painel", "leitura");
    let writer = create_key(&keys_file, "ci", "escrita");
    let revoked = create_key(&keys_file, "antiga", "escrita");
    revoke_key(&keys_file, "antiga");
    let api_key = "chave-unica-de-ambiente-bem-longa";
    let backend = start_backend_with_keys_file(&database, &keys_file, &[("API_KEY", api_key)]).await;
    let writing = backend.client_with_key(&writer, Era::Initialize).await;
    create(&writing, "Rust").await;
    writing.cancel().await.expect("close");
    let before = catalog(&backend, api_key).await;
    assert_eq!(before["total"], 1, "API_KEY is one more full-scope key beside the file");

    let legacy = [("mcp-protocol-version", "2025-11-25")];
    let write = || modern_create_body("Invasor", MODERN);
    // No key, a wrong key, a revoked key, a key in the wrong scheme: 401 with a Bearer challenge.
    let wrong = bearer("mcp_0000000000000000000000000000000000000000000000000000000000000000");
    let revoked_bearer = bearer(&revoked);
    let basic = format!("Basic {writer}");
    for authorization in [None, Some(wrong.as_str()), Some(revoked_bearer.as_str()), Some(basic.as_str())] {
        let mut headers =
            vec![("mcp-protocol-version", MODERN), ("mcp-method", "tools/call"), ("mcp-name", "criar_curso")];
        headers.extend(authorization.map(|value| ("authorization", value)));
        let response = post(&backend, &headers, write()).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{authorization:?}");
        let challenge = response.headers().get("www-authenticate").expect("WWW-Authenticate").to_str().expect("ascii");
        assert!(challenge.starts_with("Bearer"), "{challenge}");
    }

    // A read key calling a writer over raw HTTP: a JSON-RPC error, nothing written.
    let read_bearer = bearer(&reader);
    let refused = jsonrpc_message(post(&backend, &modern_headers(&read_bearer), write()).await).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // Foreign Host and Origin: 403, even with a full-scope key.
    let write_bearer = bearer(&writer);
    for (name, value) in [("host", "evil.example.com"), ("origin", "https://evil.example.com"), ("origin", "null")] {
        let mut headers = modern_headers(&write_bearer).to_vec();
        headers.push((name, value));
        let response = post(&backend, &headers, write()).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{name}: {value}");
    }

    // A body over 1 MiB: 413.
    let oversized = modern_create_body(&"x".repeat(1024 * 1024 + 1), MODERN);
    let response = post(&backend, &modern_headers(&write_bearer), oversized).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

    // An unsupported MCP-Protocol-Version header: 400.
    let mut headers = modern_headers(&write_bearer).to_vec();
    headers[1] = ("mcp-protocol-version", "1999-01-01");
    let response = post(&backend, &headers, write()).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let response = post(&backend, &[("authorization", &write_bearer), legacy[0]], "{not json".to_owned()).await;
    assert!(response.status().is_client_error(), "{}", response.status());

    // 2026-07-28 with a header and a `_meta` version that disagree: 400, HEADER_MISMATCH.
    let mismatched = modern_create_body("Invasor", "2025-11-25");
    let response = post(&backend, &modern_headers(&write_bearer), mismatched).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let error = jsonrpc_message(response).await;
    assert_eq!(error["error"]["code"], -32020, "{error}");
    assert!(error["error"]["message"].as_str().expect("message").contains("_meta protocolVersion"), "{error}");

    assert_eq!(catalog(&backend, api_key).await, before, "no hostile request changed the store");
    let accepted = jsonrpc_message(post(&backend, &modern_headers(&write_bearer), write()).await).await;
    assert_eq!(accepted["result"]["isError"], false, "the same request, well formed and authorized, works: {accepted}");
    assert_eq!(catalog(&backend, api_key).await["total"], 2);
    let logs = backend.stderr.all();
    assert!(
        logs.contains("refused by the API key check") && logs.contains("refused by the Host/Origin check"),
        "{logs}"
    );
    assert_no_key_in_logs(&backend, &[&reader, &writer, &revoked, api_key]);
    assert!(backend.stop().await.success());
}

/// A 2025-era session opened with `key` over raw HTTP (initialize, then `notifications/initialized`).
async fn open_session(backend: &Backend, key: &str) -> reqwest::Response {
    post(backend, &[("authorization", &bearer(key)), ("mcp-protocol-version", "2025-11-25")], initialize_body()).await
}

fn session_id(response: &reqwest::Response) -> String {
    response.headers().get("mcp-session-id").expect("a session id").to_str().expect("ascii").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_call_with_arguments_that_are_not_an_object_is_invalid_params_on_both_eras() {
    let (folder, database) = fresh_database();
    let keys_file = folder.path().join("chaves");
    let writer = create_key(&keys_file, "ci", "escrita");
    let backend = start_backend_with_keys_file(&database, &keys_file, &[]).await;
    let authorization = bearer(&writer);
    let opened = open_session(&backend, &writer).await;
    assert_eq!(opened.status(), StatusCode::OK);
    let session = session_id(&opened);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let legacy_headers = [
        ("authorization", authorization.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-session-id", session.as_str()),
    ];
    assert_eq!(post(&backend, &legacy_headers, initialized).await.status(), StatusCode::ACCEPTED);

    for arguments in [json!([1]), json!("x"), json!(7), json!(true)] {
        let params = json!({"name": "criar_curso", "arguments": arguments});
        let modern =
            post(&backend, &modern_headers(&authorization), modern_body("tools/call", params.clone(), MODERN)).await;
        let legacy_body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}).to_string();
        let legacy = post(&backend, &legacy_headers, legacy_body).await;
        for (era, response) in [("2026-07-28", modern), ("2025-11-25", legacy)] {
            assert_eq!(response.status(), StatusCode::OK, "{era}, arguments {arguments}");
            let message = jsonrpc_message(response).await;
            assert_eq!(message["error"]["code"], -32602, "{era}, arguments {arguments}: {message}");
            let text = message["error"]["message"].as_str().expect("message");
            assert!(text.contains("Parâmetros inválidos para tools/call") && text.contains("'arguments'"), "{text}");
        }
    }
    let unknown =
        post(&backend, &legacy_headers, json!({"jsonrpc": "2.0", "id": 10, "method": "cursos/apagar"}).to_string())
            .await;
    assert_eq!(jsonrpc_message(unknown).await["error"]["code"], -32601, "an unknown method is still unknown");
    assert_eq!(catalog_in_one_request(&backend, &writer).await["total"], 0, "nothing was executed");
    assert!(backend.stop().await.success());
}
