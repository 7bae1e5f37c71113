//! Issue 23, items 2 and 3, on the real process over loopback HTTP: a session belongs to the
//! caller that opened it (anyone else is told it does not exist, on every method), and a change
//! to a caller in the keys file (revoked, moved to another catalog, downgraded) ends the streams
//! it has open, on both eras, within the file's reread interval plus one second, after which it
//! hears nothing more.

use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use rmcp::model::SubscriptionFilter;
use serde_json::{Value, json};

use crate::support::{Backend, Era, PATIENCE, fresh_database, keys, new_key, start_backend_with_keys_file};

/// The keys file's reread interval (the backend's `RELOAD_INTERVAL`).
const RELOAD_INTERVAL: Duration = Duration::from_millis(500);
/// How long after a reread a changed caller's streams may still be open (documented in
/// `ServerState::recheck_listeners` and the deploy notes): one second.
const BOUND: Duration = Duration::from_secs(1);
const LEGACY: &str = "2025-11-25";
const UNKNOWN_SESSION: &str = "Not Found: Session not found";

fn key(keys_file: &Path, name: &str, scope: &str) -> String {
    new_key(keys_file, &["--name", name, "--scope", scope])
}

/// A plain HTTP request to `/mcp` of a 2025-era session: `method`, `key`, `session`, `body`.
async fn send(
    backend: &Backend,
    method: reqwest::Method,
    key: &str,
    session: Option<&str>,
    body: Option<Value>,
) -> Raw {
    let mut request = reqwest::Client::new()
        .request(method.clone(), &backend.mcp_url)
        .bearer_auth(key)
        .header("mcp-protocol-version", LEGACY)
        .header(
            "accept",
            if method == reqwest::Method::GET { "text/event-stream" } else { "application/json, text/event-stream" },
        );
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = tokio::time::timeout(PATIENCE, request.send()).await.expect("answered in time").expect("sent");
    Raw::read(response, method != reqwest::Method::GET).await
}

/// What a client can see of an answer: its status, its headers but the date, and its body
/// (not for a GET stream that opened: it would not end).
#[derive(Debug, PartialEq, Eq)]
struct Raw {
    status: StatusCode,
    headers: Vec<(String, String)>,
    body: String,
}

impl Raw {
    async fn read(response: reqwest::Response, ends: bool) -> Self {
        let status = response.status();
        let mut headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .filter(|(name, _)| *name != "date")
            .map(|(name, value)| (name.to_string(), value.to_str().unwrap_or_default().to_owned()))
            .collect();
        headers.sort();
        let endless = !ends && status == StatusCode::OK;
        let body = if endless {
            String::new()
        } else {
            tokio::time::timeout(PATIENCE, response.text()).await.expect("body in time").expect("body")
        };
        Self { status, headers, body }
    }
}

/// `initialize` and `notifications/initialized` with `key`: the new session's id.
async fn open_session(backend: &Backend, key: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {"elicitation": {}}, "clientInfo": {"name": "dono", "version": "1"}}});
    let response = reqwest::Client::new()
        .post(&backend.mcp_url)
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", LEGACY)
        .json(&initialize)
        .send()
        .await
        .expect("initialize");
    assert_eq!(response.status(), StatusCode::OK);
    let session = response.headers()["mcp-session-id"].to_str().expect("session id").to_owned();
    response.text().await.expect("initialize result");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = send(backend, reqwest::Method::POST, key, Some(&session), Some(initialized)).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
    session
}

