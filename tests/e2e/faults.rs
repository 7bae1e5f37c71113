//! Faults: the backend killed with SIGKILL in the middle of a stream of writes from several
//! clients, and several processes writing one database file at once. Every acknowledged write
//! survives, no refused write leaves a trace, the file stays intact, no update is lost, no title is
//! duplicated and no client ever sees a lock error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use serde_json::{Value, json};
use tokio::sync::{Barrier, watch};

use crate::support::{Client, Era, PATIENCE, fresh_database, start_backend, start_backend_with, stdio_client};

const KEY: &str = "chave-de-teste-das-falhas";

/// How long one tool call may take before its outcome counts as unknown.
const CALL_PATIENCE: Duration = Duration::from_secs(30);

/// How long a call may still answer once the backend was killed (data already in the socket).
const GRACE_AFTER_KILL: Duration = Duration::from_secs(2);

/// What a client learned from one tool call.
#[derive(Debug)]
enum Outcome {
    /// A success result: the course as the server stored it (`structuredContent`).
    Acknowledged(Value),
    /// An `isError` result or a protocol error: the server says nothing was written.
    Refused(String),
    /// No answer (the connection broke, or no reply in time): written or not, nobody knows.
    Unknown(String),
}

async fn call(client: &Client, tool: &'static str, arguments: Value) -> Outcome {
    let arguments = arguments.as_object().cloned().expect("arguments object");
    let request = client.call_tool(CallToolRequestParams::new(tool).with_arguments(arguments));
    match tokio::time::timeout(CALL_PATIENCE, request).await {
        Err(_) => Outcome::Unknown(format!("no answer within {CALL_PATIENCE:?}")),
        Ok(Err(rmcp::ServiceError::McpError(error))) => {
            Outcome::Refused(format!("protocol error {}: {}", error.code.0, error.message))
        }
        Ok(Err(error)) => Outcome::Unknown(error.to_string()),
        Ok(Ok(result)) => {
            let result = json!(result);
            if result["isError"] == true {
                Outcome::Refused(result["content"][0]["text"].as_str().unwrap_or_default().to_owned())
            } else {
                Outcome::Acknowledged(result["structuredContent"].clone())
            }
        }
    }
}

/// [`call`], given up [`GRACE_AFTER_KILL`] after the kill: no answer can come from a dead process.
async fn call_until_killed(
    client: &Client,
    tool: &'static str,
    arguments: Value,
    killed: &watch::Receiver<bool>,
) -> Outcome {
    let mut killed = killed.clone();
    tokio::select! {
        biased;
        outcome = call(client, tool, arguments) => outcome,
        _ = async {
            let _ = killed.wait_for(|killed| *killed).await;
            tokio::time::sleep(GRACE_AFTER_KILL).await;
        } => Outcome::Unknown(format!("no answer {GRACE_AFTER_KILL:?} after the kill")),
    }
}

async fn read(client: &Client, uri: &str) -> Result<Value, String> {
    let result = tokio::time::timeout(CALL_PATIENCE, client.read_resource(ReadResourceRequestParams::new(uri)))
        .await
        .map_err(|_| format!("no answer within {CALL_PATIENCE:?}"))?
        .map_err(|error| error.to_string())?;
    let result = json!(result);
    serde_json::from_str(result["contents"][0]["text"].as_str().ok_or("no text content")?)
        .map_err(|error| error.to_string())
}

/// The whole catalog through MCP: its `total` and the ids on every page.
async fn catalog_through(client: &Client) -> (u64, Vec<String>) {
    let first = read(client, "cursos://catalogo").await.expect("catalog");
    let total = first["total"].as_u64().expect("total");
    let mut ids = Vec::new();
    let mut page = first;
    loop {
        ids.extend(
            page["cursos"]
                .as_array()
                .expect("cursos")
                .iter()
                .map(|course| course["id"].as_str().expect("id").to_owned()),
        );
        match page["proximaPagina"].as_str() {
            Some(next) => page = read(client, next).await.expect("next page"),
            None => return (total, ids),
        }
    }
}

