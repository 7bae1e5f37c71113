//! The HTTP backend's edges that need the real process on a real socket, with plain HTTP
//! requests and raw bytes: the generated key, stateless mode, sessions ending and expiring,
//! repeated headers and absolute-form targets as hyper parses them, bodies that are not JSON-RPC,
//! idle and slowloris connections, live streams against the header-read timeout, the connection
//! cap at start. Every refused request leaves the store as it was. The router's own rules
//! (authentication, Host/Origin, CORS, 413, 429) are tested in process, in
//! `apps/backend/src/app_tests.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Backend, Era, fresh_database, start_backend, start_backend_with};

const KEY: &str = "chave-de-teste-das-bordas";

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bordas", "version": "1"}}})
    .to_string()
}

fn create_body(titulo: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "criar_curso", "arguments": {"titulo": titulo, "cargaHoraria": 10}}})
    .to_string()
}

/// [`mcp_cursos_e2e::post`], with `mcp-protocol-version: 2025-11-25` unless `headers` name one.
async fn post(backend: &Backend, headers: &[(&str, &str)], body: impl Into<reqwest::Body>) -> reqwest::Response {
    let mut all = headers.to_vec();
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("mcp-protocol-version")) {
        all.insert(0, ("mcp-protocol-version", "2025-11-25"));
    }
    mcp_cursos_e2e::post(&backend.mcp_url, &all, body).await
}

/// A GET or DELETE on `/mcp` with the key but no session id.
async fn without_session(backend: &Backend, bearer: &str, method: reqwest::Method) -> StatusCode {
    let response = reqwest::Client::new()
        .request(method, &backend.mcp_url)
        .header("authorization", bearer)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("request");
    response.status()
}

async fn total(backend: &Backend) -> u64 {
    let client = backend.client(Era::Initialize).await;
    let catalog = mcp_cursos_e2e::read_json(&client, "cursos://catalogo").await;
    client.cancel().await.expect("close");
    catalog["total"].as_u64().expect("total")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_configured_key_one_is_generated_printed_once_with_a_client_config_and_works() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, None).await;
    assert!(backend.api_key.starts_with("mcp_") && backend.api_key.len() >= 68, "a strong key");
    let client = backend.client(Era::Initialize).await;
    client.list_all_tools().await.expect("the generated key is accepted");
    client.cancel().await.expect("close");
    let stdout = backend.stdout.all();
    assert_eq!(stdout.matches(&backend.api_key).count(), 5, "once as API_KEY=, once per client:\n{stdout}");
    assert!(stdout.contains(&backend.mcp_url) && stdout.contains("\"Authorization\""), "{stdout}");
    assert!(!backend.stderr.all().contains(&backend.api_key), "the key is never logged");
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_stateless_mode_only_post_is_served_and_no_session_is_kept() {
    let (_folder, database) = fresh_database();
    let backend = start_backend_with(&database, Some(KEY), &[("SESSION_MODE", "stateless")]).await;
    let bearer = format!("Bearer {KEY}");
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let status = without_session(&backend, &bearer, method.clone()).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method}: stateless, POST only");
    }
    let initialized = post(&backend, &[("authorization", &bearer)], initialize_body()).await;
    assert_eq!(initialized.status(), StatusCode::OK);
    assert!(initialized.headers().get("mcp-session-id").is_none(), "no session");
    assert_eq!(
        initialized.headers().get("content-type").and_then(|value| value.to_str().ok()),
        Some("application/json")
    );
    for era in crate::support::ERAS {
        let client = backend.client(era).await;
        assert_eq!(client.list_all_tools().await.expect("tools").len(), 3, "{era:?}");
        client.cancel().await.expect("close");
    }
    let health = backend.health().await;
    assert_eq!(health["sessions"], Value::Null, "stateless: no session manager");
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_closed_by_delete_and_unknown_afterwards() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some(KEY)).await;
    let bearer = format!("Bearer {KEY}");
    let initialized = post(&backend, &[("authorization", &bearer)], initialize_body()).await;
    assert_eq!(initialized.status(), StatusCode::OK);
    let session =
        initialized.headers().get("mcp-session-id").expect("a session id").to_str().expect("ascii").to_owned();
    assert!(session.len() >= 16 && session.bytes().all(|byte| (0x21..=0x7e).contains(&byte)), "{session}");
    let initialized_notice = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let accepted =
        post(&backend, &[("authorization", &bearer), ("mcp-session-id", &session)], initialized_notice).await;
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let health = backend.poll_health("health never got there", |health| health["subscriptions"]["sessions"] == 1).await;
    assert_eq!(health["sessions"], 1, "one MCP session, known to the hub once initialized");

    let deleted = reqwest::Client::new()
        .delete(&backend.mcp_url)
        .header("authorization", &bearer)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("delete");
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string();
    let after = post(&backend, &[("authorization", &bearer), ("mcp-session-id", &session)], list).await;
    assert_eq!(after.status(), StatusCode::NOT_FOUND, "a closed session is unknown");
    let health = backend.health().await;
    assert_eq!(health["sessions"], 0, "nothing left behind");
    assert_eq!(health["subscriptions"]["sessions"], 0, "the hub let go of the closed session too");
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_sessions_expire_when_idle_and_leave_nothing_behind() {
    let (_folder, database) = fresh_database();
    let backend = start_backend_with(&database, Some(KEY), &[("SESSION_IDLE_TIMEOUT", "1")]).await;
    let bearer = format!("Bearer {KEY}");
    let abandoned = 40;
    for _ in 0..abandoned {
        let initialized = post(&backend, &[("authorization", &bearer)], initialize_body()).await;
        let session = initialized.headers().get("mcp-session-id").expect("session").to_str().expect("ascii").to_owned();
        let notice = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        post(&backend, &[("authorization", &bearer), ("mcp-session-id", &session)], notice).await;
        // Never deleted: the client just goes away.
    }
    let health = backend
        .poll_health("health never got there", |health| {
            health["sessions"] == 0 && health["subscriptions"]["sessions"] == 0
        })
        .await;
    assert_eq!(health["status"], "ok");
    let client = backend.client(Era::Initialize).await;
    assert_eq!(client.list_all_tools().await.expect("still serving").len(), 3);
    client.cancel().await.expect("close");
    assert!(backend.stop().await.success());
}