/// Item 2: B's key with A's session id, on every method (a request, a notification, an answer
/// to a question of the server, the GET stream, DELETE), is answered exactly as an id nobody
/// opened: 404 `Not Found: Session not found`, same headers, same body. A's session still works
/// afterwards, and B's own session too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_presented_with_another_callers_key_is_an_unknown_session_on_every_method() {
    let (folder, database) = fresh_database();
    let keys_file = folder.path().join("chaves");
    let owner = key(&keys_file, "dona", "escrita");
    let intruder = key(&keys_file, "intrusa", "escrita");
    let backend = start_backend_with_keys_file(&database, &keys_file, &[]).await;
    let owners_session = open_session(&backend, &owner).await;
    let intruders_session = open_session(&backend, &intruder).await;
    let nobodys_session = "0123456789abcdef0123456789abcdef".to_owned();

    let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
    let notice = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}});
    let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {"confirmar": true}}});
    let methods: [(&str, reqwest::Method, Option<Value>); 5] = [
        ("a request", reqwest::Method::POST, Some(list.clone())),
        ("a notification", reqwest::Method::POST, Some(notice)),
        ("an answer to the server's question", reqwest::Method::POST, Some(answer)),
        ("the GET stream", reqwest::Method::GET, None),
        ("DELETE", reqwest::Method::DELETE, None),
    ];
    for (what, method, body) in &methods {
        let unknown = send(&backend, method.clone(), &intruder, Some(&nobodys_session), body.clone()).await;
        assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{what}, an id nobody opened: {unknown:?}");
        assert_eq!(unknown.body, UNKNOWN_SESSION, "{what}");
        for (presenting, session) in [(&intruder, &owners_session), (&owner, &intruders_session)] {
            let swapped = send(&backend, method.clone(), presenting, Some(session), body.clone()).await;
            assert_eq!(swapped, unknown, "{what}: another caller's session is answered as an unknown one");
        }
    }

    for (key, session) in [(&owner, &owners_session), (&intruder, &intruders_session)] {
        let listed = send(&backend, reqwest::Method::POST, key, Some(session), Some(list.clone())).await;
        assert_eq!(listed.status, StatusCode::OK, "each session still works for its own caller: {listed:?}");
        assert!(listed.body.contains("criar_curso"), "{listed:?}");
        let stream = reqwest::Client::new()
            .get(&backend.mcp_url)
            .bearer_auth(key)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", LEGACY)
            .header("mcp-session-id", session)
            .send()
            .await
            .expect("GET stream");
        assert_eq!(stream.status(), StatusCode::OK, "its owner opens its GET stream");
        drop(stream);
    }
    assert_eq!(backend.health().await["sessions"], 2, "nobody closed anybody's session");
    let deleted = send(&backend, reqwest::Method::DELETE, &owner, Some(&owners_session), None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "its owner closes it: {deleted:?}");
    let again = send(&backend, reqwest::Method::DELETE, &owner, Some(&owners_session), None).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "a closed session is unknown, to its owner too");

    let logs = backend.stderr.all();
    assert!(logs.contains("a request named a session its caller did not open"), "{logs}");
    // Our refusal names no session id (rmcp itself logs the ids it creates, at info).
    let refusals = logs.lines().filter(|line| line.contains("did not open"));
    for line in refusals {
        assert!(!line.contains(&owners_session) && !line.contains(&intruders_session), "{line}");
    }
    for secret in [&owner, &intruder] {
        assert!(!logs.contains(secret.as_str()), "no key in the log");
    }
    assert!(backend.stop().await.success());
}

/// The listeners a test watches, both of one key and on the catalog: a 2025-era session (plain
/// HTTP: `initialize`, `resources/subscribe`, then its GET stream, read as it comes) and a
/// 2026-07-28 listen stream (the rmcp client).
struct Listeners {
    /// The key and the 2025-era session the GET stream belongs to.
    key: String,
    session: String,
    get_stream: reqwest::Response,
    /// What the GET stream sent and was not read as an event yet.
    unread: String,
    modern: crate::support::Client,
    stream: rmcp::service::Subscription,
}

async fn listen(backend: &Backend, key: &str) -> Listeners {
    let session = open_session(backend, key).await;
    let subscribe =
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "cursos://catalogo"}});
    let answer = send(backend, reqwest::Method::POST, key, Some(&session), Some(subscribe)).await;
    assert!(answer.body.contains("\"result\""), "{answer:?}");
    let get_stream = reqwest::Client::new()
        .get(&backend.mcp_url)
        .bearer_auth(key)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", LEGACY)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("GET stream");
    assert_eq!(get_stream.status(), StatusCode::OK);
    let modern = backend.client_with_key(key, Era::Discover).await;
    // One notice per change on the stream: `updated cursos://catalogo`.
    let filter = SubscriptionFilter::builder().resource_subscription("cursos://catalogo").build();
    let stream = modern.listen(filter).await.expect("subscriptions/listen");
    Listeners { key: key.to_owned(), session, get_stream, unread: String::new(), modern, stream }
}