/// The database file read directly, without a server: what a crash really left on disk.
mod stored {
    use std::path::Path;

    use diesel::prelude::*;
    use diesel::sql_types::{BigInt, Bool, Integer, Text};

    #[derive(Debug, QueryableByName)]
    pub(super) struct Row {
        #[diesel(sql_type = Text)]
        pub(super) id: String,
        #[diesel(sql_type = Text)]
        pub(super) title: String,
        #[diesel(sql_type = Text)]
        pub(super) title_key: String,
        #[diesel(sql_type = Integer)]
        pub(super) workload_hours: i32,
        #[diesel(sql_type = Bool)]
        pub(super) archived: bool,
        #[diesel(sql_type = BigInt)]
        pub(super) version: i64,
    }

    #[derive(QueryableByName)]
    struct IntegrityLine {
        #[diesel(sql_type = Text)]
        integrity_check: String,
    }

    #[derive(QueryableByName)]
    struct Counter {
        #[diesel(sql_type = BigInt)]
        active_courses: i64,
    }

    #[derive(Debug)]
    pub(super) struct Snapshot {
        /// `PRAGMA integrity_check`, one line per problem (`["ok"]` when there is none).
        pub(super) integrity: Vec<String>,
        pub(super) rows: Vec<Row>,
        /// The maintained count of active courses (what the catalog's `total` reports).
        pub(super) counted_active: i64,
    }

    impl Snapshot {
        pub(super) fn active_rows(&self) -> impl Iterator<Item = &Row> {
            self.rows.iter().filter(|row| !row.archived)
        }
    }

    /// Opens the file with a connection of its own (recovering the WAL like any reader would).
    pub(super) fn read(path: &Path) -> Snapshot {
        let mut connection =
            SqliteConnection::establish(path.to_str().expect("UTF-8 path")).expect("open the database file");
        let integrity = diesel::sql_query("PRAGMA integrity_check")
            .load::<IntegrityLine>(&mut connection)
            .expect("PRAGMA integrity_check")
            .into_iter()
            .map(|line| line.integrity_check)
            .collect();
        let rows = diesel::sql_query(
            "SELECT id, title, title_key, workload_hours, archived, version FROM courses ORDER BY position",
        )
        .load::<Row>(&mut connection)
        .expect("the courses");
        let counted_active = diesel::sql_query("SELECT active_courses FROM catalog_counters")
            .get_result::<Counter>(&mut connection)
            .expect("the counter")
            .active_courses;
        Snapshot { integrity, rows, counted_active }
    }
}

// ---------------------------------------------------------------------------------------------
// SIGKILL in the middle of writes.

const WRITERS: usize = 4;
/// The backend is killed once this many writes were acknowledged (the writers keep going until then).
const KILL_AFTER_ACKNOWLEDGED: usize = 120;
/// A writer gives up after this many steps even if the kill never comes (the wait then fails).
const MAX_STEPS: usize = 5_000;
/// A workload no honest write uses, so a refused write that left a trace would show.
const REFUSED_HOURS: i64 = 999;
const SEED_TITLE: &str = "Semente";

/// What may be on disk for one title after the kill.
#[derive(Debug)]
struct Expected {
    /// The create was acknowledged: the course must be there.
    must_exist: bool,
    /// The acceptable (workload, version) pairs: the last acknowledged one, plus the one an update
    /// in flight at the kill would have made.
    states: Vec<(i64, i64)>,
}

#[derive(Debug, Default)]
struct Ledger {
    expected: BTreeMap<String, Expected>,
    acknowledged: usize,
    refused: usize,
    unknown: usize,
    /// Why the calls without an answer had none (one per writer at most).
    unknown_reasons: Vec<String>,
}

/// 1..=900: never [`REFUSED_HOURS`].
fn honest_hours(writer: usize, step: usize) -> i64 {
    i64::try_from((writer * 211 + step * 37) % 900 + 1).expect("small")
}

