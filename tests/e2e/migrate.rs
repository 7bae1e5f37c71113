//! `migrate`, `backup` and `restore` (issue 11 part B, ADR 0041): the real backend binary's
//! commands on real SQLite files and a real PostgreSQL schema (when it answers, ADR 0031), with
//! catalogs written by the real apps through MCP.

use std::path::Path;
use std::process::Stdio;

use diesel::connection::SimpleConnection;
use diesel::{Connection, QueryableByName, RunQueryDsl, SqliteConnection};
use mcp_cursos_e2e::read_json;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::support::{
    Client, Era, PATIENCE, PostgresSchema, binary, fresh_database, run_to_end, start_backend, start_backend_with,
    stdio_client_in_catalog, stdio_client_with_env,
};

async fn call(client: &Client, tool: &str, arguments: Value) -> Value {
    let result = json!(mcp_cursos_e2e::call(client, tool, arguments).await);
    assert_eq!(result["isError"], false, "{tool}: {result}");
    result["structuredContent"].clone()
}

/// A catalog with everything a migration must carry: two catalogs, updates, an archiving (with
/// its approval receipt), idempotency keys, history with evidence. Returns the course created
/// with the key `chave-migrada` in `padrao`.
async fn write_a_varied_catalog(database: &Path) -> Value {
    let (client, _stderr) =
        stdio_client_with_env((), database, Era::Initialize, &[("UNCONFIRMED_ARCHIVE", "allow")]).await;
    let keyed = call(
        &client,
        "criar_curso",
        json!({"titulo": "Rust", "cargaHoraria": 40, "chaveIdempotencia": "chave-migrada"}),
    )
    .await;
    let go = call(&client, "criar_curso", json!({"titulo": "Go", "cargaHoraria": 20})).await;
    let sql = call(&client, "criar_curso", json!({"titulo": "SQL", "cargaHoraria": 12})).await;
    call(&client, "atualizar_curso", json!({"id": go["id"], "titulo": "Go avançado", "versao": go["versao"]})).await;
    call(&client, "arquivar_curso", json!({"id": sql["id"]})).await;
    client.cancel().await.expect("close");
    let other = stdio_client_in_catalog(database, "outro", Era::Discover).await;
    call(&other, "criar_curso", json!({"titulo": "Rust", "cargaHoraria": 8, "chaveIdempotencia": "chave-migrada"}))
        .await;
    call(&other, "criar_curso", json!({"titulo": "Kotlin", "cargaHoraria": 16})).await;
    other.cancel().await.expect("close");
    keyed
}

#[derive(QueryableByName)]
struct Text {
    #[diesel(sql_type = diesel::sql_types::Text)]
    text: String,
}

