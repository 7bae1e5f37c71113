//! What operators watch: `/ready` (the database answers) and `/metrics` (Prometheus), on the real
//! backend.

use mcp_cursos_e2e::try_call;
use rmcp::model::ReadResourceRequestParams;
use serde_json::json;

use crate::support::{Era, PostgresSchema, fresh_database, start_backend, start_backend_with};

/// The value of the sample `name` (exact line prefix, labels included) in a Prometheus text.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_by_method_and_status_with_sessions_and_the_pool() {
    let (_folder, database) = fresh_database();
    let backend = start_backend_with(&database, Some("chave-de-metricas"), &[("METRICS", "true")]).await;
    let client = backend.client(Era::Initialize).await;
    for number in 0..3 {
        try_call(&client, "criar_curso", json!({"titulo": format!("Curso {number}"), "cargaHoraria": 10}))
            .await
            .expect("created");
    }
    client.read_resource(ReadResourceRequestParams::new("cursos://catalogo")).await.expect("read");
    let refused = reqwest::Client::new().post(&backend.mcp_url).body("{}").send().await.expect("request");
    assert_eq!(refused.status(), 401);

    let response = reqwest::get(format!("{}/metrics", backend.base_url)).await.expect("metrics");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().expect("text").to_owned();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    let text = response.text().await.expect("text");
    assert_eq!(sample(&text, "mcp_cursos_requests_total{method=\"tools/call\",status=\"200\"}"), Some(3.0), "{text}");
    assert_eq!(sample(&text, "mcp_cursos_requests_total{method=\"resources/read\",status=\"200\"}"), Some(1.0));
    assert_eq!(sample(&text, "mcp_cursos_requests_total{method=\"initialize\",status=\"200\"}"), Some(1.0));
    assert_eq!(sample(&text, "mcp_cursos_request_duration_seconds_count{method=\"tools/call\"}"), Some(3.0));
    assert_eq!(sample(&text, "mcp_cursos_http_responses_total{status=\"401\"}"), Some(1.0));
    assert_eq!(sample(&text, "mcp_cursos_sessions"), Some(1.0));
    assert_eq!(sample(&text, "mcp_cursos_db_pool_max_connections"), Some(8.0));
    assert!(sample(&text, "mcp_cursos_db_pool_connections").is_some_and(|open| open >= 1.0), "{text}");
    assert!(!text.contains("chave-de-metricas"), "no key in the metrics");

    let foreign = reqwest::Client::new()
        .get(format!("{}/metrics", backend.base_url))
        .header("host", "evil.example")
        .send()
        .await
        .expect("request");
    assert_eq!(foreign.status(), 403, "the Host check covers /metrics too");
    client.cancel().await.expect("close");
    assert!(backend.stop().await.success());
}