/// One client's stream of writes: creates with distinct titles, versioned updates of its own last
/// course, and now and then a write the server must refuse. Stops at the first call without an
/// answer, so at most one of its writes was in flight at the kill.
async fn write_until_cut_off(
    client: Client,
    writer: usize,
    acknowledged: Arc<watch::Sender<usize>>,
    killed: watch::Receiver<bool>,
) -> Ledger {
    let mut ledger = Ledger::default();
    let acknowledge = |ledger: &mut Ledger| {
        ledger.acknowledged += 1;
        acknowledged.send_modify(|count| *count += 1);
    };
    // The writer's latest acknowledged course: id, title, workload, version.
    let mut own: Option<(String, String, i64, i64)> = None;
    for step in 0..MAX_STEPS {
        match (step % 10, &own) {
            (4, _) => {
                // The seed's title again, spelled differently: refused, whatever else is going on.
                let arguments = json!({"titulo": "  sEMENTE  ", "cargaHoraria": REFUSED_HOURS});
                match call_until_killed(&client, "criar_curso", arguments, &killed).await {
                    Outcome::Refused(text) if text.contains("Já existe um curso ativo") => ledger.refused += 1,
                    Outcome::Unknown(reason) => {
                        ledger.unknown += 1;
                        ledger.unknown_reasons.push(reason);
                        break;
                    }
                    other => panic!("writer {writer}: a duplicate title was not refused: {other:?}"),
                }
            }
            (9, Some((id, ..))) => {
                // An update naming a version the course never had: refused, nothing written.
                let (id, stale_version) = (id.clone(), own.as_ref().map_or(0, |own| own.3) + 7);
                let arguments = json!({"id": id, "cargaHoraria": REFUSED_HOURS, "versao": stale_version});
                match call_until_killed(&client, "atualizar_curso", arguments, &killed).await {
                    Outcome::Refused(text) if text.contains("está na versão") => ledger.refused += 1,
                    Outcome::Unknown(reason) => {
                        ledger.unknown += 1;
                        ledger.unknown_reasons.push(reason);
                        break;
                    }
                    other => panic!("writer {writer}: a stale version was not refused: {other:?}"),
                }
            }
            (3 | 7, Some((id, title, hours, version))) => {
                let candidate = honest_hours(writer, step);
                let next_hours = if candidate == *hours { candidate % 900 + 1 } else { candidate };
                let (id, title, version) = (id.clone(), title.clone(), *version);
                let arguments = json!({"id": id, "cargaHoraria": next_hours, "versao": version});
                match call_until_killed(&client, "atualizar_curso", arguments, &killed).await {
                    Outcome::Acknowledged(course) => {
                        assert_eq!(
                            (course["cargaHoraria"].as_i64(), course["versao"].as_i64()),
                            (Some(next_hours), Some(version + 1)),
                            "writer {writer}: {course}"
                        );
                        ledger.expected.get_mut(&title).expect("own course").states = vec![(next_hours, version + 1)];
                        own = Some((id, title, next_hours, version + 1));
                        acknowledge(&mut ledger);
                    }
                    Outcome::Refused(text) => panic!("writer {writer}: an honest update was refused: {text}"),
                    Outcome::Unknown(reason) => {
                        ledger.expected.get_mut(&title).expect("own course").states.push((next_hours, version + 1));
                        ledger.unknown += 1;
                        ledger.unknown_reasons.push(reason);
                        break;
                    }
                }
            }
            _ => {
                let title = format!("Escritor {writer} curso {step}");
                let hours = honest_hours(writer, step);
                let arguments = json!({"titulo": title, "cargaHoraria": hours});
                match call_until_killed(&client, "criar_curso", arguments, &killed).await {
                    Outcome::Acknowledged(course) => {
                        assert_eq!(
                            (course["titulo"].as_str(), course["cargaHoraria"].as_i64(), course["versao"].as_i64()),
                            (Some(title.as_str()), Some(hours), Some(1)),
                            "writer {writer}: {course}"
                        );
                        let id = course["id"].as_str().expect("id").to_owned();
                        ledger.expected.insert(title.clone(), Expected { must_exist: true, states: vec![(hours, 1)] });
                        own = Some((id, title, hours, 1));
                        acknowledge(&mut ledger);
                    }
                    Outcome::Refused(text) => panic!("writer {writer}: an honest create was refused: {text}"),
                    Outcome::Unknown(reason) => {
                        ledger.expected.insert(title, Expected { must_exist: false, states: vec![(hours, 1)] });
                        ledger.unknown += 1;
                        ledger.unknown_reasons.push(reason);
                        break;
                    }
                }
            }
        }
    }
    drop(client);
    ledger
}

