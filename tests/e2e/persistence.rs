//! The data outlives the processes, and the two apps can share one database file.

use mcp_cursos_e2e::{call, course_uri, create, read_json as read};
use serde_json::json;

use crate::support::{ERAS, Era, fresh_database, start_backend, stdio_client};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn courses_survive_a_restart_of_the_backend() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some("chave-persistencia")).await;
    let client = backend.client(Era::Initialize).await;
    let created = create(&client, "Persistente").await["structuredContent"].clone();
    client.cancel().await.expect("close");
    assert!(backend.stop().await.success(), "SIGTERM stops the backend cleanly");

    let backend = start_backend(&database, Some("chave-persistencia")).await;
    for era in ERAS {
        let client = backend.client(era).await;
        let uri = course_uri(&created);
        assert_eq!(read(&client, &uri).await, created, "{era:?}");
        client.cancel().await.expect("close");
    }
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_app_and_the_backend_share_one_database_file() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some("chave-compartilhada")).await;
    let over_http = backend.client(Era::Initialize).await;
    let (over_stdio, _stderr) = stdio_client(&database, Era::Discover).await;

    let from_stdio = create(&over_stdio, "Criado pelo stdio").await["structuredContent"].clone();
    let from_http = create(&over_http, "Criado pelo HTTP").await["structuredContent"].clone();
    assert_eq!(read(&over_http, &course_uri(&from_stdio)).await, from_stdio);
    assert_eq!(read(&over_stdio, &course_uri(&from_http)).await, from_http);

    let duplicate = create(&over_http, "criado PELO stdio").await;
    assert_eq!(duplicate["isError"], true, "the title rule holds across processes: {duplicate}");
    let catalog = read(&over_stdio, "cursos://catalogo").await;
    assert_eq!(catalog["total"], 2);

    over_stdio.cancel().await.expect("close");
    over_http.cancel().await.expect("close");
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_course_the_backend_read_again_and_again_is_read_anew_once_the_stdio_app_changed_it() {
    // The backend serves repeated reads of a course from memory while its file is unchanged
    // (ADR 0034): a change by another process must still be what the very next read returns.
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some("chave-cache-de-teste")).await;
    let over_http = backend.client(Era::Initialize).await;
    let (over_stdio, _stderr) = stdio_client(&database, Era::Initialize).await;
    let created = create(&over_http, "Lido muitas vezes").await["structuredContent"].clone();
    let uri = course_uri(&created);
    for round in 1..=3 {
        for _ in 0..3 {
            assert_eq!(read(&over_http, &uri).await["versao"], round, "round {round}");
        }
        let arguments = json!({"id": created["id"], "cargaHoraria": 8 + round});
        let updated = json!(call(&over_stdio, "atualizar_curso", arguments).await);
        assert_eq!(updated["isError"], false, "{updated}");
        // No wait: the stdio app answered, so the change is committed.
        let read_after = read(&over_http, &uri).await;
        assert_eq!(read_after, updated["structuredContent"], "round {round}");
        assert_eq!(read_after["cargaHoraria"], 8 + round);
    }
    over_stdio.cancel().await.expect("close");
    over_http.cancel().await.expect("close");
    assert!(backend.stop().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_of_one_title_from_both_apps_let_exactly_one_win() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some("chave-corrida-de-teste")).await;
    let over_http = backend.client(Era::Initialize).await;
    let (over_stdio, _stderr) = stdio_client(&database, Era::Initialize).await;
    for round in 0..10 {
        let title = format!("Corrida {round}");
        let (first, second) = tokio::join!(create(&over_http, &title), create(&over_stdio, &title));
        let winners = [&first, &second].iter().filter(|result| result["isError"] == false).count();
        assert_eq!(winners, 1, "round {round}: {first} / {second}");
    }
    assert_eq!(read(&over_http, "cursos://catalogo").await["total"], 10);
    over_stdio.cancel().await.expect("close");
    over_http.cancel().await.expect("close");
    assert!(backend.stop().await.success());
}