/// Every row of every table a migration copies, with every column, in key order, and the
/// autoincrement counters: the whole database as one comparable text per table.
fn dump(database: &Path) -> Vec<(&'static str, String)> {
    let mut connection = SqliteConnection::establish(&database.to_string_lossy()).expect("open");
    let tables: [(&'static str, &str); 6] = [
        ("courses", "SELECT * FROM courses ORDER BY position"),
        ("course_creations", "SELECT * FROM course_creations ORDER BY catalog, idempotency_key"),
        ("course_history", "SELECT * FROM course_history ORDER BY seq"),
        ("course_history_evidence", "SELECT * FROM course_history_evidence ORDER BY seq"),
        ("catalog_counters", "SELECT * FROM catalog_counters ORDER BY catalog"),
        ("sqlite_sequence", "SELECT * FROM sqlite_sequence ORDER BY name"),
    ];
    tables
        .into_iter()
        .map(|(table, query)| {
            // json_object of every column, named by SQLite itself, so no column is forgotten.
            let columns: Vec<String> =
                diesel::sql_query(format!("SELECT name AS text FROM pragma_table_info('{table}')"))
                    .load::<Text>(&mut connection)
                    .expect("columns")
                    .into_iter()
                    .map(|column| format!("'{0}', \"{0}\"", column.text))
                    .collect();
            let rows = diesel::sql_query(format!(
                "SELECT COALESCE(json_group_array(json_object({})), '[]') AS text FROM ({query})",
                columns.join(", ")
            ))
            .get_result::<Text>(&mut connection)
            .expect("rows")
            .text;
            (table, rows)
        })
        .collect()
}

fn backend_command(arguments: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(binary("mcp-cursos-backend"));
    command.env_clear().env("RUST_LOG", "warn").args(arguments);
    command
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_round_trips_sqlite_to_postgresql_and_back_field_by_field() {
    let Some(schema) = PostgresSchema::create() else { return };
    let (_folder, first) = fresh_database();
    let keyed = write_a_varied_catalog(&first).await;
    let before = dump(&first);

    let to_postgres = run_to_end(
        backend_command(&["migrate", "--from", first.to_str().expect("utf-8"), "--to-env", "ALVO"])
            .env("ALVO", schema.url()),
    );
    assert!(to_postgres.status.success(), "{}", stderr_of(&to_postgres));
    let report = String::from_utf8_lossy(&to_postgres.stdout).into_owned();
    assert!(report.contains("5 courses") && report.contains("sha256 "), "{report}");
    assert!(!stderr_of(&to_postgres).contains(&schema.url()), "the URL is never shown");
    // The copy drops the target's secondary indexes and builds them again from their definitions
    // (ADR 0053): the migrated schema has exactly the indexes of a schema the apps created.
    let fresh = PostgresSchema::create().expect("PostgreSQL answered a moment ago");
    let created = run_to_end(backend_command(&["check"]).env("DATABASE_URL", fresh.url()).env("PORT", "0"));
    let expected = fresh.indexes();
    assert!(
        expected.iter().any(|(name, _)| name == "courses_active_title_key"),
        "check created the schema: {expected:?} {}",
        stderr_of(&created)
    );
    assert_eq!(schema.indexes(), expected, "the migrated schema's indexes are a new schema's");
    // Its statistics came with the rows (five courses: autovacuum would never take them).
    let analyzed = schema.analyzed_tables();
    assert!(
        ["course_history", "courses"].iter().all(|table| analyzed.iter().any(|name| name == table)),
        "the copy's tables have statistics: {analyzed:?}"
    );

    let (_other_folder, last) = fresh_database();
    let back = run_to_end(
        backend_command(&["migrate", "--from-env", "ORIGEM", "--to", last.to_str().expect("utf-8")])
            .env("ORIGEM", schema.url()),
    );
    assert!(back.status.success(), "{}", stderr_of(&back));
    let checksum = |stdout: &[u8]| String::from_utf8_lossy(stdout).split("sha256 ").nth(1).map(str::to_owned);
    assert_eq!(checksum(&to_postgres.stdout), checksum(&back.stdout), "one checksum, computed alike on both sides");
    for ((table, first_rows), (_, last_rows)) in before.iter().zip(dump(&last)) {
        assert_eq!(first_rows, &last_rows, "{table} after SQLite -> PostgreSQL -> SQLite");
    }

    // The migrated PostgreSQL catalog serves: a replayed creation returns the migrated course,
    // and a new course comes after every migrated one.
    let url = schema.url();
    let backend = start_backend_with(&first, Some("chave-migracao-de-teste"), &[("DATABASE_URL", url.as_str())]).await;
    let client = backend.client(Era::Initialize).await;
    let replayed = call(
        &client,
        "criar_curso",
        json!({"titulo": "Rust", "cargaHoraria": 40, "chaveIdempotencia": "chave-migrada"}),
    )
    .await;
    assert_eq!(
        (&replayed["id"], &replayed["versao"]),
        (&keyed["id"], &keyed["versao"]),
        "the idempotency key came along"
    );
    let newest = call(&client, "criar_curso", json!({"titulo": "Depois da migração", "cargaHoraria": 4})).await;
    let catalog = read_json(&client, "cursos://catalogo").await;
    let listed: Vec<&str> =
        catalog["cursos"].as_array().expect("cursos").iter().filter_map(|course| course["id"].as_str()).collect();
    assert_eq!(listed.last().copied(), newest["id"].as_str(), "created after the migration, listed last: {catalog}");
    assert_eq!(listed.first().copied(), keyed["id"].as_str(), "the first course is still first: {catalog}");
    client.cancel().await.expect("close");
    assert!(backend.stop().await.success());
}

/// `n` courses written straight into `database` (made by the real binary's migrations first), for
/// migrations that must take long enough to be interrupted.
fn a_large_catalog(database: &Path, n: u32) {
    let check = run_to_end(backend_command(&["check"]).env("DATABASE_PATH", database).env("PORT", "0"));
    assert!(database.exists(), "check creates and migrates the database: {}", stderr_of(&check));
    let mut connection = SqliteConnection::establish(&database.to_string_lossy()).expect("open");
    connection
        .batch_execute(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n})
             INSERT INTO courses (catalog, id, title, title_key, workload_hours, archived, version, created_at, updated_at)
             SELECT 'padrao', printf('00000000-0000-4000-8000-%012d', i), 'Curso ' || i, 'curso ' || i, 1 + i % 1000,
                    0, 1, '2026-12-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z' FROM n;"
        ))
        .expect("insert");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_refuses_a_non_empty_target_and_changes_nothing_and_force_replaces_it() {
    let (_folder, source) = fresh_database();
    write_a_varied_catalog(&source).await;
    let (_target_folder, target) = fresh_database();
    let (client, _stderr) = stdio_client_with_env((), &target, Era::Initialize, &[]).await;
    call(&client, "criar_curso", json!({"titulo": "Já estava aqui", "cargaHoraria": 2})).await;
    client.cancel().await.expect("close");
    let target_before = dump(&target);

    let (from, to) = (source.to_str().expect("utf-8"), target.to_str().expect("utf-8"));
    let refused = run_to_end(&mut backend_command(&["migrate", "--from", from, "--to", to]));
    assert!(!refused.status.success());
    assert!(stderr_of(&refused).contains("the target is not empty (1 courses"), "{}", stderr_of(&refused));
    assert_eq!(dump(&target), target_before, "nothing changed");

    let forced = run_to_end(&mut backend_command(&["migrate", "--from", from, "--to", to, "--force"]));
    assert!(forced.status.success(), "{}", stderr_of(&forced));
    let source_rows = dump(&source);
    assert_eq!(dump(&target), source_rows, "--force replaces the target by the source");

    // The replaced target's title search index holds the new titles only (emptied, then rebuilt).
    let mut connection = SqliteConnection::establish(&target.to_string_lossy()).expect("open");
    let found = diesel::sql_query(
        "SELECT COUNT(*) AS text FROM courses_title_search WHERE courses_title_search MATCH '\"estava\"'",
    )
    .get_result::<Count>(&mut connection)
    .expect("search");
    assert_eq!(found.count, 0);
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt, column_name = "text")]
    count: i64,
}