/// What one round found.
#[derive(Debug)]
struct KillFigures {
    acknowledged: usize,
    refused: usize,
    in_flight: usize,
    in_flight_found: usize,
    lost: usize,
    rows: usize,
}

async fn kill_in_the_middle_of_writes(session_mode: &str) -> KillFigures {
    let (_folder, database) = fresh_database();
    let environment = [("SESSION_MODE", session_mode)];
    let backend = start_backend_with(&database, Some(KEY), &environment).await;
    let seeder = backend.client(Era::Initialize).await;
    let seeded = call(&seeder, "criar_curso", json!({"titulo": SEED_TITLE, "cargaHoraria": 10})).await;
    assert!(matches!(seeded, Outcome::Acknowledged(_)), "the seed course: {seeded:?}");
    seeder.cancel().await.expect("close");

    let (acknowledged, mut acknowledged_so_far) = watch::channel(0_usize);
    let acknowledged = Arc::new(acknowledged);
    let (killed, killed_receiver) = watch::channel(false);
    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let era = if writer % 2 == 0 { Era::Initialize } else { Era::Discover };
        let client = backend.client(era).await;
        writers.push(tokio::spawn(write_until_cut_off(client, writer, acknowledged.clone(), killed_receiver.clone())));
    }
    tokio::time::timeout(PATIENCE, acknowledged_so_far.wait_for(|count| *count >= KILL_AFTER_ACKNOWLEDGED))
        .await
        .expect("enough writes acknowledged in time")
        .expect("writers running");
    let status = backend.kill().await;
    assert!(!status.success(), "killed, not stopped: {status:?}");
    killed.send_replace(true);

    let mut ledger = Ledger::default();
    ledger.expected.insert(SEED_TITLE.to_owned(), Expected { must_exist: true, states: vec![(10, 1)] });
    ledger.acknowledged = 1;
    for writer in writers {
        let part = tokio::time::timeout(PATIENCE, writer).await.expect("writer ended").expect("writer did not panic");
        ledger.expected.extend(part.expected);
        ledger.acknowledged += part.acknowledged;
        ledger.refused += part.refused;
        ledger.unknown += part.unknown;
        ledger.unknown_reasons.extend(part.unknown_reasons);
    }

    let disk = stored::read(&database);
    assert_eq!(disk.integrity, ["ok"], "PRAGMA integrity_check after SIGKILL");
    let mut problems = Vec::new();
    let mut found = BTreeSet::new();
    for row in &disk.rows {
        let state = (i64::from(row.workload_hours), row.version);
        match ledger.expected.get(&row.title) {
            None => problems.push(format!("a course nobody wrote, or a refused write's trace: {row:?}")),
            Some(expected) if !expected.states.contains(&state) || row.archived => {
                problems.push(format!("{row:?} is none of the acknowledged or in-flight states {:?}", expected.states));
            }
            Some(_) => {}
        }
        if !found.insert(row.title.clone()) {
            problems.push(format!("title stored twice: {:?}", row.title));
        }
    }
    let lost: Vec<&String> = ledger
        .expected
        .iter()
        .filter(|(title, expected)| expected.must_exist && !found.contains(*title))
        .map(|(title, _)| title)
        .collect();
    let in_flight_found =
        ledger.expected.iter().filter(|(title, expected)| !expected.must_exist && found.contains(*title)).count();
    assert!(lost.is_empty(), "acknowledged creates lost by the kill: {lost:?}");
    assert!(problems.is_empty(), "{problems:#?}");
    let active = disk.active_rows().count();
    assert_eq!(usize::try_from(disk.counted_active).expect("count"), active, "the maintained count matches the rows");

    // The restarted backend serves exactly what is on disk.
    let backend = start_backend_with(&database, Some(KEY), &environment).await;
    let client = backend.client(Era::Initialize).await;
    let (total, listed) = catalog_through(&client).await;
    assert_eq!(usize::try_from(total).expect("total"), active, "catalog total equals the rows");
    let listed: BTreeSet<String> = listed.into_iter().collect();
    let on_disk: BTreeSet<String> = disk.active_rows().map(|row| row.id.clone()).collect();
    assert_eq!(listed, on_disk, "the catalog lists every stored course once");
    let after = call(&client, "criar_curso", json!({"titulo": "Depois do SIGKILL", "cargaHoraria": 3})).await;
    assert!(matches!(after, Outcome::Acknowledged(_)), "writable after the restart: {after:?}");
    client.cancel().await.expect("close");
    assert!(backend.stop().await.success());

    let reasons: BTreeSet<&str> =
        ledger.unknown_reasons.iter().map(|reason| reason.rsplit(": ").next().unwrap_or(reason)).collect();
    eprintln!("SIGKILL ({session_mode}): why calls had no answer: {reasons:?}");
    KillFigures {
        acknowledged: ledger.acknowledged,
        refused: ledger.refused,
        in_flight: ledger.unknown,
        in_flight_found,
        lost: lost.len(),
        rows: disk.rows.len(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_concurrent_writes_keeps_every_acknowledged_write_and_no_refused_one() {
    for session_mode in ["stateful", "stateless"] {
        let figures = kill_in_the_middle_of_writes(session_mode).await;
        eprintln!(
            "SIGKILL ({session_mode}): {} writes acknowledged, {} refused, {} without an answer ({} of those \
             creates found on disk), {} lost; {} rows after the kill",
            figures.acknowledged,
            figures.refused,
            figures.in_flight,
            figures.in_flight_found,
            figures.lost,
            figures.rows
        );
        assert!(figures.acknowledged > KILL_AFTER_ACKNOWLEDGED, "{figures:?}");
        assert!(figures.refused > 0, "some refusals were exercised: {figures:?}");
        assert!(figures.in_flight <= WRITERS, "{figures:?}");
        assert_eq!(figures.lost, 0);
    }
}

// ---------------------------------------------------------------------------------------------
// Several writers, several processes, one file.

const ROUNDS: usize = 30;

/// Four spellings of one title (same comparison key).
fn colliding_title(writer: usize, round: usize) -> String {
    match writer % 4 {
        0 => format!("Colisão {round}"),
        1 => format!("colisão {round}"),
        2 => format!("  COLISÃO {round} "),
        _ => format!("Colisão   {round}"),
    }
}

#[derive(Debug, Default)]
struct Tally {
    creations_won: Vec<usize>,
    creations_refused: usize,
    updates_accepted: usize,
    updates_stale: usize,
    problems: Vec<String>,
}

/// Anything a client should never see: a lock error or an internal error.
fn is_alarming(text: &str) -> bool {
    let text = text.to_lowercase();
    text.contains("locked") || text.contains("busy") || text.contains("erro interno")
}

async fn contend(client: Client, writer: usize, course_id: String, barrier: Arc<Barrier>) -> (Client, Tally) {
    let mut tally = Tally::default();
    let uri = format!("cursos://{course_id}");
    for round in 0..ROUNDS {
        barrier.wait().await;
        let title = colliding_title(writer, round);
        match call(&client, "criar_curso", json!({"titulo": title, "cargaHoraria": 5})).await {
            Outcome::Acknowledged(_) => tally.creations_won.push(round),
            Outcome::Refused(text) if text.contains("Já existe um curso ativo") && !is_alarming(&text) => {
                tally.creations_refused += 1;
            }
            other => tally.problems.push(format!("writer {writer}, round {round}, create: {other:?}")),
        }
        let course = match read(&client, &uri).await {
            Ok(course) => course,
            Err(error) => {
                tally.problems.push(format!("writer {writer}, round {round}, read: {error}"));
                continue;
            }
        };
        let version = course["versao"].as_i64().expect("versao");
        let next_hours = course["cargaHoraria"].as_i64().expect("cargaHoraria") % 1000 + 1;
        let arguments = json!({"id": course_id, "cargaHoraria": next_hours, "versao": version});
        match call(&client, "atualizar_curso", arguments).await {
            Outcome::Acknowledged(updated) if updated["versao"] == version + 1 => tally.updates_accepted += 1,
            Outcome::Refused(text) if text.contains("está na versão") && !is_alarming(&text) => {
                tally.updates_stale += 1;
            }
            other => tally.problems.push(format!("writer {writer}, round {round}, update: {other:?}")),
        }
    }
    (client, tally)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_clients_and_a_stdio_process_on_one_file_lose_no_update_duplicate_no_title_and_see_no_lock() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some(KEY)).await;
    let mut clients = Vec::new();
    for era in [Era::Initialize, Era::Discover, Era::Initialize] {
        clients.push(backend.client(era).await);
    }
    let (over_stdio, stdio_stderr) = stdio_client(&database, Era::Initialize).await;
    clients.push(over_stdio);

    let shared = match call(&clients[0], "criar_curso", json!({"titulo": "Disputado", "cargaHoraria": 1})).await {
        Outcome::Acknowledged(shared) => shared,
        other => panic!("the shared course: {other:?}"),
    };
    let shared_id = shared["id"].as_str().expect("id").to_owned();
    let barrier = Arc::new(Barrier::new(clients.len()));
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(writer, client)| tokio::spawn(contend(client, writer, shared_id.clone(), barrier.clone())))
        .collect();
    let mut clients = Vec::new();
    let mut total = Tally::default();
    for task in tasks {
        let (client, tally) = tokio::time::timeout(PATIENCE * 2, task).await.expect("in time").expect("no panic");
        clients.push(client);
        total.creations_won.extend(tally.creations_won);
        total.creations_refused += tally.creations_refused;
        total.updates_accepted += tally.updates_accepted;
        total.updates_stale += tally.updates_stale;
        total.problems.extend(tally.problems);
    }
    eprintln!(
        "multi-writer: {} writers x {ROUNDS} rounds; updates accepted {}, refused as stale {}; creations won {}, \
         refused as duplicates {}",
        clients.len(),
        total.updates_accepted,
        total.updates_stale,
        total.creations_won.len(),
        total.creations_refused
    );
    assert!(total.problems.is_empty(), "{:#?}", total.problems);

    total.creations_won.sort_unstable();
    assert_eq!(total.creations_won, (0..ROUNDS).collect::<Vec<_>>(), "exactly one creation per title won");
    assert!(total.updates_accepted >= ROUNDS, "the first writer of each round wins: {total:?}");
    let shared = read(&clients[3], &format!("cursos://{shared_id}")).await.expect("shared course");
    let accepted = i64::try_from(total.updates_accepted).expect("small");
    assert_eq!(shared["versao"], 1 + accepted, "no lost update: one version per accepted update");
    assert_eq!(shared["cargaHoraria"], 1 + accepted, "each accepted update built on the one before");
    let (catalog_total, _) = catalog_through(&clients[1]).await;
    assert_eq!(catalog_total, u64::try_from(ROUNDS).expect("small") + 1);

    for client in clients {
        client.cancel().await.expect("close");
    }
    let backend_log = backend.stderr.all();
    assert!(backend.stop().await.success());
    for (name, log) in [("backend", backend_log), ("stdio", stdio_stderr.all())] {
        assert!(!log.to_lowercase().contains("locked"), "the {name} never hit a lock error:\n{log}");
    }
    check_file_after_contention(&database);
}

fn check_file_after_contention(database: &Path) {
    let disk = stored::read(database);
    assert_eq!(disk.integrity, ["ok"]);
    let active: Vec<_> = disk.active_rows().collect();
    let keys: BTreeSet<&str> = active.iter().map(|row| row.title_key.as_str()).collect();
    assert_eq!(keys.len(), active.len(), "no two active courses share a title");
    assert_eq!(active.len(), ROUNDS + 1);
    assert_eq!(usize::try_from(disk.counted_active).expect("count"), active.len());
}
