//! A database file that cannot take durable writes (ADR 0026): deleted or replaced while the
//! backend runs, made read-only, or on a full disk. Writes are refused with a message that says
//! retrying will not help (and no path), `/ready` answers 503 naming the reason, and after a restart
//! every acknowledged write is there.

use std::path::{Path, PathBuf};
use std::process::Command;

use courses_domain::testing::{ReadOnly, is_root};

use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use serde_json::{Value, json};

use crate::support::{Backend, Client, Era, PATIENCE, fresh_database, start_backend};

const KEY: &str = "chave-de-teste-da-durabilidade";

/// What the server says when retrying cannot help.
const WILL_NOT_HELP: &str = "Repetir o pedido não resolve";

/// The outcome of one `criar_curso`: the course's id when acknowledged, the refusal's text otherwise.
async fn create(client: &Client, title: &str) -> Result<String, String> {
    let arguments = json!({ "titulo": title, "cargaHoraria": 10 }).as_object().cloned().expect("object");
    let call = client.call_tool(CallToolRequestParams::new("criar_curso").with_arguments(arguments));
    let result = json!(tokio::time::timeout(PATIENCE, call).await.expect("answered in time").expect("a tool result"));
    if result["isError"] == true {
        Err(result["content"][0]["text"].as_str().unwrap_or_default().to_owned())
    } else {
        Ok(result["structuredContent"]["id"].as_str().expect("id").to_owned())
    }
}

/// The ids of every active course (one page is enough for these tests).
async fn catalog_ids(client: &Client) -> Vec<String> {
    let read = client.read_resource(ReadResourceRequestParams::new("cursos://catalogo"));
    let result = json!(tokio::time::timeout(PATIENCE, read).await.expect("answered in time").expect("catalog"));
    let catalog: Value = serde_json::from_str(result["contents"][0]["text"].as_str().expect("text")).expect("JSON");
    catalog["cursos"]
        .as_array()
        .expect("cursos")
        .iter()
        .map(|course| course["id"].as_str().expect("id").to_owned())
        .collect()
}

/// `GET /ready`: the status code and the JSON body.
async fn ready(backend: &Backend) -> (u16, Value) {
    let response = reqwest::get(format!("{}/ready", backend.base_url)).await.expect("/ready");
    let status = response.status().as_u16();
    (status, response.json().await.expect("/ready JSON"))
}

/// Five writes while the file cannot take them: every one refused, saying why and that retrying
/// will not help, never naming the file.
async fn five_writes_are_refused(client: &Client, database: &Path, why: &str) {
    let folder = database.parent().expect("folder").to_string_lossy().into_owned();
    for attempt in 0..5 {
        let refusal = create(client, &format!("Recusado {attempt}")).await.expect_err("refused");
        assert!(refusal.contains(why) && refusal.contains(WILL_NOT_HELP), "{refusal}");
        assert!(!refusal.contains("Tente novamente em instantes"), "{refusal}");
        assert!(!refusal.contains(&folder) && !refusal.contains("cursos.db"), "no path in {refusal}");
    }
}

/// Stops `backend`, starts it again on `database` and checks the catalog holds every
/// acknowledged write, and only those, and that it is ready.
async fn after_a_restart_exactly(backend: Backend, database: &Path, acknowledged: &[String]) {
    backend.stop().await;
    let restarted = start_backend(database, Some(KEY)).await;
    let client = restarted.client(Era::Initialize).await;
    assert_eq!(catalog_ids(&client).await, acknowledged, "every acknowledged write, and only those");
    assert_eq!(ready(&restarted).await.0, 200);
    drop(client);
    restarted.stop().await;
}

fn remove_database_files(database: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = database.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_file_deleted_while_running_refuses_writes_fails_readiness_and_acknowledges_nothing_lost() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some(KEY)).await;
    let client = backend.client(Era::Initialize).await;
    create(&client, "Antes").await.expect("acknowledged");
    assert_eq!(ready(&backend).await.0, 200);

    remove_database_files(&database);
    five_writes_are_refused(&client, &database, "apagado ou substituído").await;
    let (status, body) = ready(&backend).await;
    assert_eq!((status, body["reason"].as_str()), (503, Some("database_file_replaced")), "{body}");
    assert!(!body.to_string().contains("cursos.db"), "no path in {body}");
    assert!(backend.stderr.all().contains("cursos.db"), "the log names the file");
    drop(client);
    // The restart opens a new, empty file: no write after the deletion was acknowledged, so none is missing.
    after_a_restart_exactly(backend, &database, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_database_refuses_writes_and_fails_readiness_until_it_is_writable_again() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some(KEY)).await;
    let client = backend.client(Era::Initialize).await;
    let mut acknowledged = vec![create(&client, "Antes").await.expect("acknowledged")];

    let read_only = ReadOnly::set(&database);
    five_writes_are_refused(&client, &database, "somente para leitura").await;
    let (status, body) = ready(&backend).await;
    assert_eq!((status, body["reason"].as_str()), (503, Some("database_read_only")), "{body}");

    drop(read_only);
    assert_eq!(ready(&backend).await.0, 200, "ready again once the file is writable");
    acknowledged.push(create(&client, "Depois").await.expect("acknowledged again"));
    drop(client);
    after_a_restart_exactly(backend, &database, &acknowledged).await;
}