/// The OpenTelemetry MCP conventions' histograms on `/metrics` too (issue 27): per tool with its
/// outcome, an unknown tool as `_OTHER`, and each 2025-era session's duration once it ends; a
/// 2026-07-28 client opens no session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_mcp_conventions_histograms_per_tool_and_each_ended_session() {
    let (_folder, database) = fresh_database();
    let backend = start_backend_with(&database, Some("chave-de-histogramas"), &[("METRICS", "true")]).await;
    let client = backend.client(Era::Initialize).await;
    for number in 0..2 {
        let created =
            try_call(&client, "criar_curso", json!({"titulo": format!("Curso {number}"), "cargaHoraria": 10}))
                .await
                .expect("created");
        assert_eq!(created.is_error, Some(false));
    }
    let refused = try_call(&client, "criar_curso", json!({"titulo": "", "cargaHoraria": 10})).await.expect("answered");
    assert_eq!(refused.is_error, Some(true));
    try_call(&client, "nome-escolhido-pelo-cliente", json!({})).await.expect_err("no such tool");
    client.cancel().await.expect("close: the session ends");
    let modern = backend.client(Era::Discover).await;
    try_call(&modern, "criar_curso", json!({"titulo": "Curso sem sessão", "cargaHoraria": 10})).await.expect("created");

    let at = "mcp_protocol_version=\"2025-11-25\",network_transport=\"tcp\",network_protocol_name=\"http\"";
    let session_count = format!("mcp_server_session_duration_seconds_count{{{at}}}");
    let deadline = std::time::Instant::now() + crate::support::PATIENCE;
    let text = loop {
        let text =
            reqwest::get(format!("{}/metrics", backend.base_url)).await.expect("metrics").text().await.expect("text");
        if sample(&text, &session_count).is_some() {
            break text;
        }
        assert!(std::time::Instant::now() < deadline, "the ended session was never recorded:\n{text}");
        tokio::task::yield_now().await;
    };
    let tool = |name: &str, at: &str, outcome: &str| {
        format!(
            "mcp_server_operation_duration_seconds_count{{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{name}\",gen_ai_operation_name=\"execute_tool\",{at}{outcome}}}"
        )
    };
    assert_eq!(sample(&text, &tool("criar_curso", at, "")), Some(2.0), "{text}");
    assert_eq!(sample(&text, &tool("criar_curso", at, ",error_type=\"tool_error\"")), Some(1.0), "{text}");
    let unknown = ",error_type=\"-32602\",rpc_response_status_code=\"-32602\"";
    assert_eq!(sample(&text, &tool("_OTHER", at, unknown)), Some(1.0), "{text}");
    let modern_at = "mcp_protocol_version=\"2026-07-28\",network_transport=\"tcp\",network_protocol_name=\"http\"";
    assert_eq!(sample(&text, &tool("criar_curso", modern_at, "")), Some(1.0), "{text}");
    assert_eq!(sample(&text, &session_count), Some(1.0), "one session: the 2026-07-28 client opened none\n{text}");
    assert!(!text.contains("nome-escolhido-pelo-cliente"), "a client's name never becomes a label");
    assert!(!text.contains("chave-de-histogramas"), "no key in the metrics");
    modern.cancel().await.expect("close");
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_off_unless_enabled_and_ready_answers_once_the_database_does() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some("chave-de-prontidao")).await;
    let client = backend.client(Era::Discover).await;
    try_call(&client, "criar_curso", json!({"titulo": "Rust", "cargaHoraria": 10})).await.expect("created");
    let metrics = reqwest::get(format!("{}/metrics", backend.base_url)).await.expect("metrics");
    assert_eq!(metrics.status(), 404);
    let ready = reqwest::get(format!("{}/ready", backend.base_url)).await.expect("ready");
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.json::<serde_json::Value>().await.expect("json"), json!({"status": "ready"}));

    let health = reqwest::get(format!("{}/health", backend.base_url)).await.expect("health");
    assert_eq!(health.status(), 200);
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_fails_while_the_database_does_not_answer_and_recovers_after() {
    use diesel::{Connection, RunQueryDsl};

    let Some(schema) = PostgresSchema::create() else { return };
    let url = schema.url();
    let (_folder, unused_sqlite) = fresh_database();
    let backend =
        start_backend_with(&unused_sqlite, Some("chave-de-prontidao-pg"), &[("DATABASE_URL", url.as_str())]).await;
    let ready =
        || async { reqwest::get(format!("{}/ready", backend.base_url)).await.expect("ready").status().as_u16() };
    assert_eq!(ready().await, 200);

    // Another session holds an exclusive lock on the table readiness reads: the database is up but
    // does not answer this replica, as during a long migration or a stuck transaction.
    let mut blocker = diesel::PgConnection::establish(&url).expect("connect");
    diesel::sql_query("BEGIN").execute(&mut blocker).expect("begin");
    diesel::sql_query("LOCK TABLE catalog_counters IN ACCESS EXCLUSIVE MODE").execute(&mut blocker).expect("lock");
    assert_eq!(ready().await, 503, "not ready while the database does not answer within 2 s");
    let health = reqwest::get(format!("{}/health", backend.base_url)).await.expect("health");
    assert_eq!(health.status(), 200, "liveness does not depend on the database");

    diesel::sql_query("COMMIT").execute(&mut blocker).expect("commit");
    let mut status = 503;
    for _ in 0..100 {
        status = ready().await;
        if status == 200 {
            break;
        }
    }
    assert_eq!(status, 200, "ready again once the database answers");
    assert!(backend.stop().await.success());
}
