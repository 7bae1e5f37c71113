//! The negative tenant suite (issue 10, ADR 0035): one real backend, a keys file holding keys of
//! two catalogs (made with the real `keys create --catalog`), on SQLite and on PostgreSQL (when
//! it answers, ADR 0031), on both protocol eras. Every swap between the tenants (the key, the
//! course id, the URI, the cursor, the idempotency key, the subscription) is refused or empty,
//! refused exactly as an id that does not exist, and both catalogs are unchanged; under a
//! concurrent load of both catalogs no notice crosses.

use std::path::Path;

use mcp_cursos_e2e::{call, course_uri, id_completion};
use rmcp::RoleClient;
use rmcp::model::{PaginatedRequestParams, ReadResourceRequestParams, SubscribeRequestParams, SubscriptionFilter};
use rmcp::service::RunningService;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{
    Backend, ERAS, Era, PATIENCE, PostgresSchema, Recorder, binary, fresh_database, new_key, run_to_end,
    start_backend_with_keys_file, stdio_client, stdio_client_in_catalog,
};

/// `keys create --catalog`: the key, printed once on stdout.
fn create_key(keys_file: &Path, name: &str, catalog: &str) -> String {
    new_key(keys_file, &["--name", name, "--scope", "escrita", "--catalog", catalog])
}

type Tenant = RunningService<RoleClient, Recorder>;

async fn create(client: &Tenant, titulo: &str, key: Option<&str>) -> Value {
    let mut arguments = json!({"titulo": titulo, "cargaHoraria": 8});
    if let Some(key) = key {
        arguments["chaveIdempotencia"] = json!(key);
    }
    let result = call(client, "criar_curso", arguments).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    result.structured_content.expect("course")
}

async fn read(client: &Tenant, uri: &str) -> Result<Value, rmcp::ErrorData> {
    match client.read_resource(ReadResourceRequestParams::new(uri)).await {
        Ok(result) => {
            let json = serde_json::to_value(&result).expect("json");
            Ok(serde_json::from_str(json["contents"][0]["text"].as_str().expect("text")).expect("JSON"))
        }
        Err(rmcp::ServiceError::McpError(error)) => Err(error),
        Err(other) => panic!("{uri}: {other:?}"),
    }
}

/// Everything one tenant can see of its catalog: every page of the listing.
async fn everything(client: &Tenant) -> Vec<Value> {
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = client
            .list_resources(Some(PaginatedRequestParams::default().with_cursor(cursor.clone())))
            .await
            .expect("resources/list");
        seen.extend(page.resources.iter().map(|resource| json!(resource)));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return seen,
        }
    }
}

