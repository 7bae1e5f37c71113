//! The stdio app's input, byte by byte: lines rmcp alone would drop without an answer (invalid
//! UTF-8, lone surrogate escapes, lines over the bound) get a JSON-RPC parse error, the session
//! goes on, and the process exits with status 0 whenever stdin closes (ADR 0024).

use std::process::{ExitStatus, Stdio};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::support::{PATIENCE, fresh_database, spawn_raw_stdio};

/// The bound the stdio app documents (`mcp_cursos_stdio::MAX_LINE_BYTES`).
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A `mcp-cursos-stdio` child driven with raw bytes.
struct RawStdio {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    _folder: tempfile::TempDir,
}

impl RawStdio {
    fn start() -> Self {
        let (folder, database) = fresh_database();
        let mut child = spawn_raw_stdio(&database, &[("RUST_LOG", "warn")], Stdio::null());
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Self { child, stdin, stdout, _folder: folder }
    }

    async fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).await.expect("write stdin");
        stdin.flush().await.expect("flush stdin");
    }

    async fn send_line(&mut self, line: &str) {
        self.send(format!("{line}\n").as_bytes()).await;
    }

    /// The next JSON-RPC message on stdout; every line must be one.
    async fn next_message(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .expect("a message in time")
            .expect("read stdout")
            .expect("a message before stdout closed");
        let message: Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("stdout is JSON-RPC only: {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        message
    }

    /// The answer to request `id`, skipping notifications.
    async fn answer_to(&mut self, id: &Value) -> Value {
        loop {
            let message = self.next_message().await;
            if message.get("id") == Some(id) {
                return message;
            }
            assert!(message.get("id").is_none(), "an answer to another request: {message}");
        }
    }

    async fn initialize(&mut self) {
        self.send_line(INITIALIZE).await;
        let answer = self.answer_to(&json!(1)).await;
        assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
        self.send_line(INITIALIZED).await;
    }

    /// Closes stdin, reads stdout to its end (every line JSON-RPC), and waits for the exit.
    async fn close_and_wait(mut self) -> (ExitStatus, Vec<Value>) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Some(line) =
            tokio::time::timeout(PATIENCE, self.stdout.next_line()).await.expect("stdout closes in time").expect("read")
        {
            rest.push(serde_json::from_str(&line).unwrap_or_else(|_| panic!("stdout is JSON-RPC only: {line:?}")));
        }
        let status = tokio::time::timeout(PATIENCE, self.child.wait()).await.expect("exited in time").expect("status");
        (status, rest)
    }
}

fn criar_curso(id: &str, titulo_json: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"criar_curso","arguments":{{"titulo":{titulo_json},"cargaHoraria":40}}}}}}"#
    )
    .into_bytes()
}

fn assert_parse_error(answer: &Value, id: &Value) {
    assert_eq!(&answer["id"], id, "{answer}");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(
        answer["error"]["message"].as_str().is_some_and(|message| message.contains("Nada foi executado")),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_rmcp_would_drop_get_a_parse_error_with_their_id_and_the_session_goes_on() {
    let mut stdio = RawStdio::start();
    stdio.initialize().await;

    // Invalid UTF-8 inside the title: a byte cut from "é".
    let mut cut_utf8 = criar_curso("7", "\"Caf\u{e9}\"");
    let cut_at = cut_utf8.windows(2).position(|pair| pair == "é".as_bytes()).expect("é");
    cut_utf8.remove(cut_at + 1);
    cut_utf8.push(b'\n');
    stdio.send(&cut_utf8).await;
    assert_parse_error(&stdio.answer_to(&json!(7)).await, &json!(7));

    // A lone surrogate escape: half of an emoji.
    let mut lone_surrogate = criar_curso("\"corte\"", r#""Rust \ud83e""#);
    lone_surrogate.push(b'\n');
    stdio.send(&lone_surrogate).await;
    assert_parse_error(&stdio.answer_to(&json!("corte")).await, &json!("corte"));

    // A line over the bound, its id at the very end.
    let long = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"criar_curso","arguments":{{"titulo":"{}","cargaHoraria":40}}}},"id":9}}"#,
        "x".repeat(MAX_LINE_BYTES)
    );
    stdio.send(format!("{long}\n").as_bytes()).await;
    let answer = stdio.answer_to(&json!(9)).await;
    assert_parse_error(&answer, &json!(9));
    assert!(answer["error"]["message"].as_str().is_some_and(|message| message.contains(&MAX_LINE_BYTES.to_string())));

    // No id to be found: answered without one.
    stdio.send(b"{\"jsonrpc\":\"2.0\",\"metho\xFF\n").await;
    let answer = stdio.next_message().await;
    assert!(answer.get("id").is_none(), "{answer}");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");

    // The session goes on, and none of the refused calls ran: the catalog is empty.
    stdio.send(&[criar_curso("10", "\"Café\""), b"\n".to_vec()].concat()).await;
    let created = stdio.answer_to(&json!(10)).await;
    assert_eq!(created["result"]["isError"], false, "{created}");
    stdio
        .send_line(r#"{"jsonrpc":"2.0","id":11,"method":"resources/read","params":{"uri":"cursos://catalogo"}}"#)
        .await;
    let catalog = stdio.answer_to(&json!(11)).await;
    let text = catalog["result"]["contents"][0]["text"].as_str().expect("catalog text");
    let catalog: Value = serde_json::from_str(text).expect("catalog JSON");
    let titles: Vec<&str> =
        catalog["cursos"].as_array().expect("cursos").iter().filter_map(|c| c["titulo"].as_str()).collect();
    assert_eq!(titles, ["Café"], "{catalog}");

    let (status, _) = stdio.close_and_wait().await;
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_app_exits_with_status_0_whenever_stdin_closes() {
    // Nothing at all.
    let stdio = RawStdio::start();
    let (status, output) = stdio.close_and_wait().await;
    assert!(status.success(), "empty stdin: {status:?}");
    assert!(output.is_empty(), "{output:?}");

    // Half a line, then the end: the half line is answered.
    let mut stdio = RawStdio::start();
    stdio.send(br#"{"jsonrpc":"2.0","id":1,"method":"initial"#).await;
    let (status, output) = stdio.close_and_wait().await;
    assert!(status.success(), "partial line: {status:?}");
    assert_eq!(output.len(), 1, "{output:?}");
    assert_parse_error(&output[0], &json!(1));

    // `initialize`, then the end at once: answered, then a clean exit.
    let mut stdio = RawStdio::start();
    stdio.send_line(INITIALIZE).await;
    let (status, output) = stdio.close_and_wait().await;
    assert!(status.success(), "closed after initialize: {status:?}");
    assert!(output.iter().any(|message| message["id"] == 1 && message["result"].is_object()), "{output:?}");

    // `initialize`, then the host goes away without reading the answer (stdout closed too).
    let mut stdio = RawStdio::start();
    stdio.send_line(INITIALIZE).await;
    let RawStdio { mut child, stdin, stdout, _folder } = stdio;
    drop(stdout);
    drop(stdin);
    let status = tokio::time::timeout(PATIENCE, child.wait()).await.expect("exited in time").expect("status");
    assert!(status.success(), "host gone after initialize: {status:?}");

    // A whole session.
    let mut stdio = RawStdio::start();
    stdio.initialize().await;
    stdio.send_line(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    assert!(stdio.answer_to(&json!(2)).await["result"].is_object());
    let (status, _) = stdio.close_and_wait().await;
    assert!(status.success(), "after a session: {status:?}");
}