#[test]
fn migrate_refuses_a_postgresql_url_in_a_flag_and_the_same_file_on_both_sides() {
    let in_flag = run_to_end(&mut backend_command(&["migrate", "--from", "postgres://u:segredo@h/db", "--to", "x.db"]));
    assert!(!in_flag.status.success());
    let message = stderr_of(&in_flag);
    assert!(message.contains("--from-env") && !message.contains("segredo"), "{message}");

    let (_folder, database) = fresh_database();
    a_large_catalog(&database, 1);
    let path = database.to_str().expect("utf-8");
    let same = run_to_end(&mut backend_command(&["migrate", "--from", path, "--to", path, "--force"]));
    assert!(!same.status.success());
    assert!(stderr_of(&same).contains("the same database"), "{}", stderr_of(&same));
}

/// Runs `arguments`, sends SIGINT once the first progress line is on stderr, and returns the output.
async fn interrupted_after_first_progress_line(
    mut command: tokio::process::Command,
    marker: &str,
) -> (std::process::ExitStatus, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut seen = String::new();
    tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.expect("read") {
            seen.push_str(&line);
            seen.push('\n');
            if line.starts_with(marker) {
                return;
            }
        }
        panic!("no progress line before the end:\n{seen}");
    })
    .await
    .expect("a progress line in time");
    let pid = child.id().expect("running").to_string();
    assert!(std::process::Command::new("kill").args(["-INT", &pid]).status().expect("kill").success());
    let rest = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.expect("read") {
            seen.push_str(&line);
            seen.push('\n');
        }
        child.wait().await.expect("status")
    })
    .await
    .expect("stopped in time");
    (rest, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_migrate_leaves_the_target_unchanged() {
    let (_folder, source) = fresh_database();
    a_large_catalog(&source, 200_000);
    let (_target_folder, target) = fresh_database();
    let (client, _stderr) = stdio_client_with_env((), &target, Era::Initialize, &[]).await;
    call(&client, "criar_curso", json!({"titulo": "Fica", "cargaHoraria": 2})).await;
    client.cancel().await.expect("close");
    let target_before = dump(&target);

    let mut command = tokio::process::Command::new(binary("mcp-cursos-backend"));
    command.env_clear().env("RUST_LOG", "warn").args([
        "migrate",
        "--from",
        source.to_str().expect("utf-8"),
        "--to",
        target.to_str().expect("utf-8"),
        "--force",
    ]);
    let (status, stderr) = interrupted_after_first_progress_line(command, "migrate (copy):").await;
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted; the target was rolled back"), "{stderr}");
    assert_eq!(dump(&target), target_before, "the target is as it was");
}

/// Ctrl-C while `VACUUM INTO` copies: honoured when the statement returns (it cannot be stopped
/// half-way, ADR 0041), before the rename: no backup file, no temporary file, the source as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_backup_writes_no_file_and_leaves_the_database_as_it_was() {
    let (folder, database) = fresh_database();
    // Large enough that the copy (a second or so) is still running when Ctrl-C arrives, just after
    // the line it prints as it starts.
    a_large_catalog(&database, 200_000);
    let before = titles(&database).len();
    let destination = folder.path().join("copia.db");

    let mut command = tokio::process::Command::new(binary("mcp-cursos-backend"));
    command
        .env_clear()
        .env("RUST_LOG", "warn")
        .env("DATABASE_PATH", &database)
        .args(["backup", destination.to_str().expect("utf-8")]);
    // The line printed as the copy starts ("backup: 0/N pages ...").
    let (status, stderr) = interrupted_after_first_progress_line(command, "backup: 0/").await;
    assert!(!stderr.contains("backup: done"), "{stderr}");
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted; nothing was written at the destination"), "{stderr}");
    assert!(!destination.exists(), "no backup file");
    let leftovers: Vec<String> = std::fs::read_dir(folder.path())
        .expect("list")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("copia"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file: {leftovers:?}");
    assert_eq!(consistent(&database), ("ok".to_owned(), true));
    assert_eq!(titles(&database).len(), before);
}

#[derive(QueryableByName)]
struct Line {
    #[diesel(sql_type = diesel::sql_types::Text)]
    text: String,
}

/// integrity_check's answer, and whether every catalog's counter equals its active courses.
fn consistent(database: &Path) -> (String, bool) {
    let mut connection = SqliteConnection::establish(&database.to_string_lossy()).expect("open");
    let integrity = diesel::sql_query("SELECT integrity_check AS text FROM pragma_integrity_check()")
        .get_result::<Line>(&mut connection)
        .expect("check");
    let wrong = diesel::sql_query(
        "SELECT COUNT(*) AS text FROM catalog_counters AS c
         WHERE c.active_courses <> (SELECT COUNT(*) FROM courses WHERE courses.catalog = c.catalog AND archived = 0)",
    )
    .get_result::<Count>(&mut connection)
    .expect("counters");
    (integrity.text, wrong.count == 0)
}

fn titles(database: &Path) -> Vec<String> {
    let mut connection = SqliteConnection::establish(&database.to_string_lossy()).expect("open");
    diesel::sql_query("SELECT title AS text FROM courses ORDER BY position")
        .load::<Line>(&mut connection)
        .expect("titles")
        .into_iter()
        .map(|line| line.text)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_during_a_burst_of_writes_restores_every_write_acknowledged_before_it() {
    let (folder, database) = fresh_database();
    let backend = start_backend(&database, Some("chave-backup-de-teste")).await;
    let client = backend.client(Era::Initialize).await;
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
        tokio::spawn(async move {
            let mut written = 0_u32;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let title = format!("Rajada {written}");
                call(&client, "criar_curso", json!({"titulo": title, "cargaHoraria": 3})).await;
                acknowledged.lock().expect("lock").push(title);
                written += 1;
            }
            client.cancel().await.expect("close");
            written
        })
    };
    // Poll (no sleep) until the burst is well under way.
    tokio::time::timeout(PATIENCE, async {
        while acknowledged.lock().expect("lock").len() < 30 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("writes in time");
    let before_backup = acknowledged.lock().expect("lock").clone();
    let backup = folder.path().join("copia.db");
    let output = tokio::task::spawn_blocking({
        let (database, backup) = (database.clone(), backup.clone());
        move || run_to_end(backend_command(&["backup", backup.to_str().expect("utf-8")]).env("DATABASE_PATH", database))
    })
    .await
    .expect("backup ran");
    let during_backup = acknowledged.lock().expect("lock").len();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let written = writer.await.expect("writer");
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("backup written to"), "{output:?}");
    assert!(during_backup > before_backup.len() || written as usize > before_backup.len(), "the writes went on");
    assert!(backend.stop().await.success());

    let restored = folder.path().join("restaurado/cursos.db");
    let restore =
        run_to_end(backend_command(&["restore", backup.to_str().expect("utf-8")]).env("DATABASE_PATH", &restored));
    assert!(restore.status.success(), "{}", stderr_of(&restore));
    assert_eq!(consistent(&restored), ("ok".to_owned(), true), "integrity and counters");
    let restored_titles = titles(&restored);
    for title in &before_backup {
        assert!(restored_titles.contains(title), "{title} was acknowledged before the backup began");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_refuses_while_a_backend_has_the_database_open_and_works_once_it_stopped() {
    let (folder, database) = fresh_database();
    let backend = start_backend(&database, Some("chave-restauracao")).await;
    let client = backend.client(Era::Initialize).await;
    call(&client, "criar_curso", json!({"titulo": "No backup", "cargaHoraria": 5})).await;
    let backup = folder.path().join("copia.db");
    let path = backup.to_str().expect("utf-8");
    let taken = run_to_end(backend_command(&["backup", path]).env("DATABASE_PATH", &database));
    assert!(taken.status.success(), "{}", stderr_of(&taken));
    let again = run_to_end(backend_command(&["backup", path]).env("DATABASE_PATH", &database));
    assert!(stderr_of(&again).contains("already exists"), "an existing destination is refused: {}", stderr_of(&again));
    call(&client, "criar_curso", json!({"titulo": "Depois do backup", "cargaHoraria": 5})).await;

    let refused = run_to_end(backend_command(&["restore", path]).env("DATABASE_PATH", &database));
    assert!(!refused.status.success());
    assert!(stderr_of(&refused).contains("is in use"), "{}", stderr_of(&refused));
    let catalog = read_json(&client, "cursos://catalogo").await;
    assert_eq!(catalog["total"], 2, "the backend's database is untouched and still serves");
    client.cancel().await.expect("close");
    assert!(backend.stop().await.success());

    let restored = run_to_end(backend_command(&["restore", path]).env("DATABASE_PATH", &database));
    assert!(restored.status.success(), "{}", stderr_of(&restored));
    let wal = format!("{}-wal", database.display());
    assert!(!Path::new(&wal).exists(), "no -wal of the old file is left to be replayed over the restored one");
    let backend = start_backend(&database, Some("chave-restauracao")).await;
    let client = backend.client(Era::Discover).await;
    let catalog = read_json(&client, "cursos://catalogo").await;
    let listed: Vec<&str> =
        catalog["cursos"].as_array().expect("cursos").iter().filter_map(|course| course["titulo"].as_str()).collect();
    assert_eq!(listed, ["No backup"], "the backup's catalog, served again");
    client.cancel().await.expect("close");
    assert!(backend.stop().await.success());
}

#[test]
fn restore_refuses_a_file_that_is_not_a_sound_mcp_cursos_database() {
    let (folder, database) = fresh_database();
    let not_sqlite = folder.path().join("lixo.db");
    std::fs::write(&not_sqlite, b"not a database at all, just some bytes").expect("write");
    let output =
        run_to_end(backend_command(&["restore", not_sqlite.to_str().expect("utf-8")]).env("DATABASE_PATH", &database));
    assert!(!output.status.success());
    assert!(!database.exists(), "nothing written");

    let foreign = folder.path().join("alheio.db");
    let mut connection = SqliteConnection::establish(&foreign.to_string_lossy()).expect("open");
    connection.batch_execute("CREATE TABLE t (x); INSERT INTO t VALUES (1);").expect("create");
    drop(connection);
    let output =
        run_to_end(backend_command(&["restore", foreign.to_str().expect("utf-8")]).env("DATABASE_PATH", &database));
    assert!(!output.status.success());
    assert!(stderr_of(&output).contains("is not a mcp-cursos database"), "{}", stderr_of(&output));
    assert!(!database.exists(), "nothing written");
    let leftovers: Vec<_> = std::fs::read_dir(database.parent().expect("folder"))
        .map(|entries| entries.filter_map(Result::ok).map(|entry| entry.file_name()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "no temporary file left: {leftovers:?}");
}

#[test]
fn backup_and_restore_refuse_a_postgresql_catalog_naming_its_tools() {
    for (command, tool) in [("backup", "pg_dump"), ("restore", "pg_restore")] {
        let output = run_to_end(
            backend_command(&[command, "/tmp/nunca-escrito.db"])
                .env("DATABASE_URL", "postgres://u:segredo@127.0.0.1/db"),
        );
        assert!(!output.status.success());
        let message = stderr_of(&output);
        assert!(message.contains(tool) && !message.contains("segredo"), "{message}");
    }
}

/// Issue 24, item 10: a `backup` killed with SIGKILL while it copies leaves its temporary copy (a
/// full catalog, which no code of it can remove); the next backup to the same place removes it.
/// Backups and exports are both 0600, and `export --output` refuses an existing file as `backup`
/// does, unless `--overwrite`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_backup_leaves_nothing_after_the_next_and_backups_and_exports_are_private_and_never_overwrite() {
    use std::os::unix::fs::PermissionsExt as _;
    let (folder, database) = fresh_database();
    a_large_catalog(&database, 200_000);
    let destination = folder.path().join("copia.db");
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(folder.path())
            .expect("list")
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(".copia.db."))
            .collect()
    };
    let mut child = backend_command(&["backup", destination.to_str().expect("utf-8")])
        .env("DATABASE_PATH", &database)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    // Killed once its copy has begun to grow (polled, no sleep for readiness).
    let started = std::time::Instant::now();
    while !leftovers()
        .iter()
        .any(|name| std::fs::metadata(folder.path().join(name)).is_ok_and(|metadata| metadata.len() > 0))
    {
        assert!(started.elapsed() < PATIENCE, "the copy never began");
        assert!(child.try_wait().expect("wait").is_none(), "the backup ended before it could be killed");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert!(!destination.exists(), "no backup file");
    let left = leftovers();
    assert!(left.iter().any(|name| !name.ends_with("-journal")), "SIGKILL leaves the copy (and its journal): {left:?}");

    let taken =
        run_to_end(backend_command(&["backup", destination.to_str().expect("utf-8")]).env("DATABASE_PATH", &database));
    assert!(taken.status.success(), "{}", stderr_of(&taken));
    assert!(leftovers().is_empty(), "the next backup removed it: {:?}", leftovers());
    let mode = |path: &Path| std::fs::metadata(path).expect("file").permissions().mode() & 0o777;
    assert_eq!(mode(&destination), 0o600, "a backup is readable by its owner only");

    let export = folder.path().join("catalogo.jsonl");
    let output = export.to_str().expect("utf-8");
    let first = run_to_end(backend_command(&["export", "--output", output]).env("DATABASE_PATH", &database));
    assert!(first.status.success(), "{}", stderr_of(&first));
    assert_eq!(mode(&export), 0o600, "an export too");
    std::fs::write(&export, "o arquivo do operador\n").expect("write");
    let refused = run_to_end(backend_command(&["export", "--output", output]).env("DATABASE_PATH", &database));
    assert!(!refused.status.success());
    assert!(stderr_of(&refused).contains("already exists (pass --overwrite to replace it)"), "{}", stderr_of(&refused));
    assert_eq!(std::fs::read_to_string(&export).expect("read"), "o arquivo do operador\n", "left as it was");
    let replaced =
        run_to_end(backend_command(&["export", "--overwrite", "--output", output]).env("DATABASE_PATH", &database));
    assert!(replaced.status.success(), "{}", stderr_of(&replaced));
    assert!(std::fs::read_to_string(&export).expect("read").starts_with("{\"formato\""), "replaced by the export");
}

/// Issue 24, item 3: `restore` trusted whatever schema the backup had. A trigger that rewrites
/// every workload to 1, one that deletes history, a dropped unique-title index and a counter
/// claiming 1,000,000 courses were all restored. Each is refused now, naming what differs, with
/// the database left as it was; and the apps refuse to start on a file with a planted trigger,
/// while an operator's own index is only named.
#[test]
fn restore_refuses_a_backup_whose_schema_or_counters_were_tampered_with_and_the_apps_refuse_a_planted_trigger() {
    let (folder, database) = fresh_database();
    a_large_catalog(&database, 3);
    let before = titles(&database);
    let pristine = folder.path().join("copia.db");
    let taken =
        run_to_end(backend_command(&["backup", pristine.to_str().expect("utf-8")]).env("DATABASE_PATH", &database));
    assert!(taken.status.success(), "{}", stderr_of(&taken));
    for (tampering, named) in [
        (
            "CREATE TRIGGER sete_horas AFTER UPDATE ON courses BEGIN
                 UPDATE courses SET workload_hours = 1 WHERE id = new.id AND workload_hours <> 1; END;",
            "an extra trigger `sete_horas`",
        ),
        (
            "CREATE TRIGGER sem_historia AFTER INSERT ON course_history BEGIN
                 DELETE FROM course_history WHERE seq = new.seq; END;",
            "an extra trigger `sem_historia`",
        ),
        ("DROP INDEX courses_active_title_key;", "no index `courses_active_title_key`"),
        ("UPDATE catalog_counters SET active_courses = 1000000;", "counts 1000000 active courses but holds 3"),
    ] {
        let crafted = folder.path().join("adulterado.db");
        std::fs::copy(&pristine, &crafted).expect("copy");
        let mut connection = SqliteConnection::establish(&crafted.to_string_lossy()).expect("open");
        connection.batch_execute(tampering).expect("tamper");
        drop(connection);
        let output =
            run_to_end(backend_command(&["restore", crafted.to_str().expect("utf-8")]).env("DATABASE_PATH", &database));
        assert!(!output.status.success(), "{tampering}: restored");
        assert!(stderr_of(&output).contains(named), "{tampering}: {}", stderr_of(&output));
        assert_eq!(titles(&database), before, "{tampering}: the database is as it was");
        std::fs::remove_file(&crafted).expect("remove");
    }
    let restored =
        run_to_end(backend_command(&["restore", pristine.to_str().expect("utf-8")]).env("DATABASE_PATH", &database));
    assert!(restored.status.success(), "the untouched backup restores: {}", stderr_of(&restored));

    // At start: a planted trigger refuses it (nothing served, nothing written)...
    let mut connection = SqliteConnection::establish(&database.to_string_lossy()).expect("open");
    connection
        .batch_execute(
            "CREATE TRIGGER sete_horas AFTER UPDATE ON courses BEGIN
                 UPDATE courses SET workload_hours = 1 WHERE id = new.id AND workload_hours <> 1; END;",
        )
        .expect("plant");
    let check = run_to_end(backend_command(&["check"]).env("DATABASE_PATH", &database).env("PORT", "0"));
    assert!(!check.status.success(), "started on a planted trigger");
    assert!(
        everything(&check).contains("does not have this version's schema: an extra trigger `sete_horas`"),
        "{}",
        everything(&check)
    );
    // ... an operator's own index is named and the server starts.
    connection
        .batch_execute("DROP TRIGGER sete_horas; CREATE INDEX relatorio ON courses (workload_hours);")
        .expect("index");
    drop(connection);
    let check = run_to_end(backend_command(&["check"]).env("DATABASE_PATH", &database).env("PORT", "0"));
    assert!(check.status.success(), "{}", everything(&check));
    assert!(everything(&check).contains("an extra index `relatorio`"), "{}", everything(&check));
    assert_eq!(titles(&database), before);
}

/// What a command printed, on stdout and stderr.
fn everything(output: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr_of(output))
}
