//! Both transports answer the shared scenario identically, on both protocol eras.

use crate::scenario::{self, ConfirmingUser};
use crate::support::{ERAS, Era, fresh_database, spawn_raw_stdio, start_backend, stdio_client_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_and_http_give_identical_results_for_the_same_scenario_on_both_eras() {
    for era in ERAS {
        let (_stdio_folder, stdio_database) = fresh_database();
        let (client, _stderr) = stdio_client_with(ConfirmingUser::default(), &stdio_database, era).await;
        let over_stdio = scenario::run(&client, era, "stdio").await;
        client.cancel().await.expect("close stdio client");

        let (_http_folder, http_database) = fresh_database();
        let backend = start_backend(&http_database, Some("chave-de-teste-e2e")).await;
        let client = backend.client_with(ConfirmingUser::default(), era).await;
        let over_http = scenario::run(&client, era, "api-key").await;
        client.cancel().await.expect("close http client");
        assert!(backend.stop().await.success());

        assert_eq!(over_stdio.len(), over_http.len());
        for (stdio_step, http_step) in over_stdio.iter().zip(&over_http) {
            assert_eq!(stdio_step, http_step, "{era:?}: the transports differ at step {}", stdio_step["step"]);
        }

        let not_found = over_stdio.iter().find(|step| step["step"] == "recurso inexistente").expect("step");
        let expected_code = match era {
            Era::Initialize => -32002,
            Era::Discover => -32602,
        };
        assert_eq!(not_found["value"]["code"], expected_code, "{era:?}");
        assert_eq!(not_found["value"]["data"]["uri"], "cursos://nao-existe");
        let unknown_tool = over_stdio.iter().find(|step| step["step"] == "ferramenta desconhecida").expect("step");
        assert_eq!(unknown_tool["value"]["code"], -32602);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_app_logs_to_stderr_only_and_exits_cleanly_when_stdin_closes() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let (_folder, database) = fresh_database();
    let mut child = spawn_raw_stdio(&database, &[("RUST_LOG", "debug")], std::process::Stdio::piped());
    let mut stdin = child.stdin.take().expect("stdin");
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"criar_curso","arguments":{"titulo":"Rust","cargaHoraria":40}}}"#,
    ];
    for request in requests {
        stdin.write_all(format!("{request}\n").as_bytes()).await.expect("write");
    }
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut answered = Vec::new();
    while answered.len() < 2 {
        let line = tokio::time::timeout(crate::support::PATIENCE, stdout.next_line())
            .await
            .expect("answer in time")
            .expect("read");
        let line = line.expect("an answer before stdout closed");
        let message: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("stdout is JSON-RPC only: {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0");
        match message["id"].as_i64() {
            Some(id) => answered.push(id),
            // The create announces itself to this session's own listeners: a notification.
            None => assert!(
                message["method"].as_str().is_some_and(|method| method.starts_with("notifications/")),
                "{message}"
            ),
        }
    }
    answered.sort_unstable();
    assert_eq!(answered, [1, 2]);
    drop(stdin);
    let status =
        tokio::time::timeout(crate::support::PATIENCE, child.wait()).await.expect("exited in time").expect("status");
    assert!(status.success(), "{status:?}");
    while let Some(line) = stdout.next_line().await.expect("read") {
        let message: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("stdout is JSON-RPC only: {line:?}"));
        assert!(message["method"].as_str().is_some_and(|method| method.starts_with("notifications/")), "{message}");
    }
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .await
        .expect("stderr");
    assert!(stderr.contains("mcp-cursos-stdio ready"), "logs go to stderr: {stderr}");
    assert!(database.exists(), "the database and its folder were created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_stdin_ends_open_listen_streams_with_their_final_result() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let (_folder, database) = fresh_database();
    let mut child = spawn_raw_stdio(&database, &[], std::process::Stdio::null());
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}"#;
    let listen = format!(
        r#"{{"jsonrpc":"2.0","id":"escuta","method":"subscriptions/listen","params":{{"_meta":{meta},"notifications":{{"resourcesListChanged":true}}}}}}"#
    );
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(format!("{listen}\n").as_bytes()).await.expect("write");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let acknowledged =
        tokio::time::timeout(crate::support::PATIENCE, stdout.next_line()).await.expect("in time").expect("read");
    assert!(acknowledged.is_some_and(|line| line.contains("notifications/subscriptions/acknowledged")));
    drop(stdin);
    let mut final_result = None;
    while let Some(line) =
        tokio::time::timeout(crate::support::PATIENCE, stdout.next_line()).await.expect("in time").expect("read")
    {
        let message: serde_json::Value = serde_json::from_str(&line).expect("JSON-RPC");
        if message["id"] == "escuta" {
            final_result = Some(message);
        }
    }
    let final_result = final_result.expect("the stream ended with its result, not by a drain timeout");
    assert_eq!(final_result["result"]["resultType"], "complete", "{final_result}");
    let status = tokio::time::timeout(crate::support::PATIENCE, child.wait()).await.expect("exited").expect("status");
    assert!(status.success());
}

/// The real stdio binary on 2026-07-28: every result names the server in its `_meta`, and a
/// request asking for debug log messages (`_meta` `logLevel`) gets none: the server declares no
/// `logging` (SEP-2577 deprecated it) and writes nothing on stdout but the answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2026_07_28_results_name_the_server_and_no_log_message_is_sent_at_any_level() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let (_folder, database) = fresh_database();
    let mut child = spawn_raw_stdio(&database, &[], std::process::Stdio::null());
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"},"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"}"#;
    let requests = [
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{meta},"name":"criar_curso","arguments":{{"titulo":"Curso com log","cargaHoraria":8}}}}}}"#
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"_meta":{meta},"name":"criar_curso","arguments":{{"titulo":"","cargaHoraria":8}}}}}}"#
        ),
        format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{{"_meta":{meta}}}}}"#),
        format!(
            r#"{{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{{"_meta":{meta},"uri":"cursos://catalogo"}}}}"#
        ),
    ];
    let mut stdin = child.stdin.take().expect("stdin");
    for request in &requests {
        stdin.write_all(format!("{request}\n").as_bytes()).await.expect("write");
    }
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut answered = Vec::new();
    while answered.len() < requests.len() {
        let line = tokio::time::timeout(crate::support::PATIENCE, stdout.next_line())
            .await
            .expect("in time")
            .expect("read")
            .expect("an answer for every request before stdout ends");
        let message: serde_json::Value = serde_json::from_str(&line).expect("JSON-RPC");
        assert_ne!(message["method"], "notifications/message", "no log message at any level: {message}");
        answered.push(message);
    }
    drop(stdin);
    while let Some(line) =
        tokio::time::timeout(crate::support::PATIENCE, stdout.next_line()).await.expect("in time").expect("read")
    {
        assert!(!line.contains("notifications/message"), "no log message at any level: {line}");
    }
    for message in &answered {
        let named = &message["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
        assert_eq!(named["name"], "mcp-cursos", "{message}");
        assert_eq!(named["version"], env!("CARGO_PKG_VERSION"), "{message}");
    }
    let refused = answered.iter().find(|message| message["id"] == 2).expect("the refused call's answer");
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let status = tokio::time::timeout(crate::support::PATIENCE, child.wait()).await.expect("exited").expect("status");
    assert!(status.success());
}