/// The backend's `host:port`.
fn address(backend: &Backend) -> &str {
    backend.base_url.trim_start_matches("http://")
}

/// Sends `request` as raw bytes on a new connection (it should say `Connection: close`) and
/// returns the answer's status code and text.
async fn raw_request(backend: &Backend, request: &[u8]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address(backend)).await.expect("connect");
    stream.write_all(request).await.expect("send");
    let mut answer = Vec::new();
    tokio::time::timeout(crate::support::PATIENCE, stream.read_to_end(&mut answer))
        .await
        .expect("answered in time")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    (status, answer)
}

/// A raw `POST <target>` of `initialize` with `headers` (each a full `Name: value` line).
fn raw_initialize(target: &str, headers: &[&str]) -> Vec<u8> {
    let body = initialize_body();
    let mut request = format!(
        "POST {target} HTTP/1.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         content-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    request.push_str(&body);
    request.into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_host_or_authorization_headers_and_foreign_absolute_targets_are_refused() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some(KEY)).await;
    let loopback = format!("Host: {}", address(&backend));
    let bearer = format!("Authorization: Bearer {KEY}");
    let wrong = "Authorization: Bearer chave-errada";

    let (status, answer) = raw_request(
        &backend,
        format!("GET /health HTTP/1.1\r\n{loopback}\r\nHost: evil.example.com\r\nconnection: close\r\n\r\n").as_bytes(),
    )
    .await;
    assert_eq!(status, 400, "two Host headers, the loopback one first:\n{answer}");
    assert!(answer.contains("more than one Host header"), "{answer}");

    for headers in [[loopback.as_str(), bearer.as_str(), wrong], [loopback.as_str(), wrong, bearer.as_str()]] {
        let (status, answer) = raw_request(&backend, &raw_initialize("/mcp", &headers)).await;
        assert_eq!(status, 400, "two Authorization headers, in either order:\n{answer}");
        assert!(answer.contains("more than one Authorization header"), "{answer}");
        assert!(!answer.contains(KEY), "the key never appears in an answer");
    }

    for target in ["http://evil.example/mcp", "http://evil.example:3000/mcp"] {
        let (status, answer) = raw_request(&backend, &raw_initialize(target, &[&loopback, &bearer])).await;
        assert_eq!(status, 403, "{target} with a loopback Host:\n{answer}");
        assert!(answer.contains("evil.example") && answer.contains("ALLOWED_HOSTS"), "{answer}");
    }
    let (status, _) = raw_request(
        &backend,
        format!("GET http://evil.example/metrics HTTP/1.1\r\n{loopback}\r\nconnection: close\r\n\r\n").as_bytes(),
    )
    .await;
    assert_eq!(status, 403, "every route but the probes checks the target's authority");

    let own_target = format!("{}/mcp", backend.base_url);
    let (status, answer) = raw_request(&backend, &raw_initialize(&own_target, &[&loopback, &bearer])).await;
    assert_eq!(status, 200, "an absolute-form target naming this server is served:\n{answer}");
    assert_eq!(total(&backend).await, 0, "nothing was written");
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_are_not_jsonrpc_get_400_with_a_jsonrpc_error_and_nothing_runs() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some(KEY)).await;
    let bearer = format!("Bearer {KEY}");
    let create_with_raw_title = |title: &[u8]| {
        let mut body = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"criar_curso","arguments":{"cargaHoraria":10,"titulo":""#.to_vec();
        body.extend_from_slice(title);
        body.extend_from_slice(br#""}}}"#);
        body
    };
    let cases: [(&str, Vec<u8>, i64); 6] = [
        ("not JSON", b"{not json".to_vec(), -32700),
        ("invalid UTF-8", create_with_raw_title(b"Caf\xc3"), -32700),
        ("a lone surrogate escape", create_with_raw_title(br"Caf\ud800"), -32700),
        ("an empty body", Vec::new(), -32700),
        ("a batch", br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_vec(), -32600),
        ("no method", br#"{"jsonrpc":"2.0","id":1}"#.to_vec(), -32600),
    ];
    for (case, body, code) in cases {
        let response = post(&backend, &[("authorization", &bearer)], body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{case}");
        let message: Value = response.json().await.unwrap_or_else(|error| panic!("{case}: a JSON body: {error}"));
        assert_eq!(message["jsonrpc"], "2.0", "{case}: {message}");
        assert_eq!(message["error"]["code"], code, "{case}: {message}");
        assert!(message["error"]["message"].as_str().is_some_and(|text| !text.is_empty()), "{case}: {message}");
        assert!(message.get("result").is_none(), "{case}: {message}");
        if code == -32700 {
            assert_eq!(message["id"], Value::Null, "{case}: a parse error has no id");
        }
    }
    assert_eq!(total(&backend).await, 0, "nothing was written");
    assert!(backend.stop().await.success());
}

/// Waits (bounded) until the server closes `stream`; true when it did.
async fn closed_by_the_server(stream: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buffer = [0_u8; 1024];
    let closed = tokio::time::timeout(crate::support::PATIENCE, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    closed.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_slowloris_connections_are_closed_and_never_starve_health_or_a_key() {
    use tokio::io::AsyncWriteExt;

    let (_folder, database) = fresh_database();
    let backend =
        start_backend_with(&database, Some(KEY), &[("MAX_CONNECTIONS", "8"), ("HEADER_READ_TIMEOUT", "1")]).await;
    // A slowloris: a request head that never ends, one byte of one header value at a time. The
    // abusers come from other loopback addresses (127.0.0.2–6), each within its address's share
    // (4 of 8, ADR 0045), so that together they hold every connection.
    let slowloris = connect_from([127, 0, 0, 6], &backend).await;
    let (mut slow_reader, mut slow_writer) = slowloris.into_split();
    let host = address(&backend).to_owned();
    let trickle = tokio::spawn(async move {
        let mut bytes = format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nX-Lento: ");
        while slow_writer.write_all(bytes.as_bytes()).await.is_ok() {
            bytes = "a".to_owned();
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
    // Twice as many idle connections as the cap, without a byte sent.
    let mut idle = Vec::new();
    for index in 0..16_u8 {
        idle.push(connect_from([127, 0, 0, 2 + index % 4], &backend).await);
    }

    let health = tokio::time::timeout(crate::support::PATIENCE, reqwest::get(format!("{}/health", backend.base_url)))
        .await
        .expect("health answered in time")
        .expect("health");
    assert_eq!(health.status(), StatusCode::OK);
    let initialized = tokio::time::timeout(
        crate::support::PATIENCE,
        post(&backend, &[("authorization", &format!("Bearer {KEY}"))], initialize_body()),
    )
    .await
    .expect("an authenticated request answered in time");
    assert_eq!(initialized.status(), StatusCode::OK);

    let mut slow_buffer = [0_u8; 64];
    let slow_closed = tokio::time::timeout(crate::support::PATIENCE, async {
        use tokio::io::AsyncReadExt;
        loop {
            match slow_reader.read(&mut slow_buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(slow_closed.is_ok(), "the slowloris connection was closed by the server");
    trickle.abort();
    for connection in &mut idle {
        assert!(closed_by_the_server(connection).await, "every idle connection was closed by the server");
    }
    let logs = backend.stderr.all();
    assert!(logs.contains("max_connections=8"), "the cap in force is logged:\n{logs}");
    assert!(backend.stop().await.success(), "a clean shutdown after the abuse");
}

/// A connection to the backend from `source`, another loopback address (all of 127/8 is local).
async fn connect_from(source: [u8; 4], backend: &Backend) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind((std::net::Ipv4Addr::from(source), 0).into()).expect("bind a loopback source address");
    socket.connect(address(backend).parse().expect("address")).await.expect("connect")
}

/// Reads one HTTP/1.1 response from `stream`: its status and body (by `Content-Length`).
async fn read_response(stream: &mut tokio::net::TcpStream) -> (u16, String) {
    use tokio::io::AsyncReadExt;
    let mut bytes = Vec::new();
    let mut buffer = [0_u8; 4096];
    loop {
        let read = tokio::time::timeout(crate::support::PATIENCE, stream.read(&mut buffer))
            .await
            .expect("an answer in time")
            .expect("read");
        assert!(read > 0, "the server closed the connection before answering: {}", String::from_utf8_lossy(&bytes));
        bytes.extend_from_slice(&buffer[..read]);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
                .and_then(|value| value.parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length {
                let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).expect("a status line");
                return (status, body[..length].to_owned());
            }
        }
    }
}

/// A keep-alive `POST /mcp` listing the catalog with `key`, in one buffer.
fn raw_list(backend: &Backend, key: &str) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                      "params": {"uri": "cursos://catalogo"}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{body}",
        address(backend),
        body.len()
    )
    .into_bytes()
}

/// Issue 24, item 5 (ADR 0045): clients that send requests and never read the answers. One that
/// pipelines reads of a large catalog and reads nothing is closed once a write waits past
/// `WRITE_STALL_TIMEOUT`; one key, and one address, hold at most half of `MAX_CONNECTIONS`
/// (beyond it: 429, connection closed), so a well-behaved caller is still served at the cap
/// although the idle timeout is an hour. On today's main before this, the keyed request waited
/// behind the abusers' connections until they let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_read_are_cut_off_and_hold_only_their_share_of_the_connections() {
    use tokio::io::AsyncWriteExt;

    let (folder, database) = fresh_database();
    let keys_file = folder.path().join("chaves");
    let abuser = crate::support::new_key(&keys_file, &["--name", "abusador", "--scope", "leitura"]);
    let honest = crate::support::new_key(&keys_file, &["--name", "honesto", "--scope", "escrita"]);
    let backend = crate::support::start_backend_with_keys_file(
        &database,
        &keys_file,
        &[
            ("MAX_CONNECTIONS", "8"),
            ("HEADER_READ_TIMEOUT", "3600"),
            ("WRITE_STALL_TIMEOUT", "1"),
            // Each pipelined read stands alone.
            ("SESSION_MODE", "stateless"),
        ],
    )
    .await;
    let logs = backend.stderr.all();
    assert!(
        logs.contains("write_stall_timeout=1s")
            && logs.contains("max_connections_per_address=4")
            && logs.contains("max_connections_per_key=4"),
        "the bounds in force are logged:\n{logs}"
    );
    // A catalog whose listing is large (about 9 KB an answer), written through the honest key.
    let client = backend.client_with_key(&honest, Era::Initialize).await;
    for index in 0..40 {
        let title = format!("Curso {index:02} para encher o buffer do cliente que não lê {}", "-".repeat(140));
        let created = mcp_cursos_e2e::call(&client, "criar_curso", json!({"titulo": title, "cargaHoraria": 4})).await;
        assert_ne!(created.is_error, Some(true), "{created:?}");
    }
    client.cancel().await.expect("close the client");

    // 1. A reader that never reads: 2,000 pipelined listings (about 18 MB of answers) on one
    //    connection, from 127.0.0.2, and not a byte read. The server's writes fill both socket
    //    buffers, wait, and after WRITE_STALL_TIMEOUT the connection is closed.
    let stalled = connect_from([127, 0, 0, 2], &backend).await;
    let (mut stalled_reader, mut stalled_writer) = stalled.into_split();
    let request = raw_list(&backend, &abuser);
    let pipeline = tokio::spawn(async move {
        for _ in 0..2_000 {
            if stalled_writer.write_all(&request).await.is_err() {
                return;
            }
        }
    });
    backend.wait_for_log("did not take its response within WRITE_STALL_TIMEOUT").await;
    let mut answered = Vec::new();
    let drained = tokio::time::timeout(crate::support::PATIENCE, async {
        use tokio::io::AsyncReadExt;
        let mut buffer = vec![0_u8; 1 << 16];
        loop {
            match stalled_reader.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(read) => answered.extend_from_slice(&buffer[..read]),
            }
        }
    })
    .await;
    assert!(drained.is_ok(), "the stalled connection was closed by the server");
    let answers = answered.windows(12).filter(|window| window == b"HTTP/1.1 200").count();
    assert!(answers < 2_000, "the server stopped answering the reader that never read ({answers} answers)");
    pipeline.abort();

    // 2. The shares. From 127.0.0.3, with the abuser's key: 4 connections, each answered once
    //    and then kept open, never read again (they hold 4 of the 8 connections for an hour).
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut connection = connect_from([127, 0, 0, 3], &backend).await;
        connection.write_all(&raw_list(&backend, &abuser)).await.expect("send");
        assert_eq!(read_response(&mut connection).await.0, 200);
        held.push(connection);
    }
    // A fifth from the same address is refused at once: 429, named, closed.
    let mut fifth = connect_from([127, 0, 0, 3], &backend).await;
    let (status, body) = read_response(&mut fifth).await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("too_many_connections") && body.contains("MAX_CONNECTIONS_PER_ADDRESS"), "{body}");
    assert!(closed_by_the_server(&mut fifth).await, "refused and closed");
    // From another address, the same key already holds its share: 429 on its request, closed.
    let mut other_address = connect_from([127, 0, 0, 4], &backend).await;
    other_address.write_all(&raw_list(&backend, &abuser)).await.expect("send");
    let (status, body) = read_response(&mut other_address).await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("too_many_connections") && body.contains("MAX_CONNECTIONS_PER_KEY"), "{body}");
    assert!(closed_by_the_server(&mut other_address).await, "refused and closed");

    // 3. The honest caller, at the cap's other half: served at once, from its own address.
    let mut served = Vec::new();
    for _ in 0..4 {
        let mut connection = connect_from([127, 0, 0, 1], &backend).await;
        connection.write_all(&raw_list(&backend, &honest)).await.expect("send");
        let (status, body) = read_response(&mut connection).await;
        assert_eq!(status, 200, "{body}");
        served.push(connection);
    }
    let logs = backend.stderr.all();
    for secret in [&abuser, &honest] {
        assert!(!logs.contains(secret.as_str()), "no key in the log");
    }
    assert!(logs.contains("its caller already holds its share") && logs.contains("abusador"), "{logs}");
    drop((held, served));
    assert!(backend.stop().await.success(), "a clean shutdown after the abuse");
}

/// Reads `stream` (bounded) until its text contains `wanted`; panics if the server ends it first.
async fn read_until(stream: &mut reqwest::Response, wanted: &str, what: &str) {
    let mut text = String::new();
    let found = tokio::time::timeout(crate::support::PATIENCE, async {
        while !text.contains(wanted) {
            match stream.chunk().await {
                Ok(Some(chunk)) => text.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(None) | Err(_) => return false,
            }
        }
        true
    })
    .await;
    assert_eq!(found, Ok(true), "{what} ended or went silent before {wanted:?}; it carried:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_streams_outlast_the_header_read_timeout_and_still_deliver() {
    let (_folder, database) = fresh_database();
    let backend = start_backend_with(&database, Some(KEY), &[("HEADER_READ_TIMEOUT", "1")]).await;
    let bearer = format!("Bearer {KEY}");
    let initialized = post(&backend, &[("authorization", &bearer)], initialize_body()).await;
    let session = initialized.headers().get("mcp-session-id").expect("session").to_str().expect("ascii").to_owned();
    let session_headers = [("authorization", bearer.as_str()), ("mcp-session-id", session.as_str())];
    let notice = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(post(&backend, &session_headers, notice).await.status(), StatusCode::ACCEPTED);
    let subscribe =
        json!({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": "cursos://catalogo"}});
    assert_eq!(post(&backend, &session_headers, subscribe.to_string()).await.status(), StatusCode::OK);
    // The session's GET stream (2025 era) and a listen stream, a POST answered with SSE (2026-07-28).
    let mut session_stream = reqwest::Client::new()
        .get(&backend.mcp_url)
        .header("authorization", &bearer)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("GET stream");
    assert_eq!(session_stream.status(), StatusCode::OK);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientInfo": {"name": "bordas", "version": "1"},
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let listen = json!({"jsonrpc": "2.0", "id": "escuta", "method": "subscriptions/listen",
                        "params": {"_meta": meta, "notifications": {"resourcesListChanged": true}}});
    let modern = [
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "subscriptions/listen"),
    ];
    let mut listen_stream = post(&backend, &modern, listen.to_string()).await;
    assert_eq!(listen_stream.status(), StatusCode::OK);
    read_until(&mut listen_stream, "notifications/subscriptions/acknowledged", "the listen stream").await;

    // A connection opened after both streams, closed by the header-read timeout: by then both
    // streams have been open longer than the timeout.
    let mut probe = tokio::net::TcpStream::connect(address(&backend)).await.expect("connect");
    assert!(closed_by_the_server(&mut probe).await, "the idle probe was closed by the header-read timeout");

    let created =
        post(&backend, &[("authorization", &bearer), ("mcp-session-id", &session)], create_body("Ao vivo")).await;
    assert_eq!(created.status(), StatusCode::OK);
    read_until(&mut session_stream, "notifications/resources/", "the session's GET stream").await;
    read_until(&mut listen_stream, "notifications/resources/list_changed", "the listen stream").await;
    assert!(backend.stop().await.success(), "open streams end at shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_cap_over_the_open_files_limit_is_refused_at_start_naming_the_setting() {
    let (_folder, database) = fresh_database();
    let mut child = tokio::process::Command::new(crate::support::binary("mcp-cursos-backend"))
        .env_clear()
        .env("HOST", "127.0.0.1")
        .env("PORT", "0")
        .env("DATABASE_PATH", &database)
        .env("API_KEY", KEY)
        // Over any open-files limit the backend may raise itself to (2^20).
        .env("MAX_CONNECTIONS", "100000000")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn backend");
    let mut stderr = child.stderr.take().expect("stderr");
    let status =
        tokio::time::timeout(crate::support::PATIENCE, child.wait()).await.expect("exited in time").expect("status");
    let mut text = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut text).await.expect("stderr");
    assert!(!status.success(), "refused, not lowered nor ignored:\n{text}");
    assert!(text.contains("MAX_CONNECTIONS=100000000 needs"), "the setting and its value come first:\n{text}");
    assert!(!text.contains("listening"), "{text}");
}