/// Pings each of `sessions` (key, session) every `pace`, forever, ignoring the answers: a session
/// that hears nothing for `SESSION_IDLE_TIMEOUT` is closed by the backend, rightly, and a test that
/// waits on something else (a reread of the keys file) must not lose its sessions to that.
async fn keep_alive(backend: &Backend, sessions: Vec<(String, String)>, pace: Duration) {
    for id in 1_000_u64.. {
        for (key, session) in &sessions {
            let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
            send(backend, reqwest::Method::POST, key, Some(session), Some(ping)).await;
        }
        tokio::time::sleep(pace).await;
    }
}

impl Listeners {
    /// The method of the next notification on the GET stream (bounded), `None` once it ended.
    async fn next_on_get_stream(&mut self) -> Option<String> {
        loop {
            while let Some(end) = self.unread.find("\n\n") {
                let event: String = self.unread.drain(..end + 2).collect();
                let data: String = event.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim).collect();
                if let Ok(message) = serde_json::from_str::<Value>(&data)
                    && let Some(method) = message["method"].as_str()
                {
                    return Some(method.to_owned());
                }
            }
            match tokio::time::timeout(PATIENCE, self.get_stream.chunk()).await.expect("the GET stream moved in time") {
                Ok(Some(bytes)) => self.unread.push_str(&String::from_utf8_lossy(&bytes).replace("\r\n", "\n")),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Both hear of a course's creation, every notice of it: the session `updated` and
    /// `list_changed`, the stream `updated`.
    async fn hear(&mut self) {
        let mut missing = vec!["notifications/resources/updated", "notifications/resources/list_changed"];
        while !missing.is_empty() {
            let method = self.next_on_get_stream().await.expect("the GET stream is open");
            missing.retain(|wanted| *wanted != method);
        }
        let value = mcp_cursos_e2e::next_stream_notice(&mut self.stream).await;
        assert_eq!(value["method"], "notifications/resources/updated", "{value}");
    }
}

/// Item 3, for one change to the keys file (`edit`, applied to the line of key `ouvinte`): the
/// key's open 2025 session (its GET stream idle past `SESSION_IDLE_TIMEOUT`) and 2026 listen
/// stream end within the reread interval plus [`BOUND`], the end is logged with the key's name
/// and `reason`, and after it no notice reaches either, while another key's listeners hear every
/// change.
async fn a_change_ends_the_open_streams(edit: impl FnOnce(&Path), reason: &str) {
    let (folder, database) = fresh_database();
    let keys_file = folder.path().join("chaves");
    let changed = key(&keys_file, "ouvinte", "escrita");
    let staying = key(&keys_file, "escritor", "escrita");
    let idle_timeout = Duration::from_secs(1);
    let backend = start_backend_with_keys_file(&database, &keys_file, &[("SESSION_IDLE_TIMEOUT", "1")]).await;
    let writer = backend.client_with_key(&staying, Era::Discover).await;
    let mut changing = listen(&backend, &changed).await;
    let mut control = listen(&backend, &staying).await;
    let all_open = |health: &Value| health["subscriptions"]["listenStreams"] == 2 && health["sessions"] == 2;
    backend.poll_health("every listener open", all_open).await;
    mcp_cursos_e2e::create(&writer, "Antes").await;
    changing.hear().await;
    control.hear().await;
    // The sessions send nothing past SESSION_IDLE_TIMEOUT while their GET streams carry notices
    // (what the issue saw): they stay open. The writes are paced, not waited on.
    let quiet_since = Instant::now();
    let mut number = 0;
    while quiet_since.elapsed() < idle_timeout * 2 {
        number += 1;
        mcp_cursos_e2e::create(&writer, &format!("Enquanto isso {number}")).await;
        changing.hear().await;
        control.hear().await;
        tokio::time::sleep(idle_timeout / 4).await;
    }
    let health = backend.health().await;
    assert_eq!(health["sessions"], 2, "sessions quiet past their idle time, their streams busy: {health}");

    // From here the streams may stay silent for longer than the idle timeout (the reread, the
    // checks): both sessions ping meanwhile, so that only the change can end the one and nothing
    // ends the other. A ping with the changed key after the change is refused, which is fine.
    let pinged = vec![(changing.key.clone(), changing.session.clone()), (control.key.clone(), control.session.clone())];
    let pinger = keep_alive(&backend, pinged, idle_timeout / 4);
    let after_the_change = async {
        edit(&keys_file);
        let edited = Instant::now();
        let ended = |health: &Value| {
            health["subscriptions"]["listenStreams"] == 1
                && health["subscriptions"]["sessions"] == 1
                && health["sessions"] == 1
        };
        backend.poll_health("the changed key's streams ended", ended).await;
        let took = edited.elapsed();
        eprintln!("{reason}: the streams ended {took:?} after the keys file changed");
        assert!(took <= RELOAD_INTERVAL + BOUND, "{reason}: ended after {took:?}");
        let stream_end =
            tokio::time::timeout(PATIENCE, changing.stream.next()).await.expect("the stream ended in time");
        assert!(
            matches!(stream_end, Ok(None) | Err(_)),
            "{reason}: the listen stream ended with no notice: {stream_end:?}"
        );

        for titulo in ["Depois 1", "Depois 2", "Depois 3"] {
            mcp_cursos_e2e::create(&writer, titulo).await;
            control.hear().await;
        }
        if let Some(method) = changing.next_on_get_stream().await {
            panic!("{reason}: the closed session's GET stream got {method} after the end");
        }
    };
    tokio::select! {
        () = after_the_change => {}
        () = pinger => unreachable!("the pinger pings forever"),
    }
    let logs = backend.stderr.all();
    for ended in ["a subscriptions/listen stream was ended", "a session was closed"] {
        let line = logs.lines().find(|line| line.contains(ended) && line.contains("ouvinte"));
        let line = line.unwrap_or_else(|| panic!("{reason}: {ended} is logged by name:\n{logs}"));
        assert!(line.contains(reason), "{reason}: {line}");
    }
    for secret in [&changed, &staying] {
        assert!(!logs.contains(secret.as_str()), "no key in the log");
    }

    control.stream.cancel().await.expect("cancel");
    for client in [writer, control.modern, changing.modern] {
        let _ = client.cancel().await;
    }
    assert!(backend.stop().await.success());
}

/// Rewrites the line of key `name` in the keys file with `rewrite`.
fn edit_line(keys_file: &Path, name: &str, rewrite: impl Fn(&str) -> String) {
    let text = std::fs::read_to_string(keys_file).expect("keys file");
    let edited: Vec<String> = text
        .lines()
        .map(|line| if line.split_whitespace().next() == Some(name) { rewrite(line) } else { line.to_owned() })
        .collect();
    assert_ne!(edited.join("\n"), text.trim_end(), "the line of {name} changed");
    std::fs::write(keys_file, edited.join("\n") + "\n").expect("write the keys file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_key_loses_its_open_streams_on_both_eras_and_hears_nothing_after() {
    a_change_ends_the_open_streams(
        |keys_file| {
            let output = keys(keys_file, &["revoke", "--name", "ouvinte"]);
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        },
        "revoked",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_moved_to_another_catalog_loses_its_open_streams_and_hears_nothing_of_the_old_catalog() {
    a_change_ends_the_open_streams(
        |keys_file| edit_line(keys_file, "ouvinte", |line| line.replace(" sha256:", " catalogo=outro sha256:")),
        "moved to another catalog",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_downgraded_to_reading_loses_its_open_streams() {
    a_change_ends_the_open_streams(
        |keys_file| edit_line(keys_file, "ouvinte", |line| line.replace(" escrita ", " leitura ")),
        "scope changed",
    )
    .await;
}