/// Waits (bounded) for `fence`, then returns every notice received before it.
async fn notices_until(receiver: &mut mpsc::UnboundedReceiver<String>, fence: &str) -> Vec<String> {
    let mut before = Vec::new();
    tokio::time::timeout(PATIENCE, async {
        while let Some(notice) = receiver.recv().await {
            if notice == fence {
                return;
            }
            before.push(notice);
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {fence} within the patience; saw {before:?}"));
    before
}

/// The store a backend runs on: a SQLite file, or a PostgreSQL schema of its own.
async fn start(environment: &[(&str, &str)]) -> (tempfile::TempDir, Backend, String, String) {
    let (folder, database) = fresh_database();
    let keys_file = folder.path().join("chaves");
    let azul = create_key(&keys_file, "azul", "time-azul");
    let verde = create_key(&keys_file, "verde", "time-verde");
    let text = std::fs::read_to_string(&keys_file).expect("keys file");
    assert!(text.contains("azul escrita catalogo=time-azul sha256:"), "{text}");
    let backend = start_backend_with_keys_file(&database, &keys_file, environment).await;
    (folder, backend, azul, verde)
}

#[allow(deprecated, reason = "resources/subscribe is the 2025-era API under test")]
async fn every_swap_is_refused_or_empty(environment: &[(&str, &str)]) {
    let (_folder, backend, azul_key, verde_key) = start(environment).await;
    for era in ERAS {
        let (azul_notices, _azul_received) = mpsc::unbounded_channel();
        let azul = backend.client_with_handler_and_key(Recorder(azul_notices), &azul_key, era).await;
        let (verde_notices, mut verde_received) = mpsc::unbounded_channel();
        let verde = backend.client_with_handler_and_key(Recorder(verde_notices), &verde_key, era).await;
        let key = format!("pedido-{era:?}");
        let theirs = create(&azul, &format!("Segredo {era:?}"), Some(&key)).await;
        let id = theirs["id"].as_str().expect("id").to_owned();
        let mine = create(&verde, &format!("Meu {era:?}"), None).await;
        // A page cursor of azul's: more than a page of courses.
        for number in 0..100 {
            create(&azul, &format!("Página {era:?} {number:03}"), None).await;
        }
        let azul_before = everything(&azul).await;
        let verde_before = everything(&verde).await;
        assert!(azul_before.len() > 100 && verde_before.len() < 10);

        // The course id and the URI: answered exactly as an id that does not exist.
        let unknown = format!("cursos://{}", uuid_of_zeros());
        let unknown_error = read(&verde, &unknown).await.expect_err("unknown");
        for uri in [format!("cursos://{id}"), format!("cursos://{id}/historico")] {
            let error = read(&verde, &uri).await.expect_err("another tenant's course is not found");
            assert_eq!(error.code, unknown_error.code, "{era:?} {uri}");
            assert!(!error.message.contains("Segredo"), "{}", error.message);
        }
        for (tool, arguments) in [
            ("atualizar_curso", json!({"id": id, "titulo": "Tomado"})),
            ("atualizar_curso", json!({"id": id, "cargaHoraria": 9, "versao": 1})),
            ("arquivar_curso", json!({"id": id})),
        ] {
            let refused = call(&verde, tool, arguments).await;
            assert_eq!(refused.is_error, Some(true), "{era:?} {tool}: {refused:?}");
            assert!(!format!("{refused:?}").contains("Segredo"), "{refused:?}");
        }
        // The cursor: azul's next page, presented by verde, lists only verde's courses.
        let first = azul.list_resources(None).await.expect("list");
        let cursor = first.next_cursor.expect("azul has a second page");
        let crossed = verde
            .list_resources(Some(PaginatedRequestParams::default().with_cursor(Some(cursor))))
            .await
            .expect("list");
        assert!(crossed.resources.iter().all(|resource| verde_before.contains(&json!(resource))), "{era:?}");
        // The idempotency key: in verde it is another creation, never azul's course.
        let replay = create(&verde, &format!("Segredo {era:?}"), Some(&key)).await;
        assert_ne!(replay["id"], theirs["id"]);
        // Completion: azul's ids are never offered to verde.
        let offered = verde.complete(id_completion(&id[..8])).await.expect("complete").completion.values;
        assert!(!offered.contains(&id), "{era:?}");
        // The subscription: verde subscribes to azul's course (2025) or listens to it (2026);
        // azul changes it; verde hears nothing of it before its own change (the fence).
        let mine_uri = course_uri(&mine);
        let mut stream = None;
        match era {
            Era::Initialize => {
                for uri in [format!("cursos://{id}"), mine_uri.clone()] {
                    verde.subscribe(SubscribeRequestParams::new(uri)).await.expect("subscribe");
                }
            }
            Era::Discover => {
                let filter = SubscriptionFilter::builder()
                    .resource_subscription(format!("cursos://{id}"))
                    .resource_subscription(mine_uri.clone())
                    .build();
                stream = Some(verde.listen(filter).await.expect("listen"));
            }
        }
        let renamed = call(&azul, "atualizar_curso", json!({"id": id, "titulo": format!("Segredo {era:?} 2")})).await;
        assert_eq!(renamed.is_error, Some(false));
        call(&verde, "atualizar_curso", json!({"id": mine["id"], "cargaHoraria": 9})).await;
        let fence = format!("updated {mine_uri}");
        let heard = match stream.as_mut() {
            None => notices_until(&mut verde_received, &fence).await,
            Some(stream) => {
                let mut before = Vec::new();
                tokio::time::timeout(PATIENCE, async {
                    while let Ok(Some(notice)) = stream.next().await {
                        let value = serde_json::to_value(&notice).expect("json");
                        let label = format!("updated {}", value["params"]["uri"].as_str().unwrap_or_default());
                        if label == fence {
                            return;
                        }
                        before.push(label);
                    }
                })
                .await
                .expect("the fence arrives");
                before
            }
        };
        assert!(heard.iter().all(|notice| !notice.contains(&id)), "{era:?}: {heard:?}");
        if let Some(mut stream) = stream {
            stream.cancel().await.expect("cancel");
        }

        // Both catalogs are as each tenant left them.
        let azul_after = everything(&azul).await;
        assert_eq!(azul_after.len(), azul_before.len());
        let course = read(&azul, &format!("cursos://{id}")).await.expect("azul's course");
        assert_eq!((course["versao"].as_u64(), course["arquivado"].as_bool()), (Some(2), Some(false)));
        let history = read(&azul, &format!("cursos://{id}/historico")).await.expect("history");
        assert!(!history.to_string().contains("\"verde\""), "no write of verde's in azul's history: {history}");
        let verde_after = everything(&verde).await;
        // verde's own creation under the swapped idempotency key is the one course it gained.
        assert_eq!(verde_after.len(), verde_before.len() + 1);
        assert!(verde_after.iter().any(|resource| resource["uri"] == course_uri(&replay)));
        assert!(verde_before.iter().all(|resource| verde_after.contains(resource) || resource["uri"] == mine_uri));
        azul.cancel().await.expect("close");
        verde.cancel().await.expect("close");
    }
    assert!(backend.stop().await.success());
}

/// `rounds` updates of each of `ids`, then the fence: one more write of the first.
async fn write_load(client: &Tenant, ids: &[String], rounds: usize) {
    for round in 0..rounds {
        for id in ids {
            let hours = 10 + u32::try_from(round).expect("small");
            let result = call(client, "atualizar_curso", json!({"id": id, "cargaHoraria": hours})).await;
            assert_eq!(result.is_error, Some(false), "{result:?}");
        }
    }
    call(client, "atualizar_curso", json!({"id": ids[0], "titulo": "Fim"})).await;
}

fn uuid_of_zeros() -> &'static str {
    "00000000-0000-4000-8000-000000000000"
}

/// Both tenants write at once, each subscribed to the other's courses too (a swapped
/// subscription); once each hears the fence of its own last write, neither heard of the other's.
#[allow(deprecated, reason = "resources/subscribe is the 2025-era API under test")]
async fn no_notice_crosses_under_a_concurrent_load(environment: &[(&str, &str)]) {
    const COURSES: usize = 8;
    const ROUNDS: usize = 5;
    let (_folder, backend, azul_key, verde_key) = start(environment).await;
    let mut tenants = Vec::new();
    for (name, key) in [("azul", &azul_key), ("verde", &verde_key)] {
        let (sender, receiver) = mpsc::unbounded_channel();
        let client = backend.client_with_handler_and_key(Recorder(sender), key, Era::Initialize).await;
        let mut ids = Vec::new();
        for number in 0..COURSES {
            ids.push(
                create(&client, &format!("Carga {name} {number}"), None).await["id"].as_str().expect("id").to_owned(),
            );
        }
        tenants.push((name, client, receiver, ids));
    }
    let all_ids: Vec<String> = tenants.iter().flat_map(|(_, _, _, ids)| ids.clone()).collect();
    for (_, client, _, _) in &tenants {
        for id in &all_ids {
            client.subscribe(SubscribeRequestParams::new(format!("cursos://{id}"))).await.expect("subscribe");
        }
    }
    tokio::join!(write_load(&tenants[0].1, &tenants[0].3, ROUNDS), write_load(&tenants[1].1, &tenants[1].3, ROUNDS));
    for (name, _, receiver, ids) in &mut tenants {
        let heard = notices_until(receiver, &format!("updated cursos://{}", ids[0])).await;
        let mut rest = Vec::new();
        while let Ok(notice) = receiver.try_recv() {
            rest.push(notice);
        }
        for notice in heard.iter().chain(&rest) {
            if let Some(uri) = notice.strip_prefix("updated cursos://") {
                assert!(ids.iter().any(|own| own == uri), "{name} heard of another catalog's course: {notice}");
            }
        }
    }
    for (_, client, _, _) in tenants {
        client.cancel().await.expect("close");
    }
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_every_swap_between_two_tenants_is_refused_or_empty_on_both_eras() {
    every_swap_is_refused_or_empty(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_every_swap_between_two_tenants_is_refused_or_empty_on_both_eras() {
    let Some(schema) = PostgresSchema::create() else { return };
    let url = schema.url();
    every_swap_is_refused_or_empty(&[("DATABASE_URL", url.as_str())]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_no_notice_crosses_between_two_tenants_loaded_at_once() {
    no_notice_crosses_under_a_concurrent_load(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_no_notice_crosses_between_two_tenants_loaded_at_once() {
    let Some(schema) = PostgresSchema::create() else { return };
    let url = schema.url();
    no_notice_crosses_under_a_concurrent_load(&[("DATABASE_URL", url.as_str())]).await;
}

/// The stdio app serves the one catalog of `--catalog`: two apps on one file, in `padrao` and in
/// `time-azul`, see nothing of each other's courses; a name that is not a catalog stops the app
/// with a Portuguese message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_app_serves_only_the_catalog_of_its_setting() {
    let (_folder, database) = fresh_database();
    let (default, _lines) = stdio_client(&database, Era::Initialize).await;
    let azul = stdio_client_in_catalog(&database, "time-azul", Era::Discover).await;
    let arguments = json!({"titulo": "Rust", "cargaHoraria": 8});
    let created = call(&default, "criar_curso", arguments.clone()).await;
    let id = created.structured_content.expect("course")["id"].as_str().expect("id").to_owned();
    let same_title = call(&azul, "criar_curso", arguments).await;
    assert_eq!(same_title.is_error, Some(false), "titles are unique per catalog: {same_title:?}");
    let refused = azul.read_resource(ReadResourceRequestParams::new(format!("cursos://{id}"))).await;
    assert!(matches!(refused, Err(rmcp::ServiceError::McpError(_))), "{refused:?}");
    let listing = azul.list_resources(None).await.expect("list");
    assert!(!serde_json::to_string(&listing).expect("json").contains(&id));
    assert_eq!(listing.resources.len(), 2, "the catalog and azul's own course");
    default.cancel().await.expect("close");
    azul.cancel().await.expect("close");

    let output = run_to_end(
        std::process::Command::new(binary("mcp-cursos-stdio"))
            .env_clear()
            .env("DATABASE_PATH", &database)
            .args(["--catalog", "Time Azul"]),
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("catálogo"), "{stderr}");
}
