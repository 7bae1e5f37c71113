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
