//! `export` and `import` of the backend binary (ADR 0040), as an operator runs them: on real
//! SQLite files and PostgreSQL schemas, beside a serving backend, interrupted by SIGINT.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use mcp_cursos_e2e::read_json;
use rmcp::model::SubscribeRequestParams;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::support::{Era, PATIENCE, PostgresSchema, Recorder, binary, fresh_database, run_to_end, start_backend};

/// Where a command finds its database: a SQLite file, or a PostgreSQL URL.
#[derive(Clone, Copy)]
enum Target<'a> {
    Sqlite(&'a Path),
    Postgres(&'a str),
}

fn backend_command(target: Target<'_>, arguments: &[&str]) -> Command {
    let mut command = Command::new(binary("mcp-cursos-backend"));
    command.env_clear().env("RUST_LOG", "warn").args(arguments);
    match target {
        Target::Sqlite(path) => command.env("DATABASE_PATH", path),
        Target::Postgres(url) => command.env("DATABASE_URL", url),
    };
    command
}

fn run(target: Target<'_>, arguments: &[&str]) -> Output {
    run_to_end(&mut backend_command(target, arguments))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run_ok(target: Target<'_>, arguments: &[&str]) -> String {
    let output = run(target, arguments);
    assert!(output.status.success(), "{arguments:?} failed: {}{}", text(&output.stdout), text(&output.stderr));
    text(&output.stdout)
}

/// An export of `target` (with `extra` flags), read back: written to a file, since
/// [`run_to_end`] reads a child's stdout only once it ended (a pipe holds 64 KiB).
fn export(target: Target<'_>, extra: &[&str]) -> String {
    let folder = tempfile::tempdir().expect("temp dir");
    let file = folder.path().join("export.jsonl");
    let mut arguments = vec!["export", "--output", file.to_str().expect("UTF-8")];
    arguments.extend_from_slice(extra);
    run_ok(target, &arguments);
    std::fs::read_to_string(&file).expect("the export")
}

/// The course lines of an export file, without their history, keyed by nothing: in file order.
fn courses_of(export: &str) -> Vec<Value> {
    export
        .lines()
        .skip(1)
        .map(|line| {
            let mut course: Value = serde_json::from_str(line).expect("a JSON line");
            course.as_object_mut().expect("an object").remove("historico");
            course
        })
        .collect()
}

fn header_of(export: &str) -> Value {
    serde_json::from_str(export.lines().next().expect("a header")).expect("JSON")
}

/// A catalog with history: created, renamed, archived courses, through the domain's own rules.
async fn seed(path: &Path) {
    use courses_domain::{Catalog, CourseChanges, CourseTitle, NewCourse, Provenance, SqliteStore, WorkloadHours};
    let catalog = Catalog::new(SqliteStore::open(path).expect("open"));
    let by = |tool: &str| Provenance::new("bia", tool, "{}");
    for index in 0..30 {
        let new = NewCourse {
            title: CourseTitle::parse(&format!("Curso, \"nº\" {index}")).expect("valid"),
            workload_hours: WorkloadHours::parse(1 + index).expect("valid"),
        };
        let course = catalog.create(new, by("criar_curso")).await.expect("created");
        if index % 3 == 0 {
            let changes = CourseChanges {
                workload_hours: Some(WorkloadHours::parse(999).expect("valid")),
                ..CourseChanges::default()
            };
            catalog.update(course.id(), changes, by("atualizar_curso")).await.expect("updated");
        }
        if index % 5 == 0 {
            catalog.archive(course.id(), by("arquivar_curso")).await.expect("archived");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_imported_into_an_empty_database_gives_the_same_catalog_on_sqlite_and_through_postgresql() {
    let (folder, source) = fresh_database();
    seed(&source).await;
    let export_file = folder.path().join("catalogo.jsonl");
    let export_arg = export_file.to_str().expect("UTF-8");
    run_ok(Target::Sqlite(&source), &["export", "--history", "--output", export_arg]);
    let exported = std::fs::read_to_string(&export_file).expect("the export");
    let header = header_of(&exported);
    assert_eq!(
        (header["formato"].as_str(), header["total"].as_u64(), header["historico"].as_bool()),
        (Some("mcp-cursos/catalogo"), Some(30), Some(true))
    );
    let original = courses_of(&exported);
    assert_eq!(original.len(), 30);
    assert_eq!(original.iter().filter(|course| course["arquivado"] == true).count(), 6, "archived courses too");
    assert_eq!(original[3]["versao"], 2, "versions kept");
    // The history exported is the course's, oldest first, in the contract's shape.
    let first: Value = serde_json::from_str(exported.lines().nth(1).expect("a course")).expect("JSON");
    let tools: Vec<&str> = first["historico"]
        .as_array()
        .expect("history")
        .iter()
        .map(|entry| entry["ferramenta"].as_str().expect("tool"))
        .collect();
    assert_eq!(tools, ["criar_curso", "atualizar_curso", "arquivar_curso"]);

    // Into an empty SQLite file: the same courses, field by field.
    let copy = folder.path().join("copia/cursos.db");
    let stdout = run_ok(Target::Sqlite(&copy), &["import", export_arg, "--author", "ana"]);
    assert_eq!(stdout.trim(), "import: 30 written, 0 already present, 0 refused");
    let again = export(Target::Sqlite(&copy), &["--history"]);
    assert_eq!(courses_of(&again), original, "ids, titles, hours, archived, versions, instants");
    // Each imported course's history in the new database: its arrival, by the operator.
    for line in again.lines().skip(1) {
        let course: Value = serde_json::from_str(line).expect("JSON");
        let history = course["historico"].as_array().expect("history");
        assert_eq!(history.len(), 1, "{course}");
        assert_eq!((history[0]["autor"].as_str(), history[0]["ferramenta"].as_str()), (Some("ana"), Some("importar")));
        let mut arrived = history[0]["depois"].clone();
        let mut course = course.clone();
        course.as_object_mut().expect("object").remove("historico");
        assert_eq!(&mut arrived, &mut course);
    }

    // Through PostgreSQL and back: SQLite → PostgreSQL → SQLite keeps every field.
    let Some(schema) = PostgresSchema::create() else { return };
    let url = schema.url();
    run_ok(Target::Postgres(&url), &["import", export_arg]);
    let from_postgres = export(Target::Postgres(&url), &[]);
    assert_eq!(courses_of(&from_postgres), original, "PostgreSQL keeps every field");
    let postgres_file = folder.path().join("do-postgres.jsonl");
    std::fs::write(&postgres_file, &from_postgres).expect("write");
    let back = folder.path().join("volta/cursos.db");
    run_ok(Target::Sqlite(&back), &["import", postgres_file.to_str().expect("UTF-8")]);
    assert_eq!(courses_of(&export(Target::Sqlite(&back), &[])), original, "and back to SQLite");
}

#[test]
fn a_file_with_bad_rows_writes_nothing_and_names_each_line_and_field_and_partial_writes_the_valid_ones() {
    let (folder, database) = fresh_database();
    let file = folder.path().join("cursos.csv");
    std::fs::write(
        &file,
        "titulo,cargaHoraria,id\n\
         Rust,10,\n\
         \"Go, a linguagem\",20,\n\
         ,5,\n\
         Python,doze,\n\
         RUST ,3,\n\
         Elixir,2000,\n\
         Haskell,4,nao-e-um-uuid\n\
         Kotlin,8,\n",
    )
    .expect("write");
    let file_arg = file.to_str().expect("UTF-8");
    let output = run(Target::Sqlite(&database), &["import", file_arg]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    for expected in [
        "linha 4: titulo: Campo 'titulo' não pode ficar vazio.",
        "linha 5: cargaHoraria: Campo 'cargaHoraria' deve ser um número inteiro",
        "linha 6: titulo: o título repete o da linha 2 do arquivo",
        "linha 7: cargaHoraria: Campo 'cargaHoraria' deve estar entre 1 e 1000 horas",
        "linha 8: id: Campo 'id' deve ser o id (UUID) de um curso",
    ] {
        assert!(stderr.contains(expected), "missing {expected:?} in:\n{stderr}");
    }
    assert!(!stderr.contains("linha 2:") && !stderr.contains("linha 3:") && !stderr.contains("linha 9:"), "{stderr}");
    assert!(text(&output.stdout).contains("3 new, 0 already present, 5 refused; nothing written"));
    let empty = export(Target::Sqlite(&database), &[]);
    assert_eq!(header_of(&empty)["total"], 0, "nothing was written");

    let output = run(Target::Sqlite(&database), &["import", file_arg, "--partial"]);
    assert_eq!(output.status.code(), Some(2), "some rows refused");
    assert_eq!(text(&output.stdout).trim(), "import: 3 written, 0 already present, 5 refused");
    let titles: Vec<Value> = courses_of(&export(Target::Sqlite(&database), &[]))
        .into_iter()
        .map(|course| course["titulo"].clone())
        .collect();
    assert_eq!(titles, ["Rust", "Go, a linguagem", "Kotlin"]);
    // To stdout (`-`, the default), the same lines as to a file.
    let to_stdout = run_ok(Target::Sqlite(&database), &["export"]);
    assert_eq!(courses_of(&to_stdout), courses_of(&export(Target::Sqlite(&database), &[])));

    // A title the catalog already has is refused by line, as a tool call would be.
    let more = folder.path().join("mais.jsonl");
    std::fs::write(
        &more,
        "{\"titulo\":\"kotlin\",\"cargaHoraria\":3,\"id\":\"7d8f1c2e-0b1a-4c5d-9e6f-112233445566\"}\n",
    )
    .expect("write");
    let output = run(Target::Sqlite(&database), &["import", more.to_str().expect("UTF-8")]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("linha 1: titulo: já existe um curso ativo com este título no catálogo."));
}

#[test]
fn into_an_empty_database_a_clean_file_is_read_once_and_a_repeat_only_the_store_finds_is_named_by_its_line() {
    let (folder, database) = fresh_database();
    let id = "7d8f1c2e-0b1a-4c5d-9e6f-112233445566";
    let row = |title: &str, id: &str| format!("{{\"titulo\":\"{title}\",\"cargaHoraria\":3,\"id\":\"{id}\"}}\n");
    // 120 valid rows, then (in a batch of its own, after the first ones were written) a title or
    // an id of line 1 again: only the store's unique indexes see it in the first try (ADR 0059).
    let rows: String = (0..120).map(|index| format!("{{\"titulo\":\"Curso {index}\",\"cargaHoraria\":3}}\n")).collect();
    for (name, last, expected) in [
        (
            "titulo.jsonl",
            row(" CURSO 0", "0b0f1c2e-0b1a-4c5d-9e6f-112233445566"),
            "linha 121: titulo: o título repete o da linha 1 do arquivo".to_owned(),
        ),
        (
            "id.jsonl",
            row("Outro título", id),
            format!("linha 122: id: o mesmo curso (id {id}) já está numa linha anterior do arquivo."),
        ),
    ] {
        let file = folder.path().join(name);
        let repeated =
            if name == "id.jsonl" { format!("{rows}{}{last}", row("Primeiro", id)) } else { format!("{rows}{last}") };
        std::fs::write(&file, repeated).expect("write");
        let output = run(Target::Sqlite(&database), &["import", file.to_str().expect("UTF-8"), "--batch-size", "50"]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&expected), "missing {expected:?} in:\n{stderr}");
        assert!(stderr.contains("import (check)"), "the first try gave up and the check named the line: {stderr}");
        assert!(text(&output.stdout).contains("1 refused; nothing written"), "{}", text(&output.stdout));
        assert_eq!(header_of(&export(Target::Sqlite(&database), &[]))["total"], 0, "nothing was written");
    }

    let clean = folder.path().join("limpo.jsonl");
    std::fs::write(&clean, &rows).expect("write");
    let output = run(Target::Sqlite(&database), &["import", clean.to_str().expect("UTF-8"), "--batch-size", "50"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&output.stdout).trim(), "import: 120 written, 0 already present, 0 refused");
    assert!(!stderr.contains("import (check)"), "one pass, no check: {stderr}");
    let exported = export(Target::Sqlite(&database), &["--history"]);
    assert_eq!(header_of(&exported)["total"], 120);
    let entries: Vec<Option<usize>> = exported
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line")["historico"].as_array().map(Vec::len))
        .collect();
    assert_eq!(entries, vec![Some(1); 120], "one history entry each");
    let titles: Vec<Value> = courses_of(&exported).into_iter().map(|course| course["titulo"].clone()).collect();
    assert_eq!(titles.first().zip(titles.last()), Some((&"Curso 0".into(), &"Curso 119".into())), "in file order");

    // Into a catalog that has courses, the check runs first, as before.
    let more = folder.path().join("mais.jsonl");
    std::fs::write(&more, row("Mais um", "1b0f1c2e-0b1a-4c5d-9e6f-112233445566")).expect("write");
    let output = run(Target::Sqlite(&database), &["import", more.to_str().expect("UTF-8")]);
    assert_eq!(output.status.code(), Some(0));
    assert!(text(&output.stderr).contains("import (check)"), "{}", text(&output.stderr));
}

#[test]
fn importing_the_same_file_twice_changes_nothing_and_a_dry_run_writes_nothing() {
    let (folder, database) = fresh_database();
    let file = folder.path().join("cursos.csv");
    // Columns in another order than the documentation's: the header names them.
    let rows: String = (0..120).map(|index| format!("{},Curso {index}\n", 1 + index % 100)).collect();
    std::fs::write(&file, format!("cargaHoraria,titulo\n{rows}")).expect("write");
    let file_arg = file.to_str().expect("UTF-8");

    let dry = run_ok(Target::Sqlite(&database), &["import", file_arg, "--dry-run"]);
    assert_eq!(dry.trim(), "import (dry run): 120 new, 0 already present, 0 refused; nothing written");
    assert_eq!(header_of(&export(Target::Sqlite(&database), &[]))["total"], 0);

    let first = run_ok(Target::Sqlite(&database), &["import", file_arg, "--batch-size", "50"]);
    assert_eq!(first.trim(), "import: 120 written, 0 already present, 0 refused");
    let after_first = export(Target::Sqlite(&database), &["--history"]);
    let second = run_ok(Target::Sqlite(&database), &["import", file_arg]);
    assert_eq!(second.trim(), "import: 0 written, 120 already present, 0 refused");
    let after_second = export(Target::Sqlite(&database), &["--history"]);
    assert_eq!(
        after_second.lines().skip(1).collect::<Vec<_>>(),
        after_first.lines().skip(1).collect::<Vec<_>>(),
        "not one field, not one history entry"
    );
    let dry = run_ok(Target::Sqlite(&database), &["import", file_arg, "--dry-run"]);
    assert_eq!(dry.trim(), "import (dry run): 0 new, 120 already present, 0 refused; nothing written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated, reason = "resources/subscribe is the 2025-era API under test")]
async fn a_course_imported_while_the_backend_serves_is_announced_and_its_history_names_the_operator() {
    let (folder, database) = fresh_database();
    let backend = start_backend(&database, Some("chave-importacao")).await;
    let (sender, mut notices) = mpsc::unbounded_channel();
    let client = backend.client_with(Recorder(sender), Era::Initialize).await;
    client.subscribe(SubscribeRequestParams::new("cursos://catalogo")).await.expect("resources/subscribe");

    let file = folder.path().join("novo.csv");
    std::fs::write(&file, "titulo,cargaHoraria\nImportado ao vivo,12\n").expect("write");
    let output = tokio::task::spawn_blocking(move || {
        run(Target::Sqlite(&database), &["import", file.to_str().expect("UTF-8"), "--author", "ana-operadora"])
    })
    .await
    .expect("ran");
    assert!(output.status.success(), "{}", text(&output.stderr));

    let heard = tokio::time::timeout(PATIENCE, async {
        while let Some(notice) = notices.recv().await {
            if notice == "updated cursos://catalogo" {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(heard, Ok(true), "the subscriber heard of the imported course");

    let catalog = read_json(&client, "cursos://catalogo").await;
    let course = &catalog["cursos"][0];
    assert_eq!(course["titulo"], "Importado ao vivo");
    let history = read_json(&client, &format!("cursos://{}/historico", course["id"].as_str().expect("id"))).await;
    let entry = &history["entradas"][0];
    assert_eq!((entry["autor"].as_str(), entry["ferramenta"].as_str()), (Some("ana-operadora"), Some("importar")));
    assert_eq!(entry["argumentos"]["arquivo"], "novo.csv");
    client.cancel().await.expect("close");
    assert!(backend.stop().await.success());
}

/// Starts `command`, waits for its first progress line on stderr, sends SIGINT, and returns its
/// status and stdout.
fn interrupt_after_first_progress(mut command: Command, progress: &str) -> (Option<i32>, String, String) {
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = String::new();
    loop {
        let line = lines.next().expect("a progress line before the end").expect("stderr");
        seen.push_str(&line);
        seen.push('\n');
        if line.starts_with(progress) {
            break;
        }
    }
    let signalled = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill");
    assert!(signalled.success());
    for line in lines {
        seen.push_str(&line.expect("stderr"));
        seen.push('\n');
    }
    let output = child.wait_with_output().expect("ended");
    (output.status.code(), text(&output.stdout), seen)
}

#[test]
fn ctrl_c_stops_an_import_between_batches_and_the_same_command_again_finishes_it() {
    let (folder, database) = fresh_database();
    // A database with a course already: the import goes batch by batch (into an empty one it is
    // one transaction, ADR 0057: the test below).
    let first = folder.path().join("primeiro.csv");
    std::fs::write(&first, "titulo,cargaHoraria\nO primeiro curso,1\n").expect("write");
    run_ok(Target::Sqlite(&database), &["import", first.to_str().expect("UTF-8")]);
    let file = folder.path().join("grande.csv");
    let rows: String = (0..3_000).map(|index| format!("Curso {index},{}\n", 1 + index % 1000)).collect();
    std::fs::write(&file, format!("titulo,cargaHoraria\n{rows}")).expect("write");
    let file_arg = file.to_str().expect("UTF-8");
    // --partial: one pass that writes, so the first progress line comes after the first batch.
    let command = backend_command(Target::Sqlite(&database), &["import", file_arg, "--partial", "--batch-size", "10"]);
    let (status, stdout, stderr) = interrupt_after_first_progress(command, "import: ");
    assert_eq!(status, Some(130), "{stdout}{stderr}");
    let written: u64 = stdout
        .split("line ")
        .nth(1)
        .and_then(|rest| rest.split(": ").nth(1))
        .and_then(|counts| counts.split(' ').next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("the written count in {stdout:?}"));
    assert!(stdout.contains("run the same command again"), "{stdout}");
    assert!(written > 0 && written < 3_000, "stopped in the middle: {written}");
    assert_eq!(written % 10, 0, "whole batches only: {written}");
    let exported = export(Target::Sqlite(&database), &[]);
    assert_eq!(header_of(&exported)["total"], written + 1, "the database holds exactly what was reported");

    let rest = run_ok(Target::Sqlite(&database), &["import", file_arg]);
    assert_eq!(rest.trim(), format!("import: {} written, {written} already present, 0 refused", 3_000 - written));
    assert_eq!(header_of(&export(Target::Sqlite(&database), &[]))["total"], 3_001);
}

#[test]
fn ctrl_c_stops_an_import_into_an_empty_database_with_nothing_written_and_the_same_command_again_does_it_all() {
    let (folder, database) = fresh_database();
    let file = folder.path().join("grande.csv");
    let rows: String = (0..50_000).map(|index| format!("Curso {index},{}\n", 1 + index % 1000)).collect();
    std::fs::write(&file, format!("titulo,cargaHoraria\n{rows}")).expect("write");
    let file_arg = file.to_str().expect("UTF-8");
    // Batches of 10 in one pass: the interrupt, sent at the first progress line, finds thousands
    // of batches still to go.
    let command = backend_command(Target::Sqlite(&database), &["import", file_arg, "--partial", "--batch-size", "10"]);
    let (status, stdout, stderr) = interrupt_after_first_progress(command, "import: ");
    assert_eq!(status, Some(130), "{stdout}{stderr}");
    assert!(stdout.contains("nothing written") && stdout.contains("run the same command again"), "{stdout}");
    assert_eq!(header_of(&export(Target::Sqlite(&database), &[]))["total"], 0, "one transaction, rolled back");

    let all = run_ok(Target::Sqlite(&database), &["import", file_arg]);
    assert_eq!(all.trim(), "import: 50000 written, 0 already present, 0 refused");
    let exported = export(Target::Sqlite(&database), &[]);
    assert_eq!(header_of(&exported)["total"], 50_000);
    let courses = courses_of(&exported);
    assert_eq!(courses.first().map(|course| course["titulo"].clone()), Some("Curso 0".into()), "in file order");
    assert_eq!(courses.last().map(|course| course["titulo"].clone()), Some("Curso 49999".into()));
}

#[test]
fn an_interrupted_export_leaves_no_file() {
    let (folder, database) = fresh_database();
    let file = folder.path().join("grande.csv");
    let rows: String = (0..2_000).map(|index| format!("Curso {index},{}\n", 1 + index % 1000)).collect();
    std::fs::write(&file, format!("titulo,cargaHoraria\n{rows}")).expect("write");
    run_ok(Target::Sqlite(&database), &["import", file.to_str().expect("UTF-8")]);
    let output = folder.path().join("saida/catalogo.jsonl");
    std::fs::create_dir_all(output.parent().expect("folder")).expect("folder");
    let command = backend_command(
        Target::Sqlite(&database),
        &["export", "--history", "--page-size", "1", "--output", output.to_str().expect("UTF-8")],
    );
    let (status, _, stderr) = interrupt_after_first_progress(command, "export: ");
    assert_eq!(status, Some(130), "{stderr}");
    assert!(stderr.contains("was not written"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(output.parent().expect("folder")).expect("list").collect();
    assert!(left.is_empty(), "neither the output nor its temporary file: {left:?}");
}

/// Issue 24, items 4 and 8: hostile import files get one refusal per line, by number, and the
/// other lines go on with `--partial`. Before: a 2 MiB line was read whole (a 100 MB one took
/// 712 MB), one line of invalid UTF-8 ended the whole import, a row dated 2999 was stored (and
/// dragged every later write of it to 2999), and a repeated CSV header and the nil UUID passed.
#[test]
fn hostile_import_lines_are_refused_one_by_one_and_the_others_go_on() {
    let (folder, database) = fresh_database();
    let file = folder.path().join("hostil.jsonl");
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"{\"titulo\":\"Rust\",\"cargaHoraria\":10}\n");
    bytes.extend_from_slice(b"{\"titulo\":\"");
    bytes.extend(std::iter::repeat_n(b'x', 2 * 1024 * 1024));
    bytes.extend_from_slice(b"\",\"cargaHoraria\":10}\n");
    bytes.extend_from_slice(b"{\"titulo\":\"Caf\xe9\",\"cargaHoraria\":10}\n");
    bytes.extend_from_slice(
        b"{\"id\":\"5b0e7f6e-1c1d-4c3a-9f0e-0123456789ab\",\"titulo\":\"Futuro\",\"cargaHoraria\":10,\
          \"arquivado\":false,\"versao\":2,\"criadoEm\":\"2026-01-01T00:00:00.000Z\",\
          \"atualizadoEm\":\"2999-01-01T00:00:00.000Z\"}\n",
    );
    bytes.extend_from_slice(
        b"{\"id\":\"00000000-0000-0000-0000-000000000000\",\"titulo\":\"Nulo\",\"cargaHoraria\":10}\n",
    );
    bytes.extend_from_slice(b"{\"titulo\":\"Go\",\"cargaHoraria\":20}\n");
    std::fs::write(&file, &bytes).expect("write");
    let file_arg = file.to_str().expect("UTF-8");

    let output = run(Target::Sqlite(&database), &["import", file_arg]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    for expected in [
        "linha 2: linha: a linha tem mais de 1 MiB e não foi lida",
        "linha 3: linha: não é texto UTF-8 válido (byte 15 da linha).",
        "linha 4: atualizadoEm: Campo 'atualizadoEm' não pode ser posterior ao momento da importação",
        "linha 5: id: Campo 'id' não pode ser o UUID nulo",
    ] {
        assert!(stderr.contains(expected), "missing {expected:?} in:\n{stderr}");
    }
    assert!(!stderr.contains("linha 1:") && !stderr.contains("linha 6:"), "{stderr}");
    assert!(
        text(&output.stdout).contains("2 new, 0 already present, 4 refused; nothing written"),
        "{}",
        text(&output.stdout)
    );
    assert_eq!(header_of(&export(Target::Sqlite(&database), &[]))["total"], 0, "nothing was written");

    let output = run(Target::Sqlite(&database), &["import", file_arg, "--partial"]);
    assert_eq!(output.status.code(), Some(2), "some rows refused: {}", text(&output.stderr));
    let titles: Vec<Value> = courses_of(&export(Target::Sqlite(&database), &[]))
        .into_iter()
        .map(|course| course["titulo"].clone())
        .collect();
    assert_eq!(titles, ["Rust", "Go"]);

    // CSV: the same per-line refusals, and a second header (two files joined) is named as such.
    let csv = folder.path().join("hostil.csv");
    let mut bytes = b"titulo,cargaHoraria,id\nElixir,10,\ntitulo,cargaHoraria,id\n".to_vec();
    bytes.extend_from_slice(b"Caf\xe9,10,\nNulo,10,00000000-0000-0000-0000-000000000000\nKotlin,8,\n");
    std::fs::write(&csv, &bytes).expect("write");
    let output = run(Target::Sqlite(&database), &["import", csv.to_str().expect("UTF-8"), "--partial"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    for expected in [
        "linha 3: linha: repete o cabeçalho da linha 1",
        "linha 4: linha: não é texto UTF-8 válido (byte 4 da linha).",
        "linha 5: id: Campo 'id' não pode ser o UUID nulo",
    ] {
        assert!(stderr.contains(expected), "missing {expected:?} in:\n{stderr}");
    }
    assert_eq!(text(&output.stdout).trim(), "import: 2 written, 0 already present, 3 refused");
}