/// A temporary folder with an 8 MiB tmpfs mounted on its `disk`, or `None` (said on stderr) when
/// this process is not root: mounting needs root, which CI has. Nothing else simulates a full
/// disk without writing the machine's own disk full.
fn small_disk() -> Option<(tempfile::TempDir, SmallDisk)> {
    if !is_root() {
        eprintln!("not root: the full-disk test needs to mount a tmpfs; not run");
        return None;
    }
    let folder = tempfile::tempdir().expect("temp dir");
    let disk = SmallDisk::mount(&folder.path().join("disk"));
    Some((folder, disk))
}

/// A small tmpfs mounted on a folder (root only), unmounted on drop.
struct SmallDisk {
    folder: PathBuf,
}

impl SmallDisk {
    fn mount(folder: &Path) -> Self {
        std::fs::create_dir_all(folder).expect("mount point");
        let status =
            Command::new("mount").args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"]).arg(folder).status().expect("mount");
        assert!(status.success(), "cannot mount a tmpfs on {}", folder.display());
        Self { folder: folder.to_owned() }
    }

    /// Fills the disk with one file until the file system refuses more.
    fn fill(&self) -> PathBuf {
        use std::io::Write as _;
        let filler = self.folder.join("filler");
        let mut file = std::fs::File::create(&filler).expect("filler");
        let block = vec![0_u8; 64 * 1024];
        while file.write_all(&block).is_ok() {}
        let _ = file.write_all(&[0]);
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.folder).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_readiness_refuses_what_it_cannot_store_and_loses_nothing_acknowledged() {
    let Some((folder, disk)) = small_disk() else { return };
    let database = folder.path().join("disk/cursos.db");
    let backend = start_backend(&database, Some(KEY)).await;
    let client = backend.client(Era::Initialize).await;
    let mut acknowledged = vec![create(&client, "Antes").await.expect("acknowledged")];

    let filler = disk.fill();
    let (status, body) = ready(&backend).await;
    assert_eq!((status, body["reason"].as_str()), (503, Some("disk_full")), "{body}");
    let mut refused = 0;
    for attempt in 0..5 {
        match create(&client, &format!("Durante {attempt}")).await {
            // SQLite may still fit a write in WAL space it already has: then it is durable.
            Ok(id) => acknowledged.push(id),
            Err(refusal) => {
                assert!(refusal.contains("disco") && refusal.contains(WILL_NOT_HELP), "{refusal}");
                refused += 1;
            }
        }
    }
    assert!(refused > 0, "a full disk refused nothing");

    std::fs::remove_file(filler).expect("free the disk");
    assert_eq!(ready(&backend).await.0, 200, "ready again once there is room");
    acknowledged.push(create(&client, "Depois").await.expect("acknowledged again"));
    drop(client);
    after_a_restart_exactly(backend, &database, &acknowledged).await;
    drop(disk);
}

/// Issue 24, item 2: the log on the disk that fills. Before, the first write after the disk filled
/// was cut off mid-answer, the next ones hung, and SIGTERM no longer stopped the backend (the log
/// layer reported its write error with `eprintln!`, which panics when stderr cannot be written; in
/// release it aborted). Now every write gets its refusal at once, `/health` and `/ready` answer,
/// SIGTERM stops it, and once there is room again the log says how many lines were lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_that_also_holds_the_log_never_stops_or_delays_the_server() {
    let Some((folder, disk)) = small_disk() else { return };
    let database = folder.path().join("disk/cursos.db");
    let log = folder.path().join("disk/cursos.log");
    let backend = crate::support::start_backend_logging_to(&database, KEY, &log).await;
    let client = backend.client(Era::Initialize).await;
    let mut acknowledged = vec![create(&client, "Antes").await.expect("acknowledged")];

    let filler = disk.fill();
    for attempt in 0..5 {
        // `create` allows PATIENCE for each answer; a refusal is what a full disk gets.
        match create(&client, &format!("Durante {attempt}")).await {
            Ok(id) => acknowledged.push(id),
            Err(refusal) => assert!(refusal.contains("disco") && refusal.contains(WILL_NOT_HELP), "{refusal}"),
        }
    }
    let health = reqwest::get(format!("{}/health", backend.base_url)).await.expect("/health");
    assert_eq!(health.status().as_u16(), 200);
    let (status, body) = ready(&backend).await;
    assert_eq!((status, body["reason"].as_str()), (503, Some("disk_full")), "{body}");

    std::fs::remove_file(filler).expect("free the disk");
    assert_eq!(ready(&backend).await.0, 200, "ready again once there is room");
    acknowledged.push(create(&client, "Depois").await.expect("acknowledged again"));
    drop(client);
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
    let started = std::time::Instant::now();
    while !log_text().contains("log lines lost:") {
        assert!(started.elapsed() < PATIENCE, "no line says what was lost:\n{}", log_text());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(backend.stop().await.success(), "SIGTERM stops it");
    let restarted = start_backend(&database, Some(KEY)).await;
    let client = restarted.client(Era::Initialize).await;
    assert_eq!(catalog_ids(&client).await, acknowledged, "every acknowledged write, and only those");
    drop(client);
    restarted.stop().await;
    drop(disk);
}

#[derive(diesel::QueryableByName)]
struct TextLine {
    #[diesel(sql_type = diesel::sql_types::Text)]
    text: String,
}

/// `PRAGMA integrity_check`'s first line and every stored title, read straight from the file.
fn integrity_and_titles(database: &Path) -> (String, Vec<String>) {
    use diesel::{Connection as _, RunQueryDsl as _};
    let mut connection = diesel::SqliteConnection::establish(&database.to_string_lossy()).expect("open");
    let integrity = diesel::sql_query("SELECT integrity_check AS text FROM pragma_integrity_check()")
        .get_result::<TextLine>(&mut connection)
        .expect("check");
    let mut titles: Vec<String> = diesel::sql_query("SELECT title AS text FROM courses")
        .load::<TextLine>(&mut connection)
        .expect("titles")
        .into_iter()
        .map(|line| line.text)
        .collect();
    titles.sort();
    (integrity.text, titles)
}

/// Issue 24, item 1: with the backend running, `rm cursos.db-shm`, then the stdio app opens the
/// same file (the supported two-process setup) and both write alternately. Before, all 220 writes
/// were acknowledged and 139 were lost with the file corrupt: the two processes no longer shared
/// one `-shm`, so neither saw the other's locks. Now the backend refuses (its `-shm` is gone), says
/// so at `/ready`, and every acknowledged write is in a whole file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shm_deleted_under_the_backend_loses_no_acknowledged_write_with_the_stdio_app_beside_it() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some(KEY)).await;
    let http = backend.client(Era::Initialize).await;
    let mut acknowledged = Vec::new();
    for index in 0..20 {
        create(&http, &format!("Antes {index:03}")).await.expect("acknowledged");
        acknowledged.push(format!("Antes {index:03}"));
    }
    let mut shm = database.as_os_str().to_owned();
    shm.push("-shm");
    std::fs::remove_file(&shm).expect("rm cursos.db-shm");

    let (stdio, _lines) = crate::support::stdio_client(&database, Era::Initialize).await;
    let mut refused_by_backend = 0;
    for index in 0..25 {
        let title = format!("Backend {index:03}");
        match create(&http, &title).await {
            Ok(_) => acknowledged.push(title),
            Err(refusal) => {
                assert!(refusal.contains("-shm") && refusal.contains(WILL_NOT_HELP), "{refusal}");
                refused_by_backend += 1;
            }
        }
        let title = format!("Stdio {index:03}");
        create(&stdio, &title).await.expect("the stdio app opened the file after the removal: its files are its own");
        acknowledged.push(title);
    }
    assert_eq!(refused_by_backend, 25, "the backend took no write once its -shm was gone");
    let (status, body) = ready(&backend).await;
    assert_eq!((status, body["reason"].as_str()), (503, Some("database_file_replaced")), "{body}");
    assert!(backend.stderr.all().contains("cursos.db-shm"), "the log names the file");

    drop(http);
    drop(stdio);
    backend.stop().await;
    let (integrity, titles) = integrity_and_titles(&database);
    assert_eq!(integrity, "ok");
    acknowledged.sort();
    assert_eq!(titles, acknowledged, "every acknowledged write, and only those");
}
