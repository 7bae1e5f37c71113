//! The measured requests: the real [`CursosServer`] served in process over `tokio::io::duplex`,
//! an rmcp client on the other end (as in `libs/mcp-server/tests/contract.rs`), and a timer
//! around each client call. A latency is the full round trip: client encoding, the in-process
//! transport, the server's handler and its store's queries (SQLite or PostgreSQL), and client
//! decoding.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use courses_domain::{Catalog, CatalogName, CourseTitle, NewCourse, Provenance, WorkloadHours};
use mcp_server::{CursosServer, ServerOptions, ServerState};
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompleteResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResult, Reference,
};
use rmcp::service::{ClientCacheConfig, RunningService};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::dataset::{Fixtures, SplitMix64};

/// The one place the server is built, as the apps build it (default options). When its
/// constructor changes, this is the line to fix.
fn build_server(catalog: Catalog) -> CursosServer {
    CursosServer::new(&ServerState::new(catalog, ServerOptions::default()))
}

/// A measured operation. Every variant is a real request the server answers today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// `resources/read cursos://catalogo`: the first page and its `total`.
    CatalogFirstPage,
    /// `resources/read cursos://catalogo?pagina=<token>` near the end of the catalog.
    CatalogDeepPage,
    /// `resources/read cursos://<uuid>` of a random existing course.
    CourseById,
    /// `resources/list` without a cursor.
    ListFirstPage,
    /// `resources/list` with a `nextCursor` near the end of the catalog.
    ListDeepPage,
    /// `completion/complete` of `cursos://{uuid}` with the first word of many titles
    /// ("introdução"): a title-prefix range, 100 matches and more.
    CompleteCommonPrefix,
    /// `completion/complete` with the 7-digit number inside one title: "contains" through the
    /// trigram index, one match.
    CompleteRareContains,
    /// `completion/complete` with the first 8 characters of a random course id.
    CompleteIdPrefix,
    /// `Catalog::create` of a course, one after the other (each its own durable write), in the
    /// catalog [`WRITES_CATALOG`] of the same database: the write path with every index of a
    /// catalog of this size, leaving the measured catalog (its count, its pages) as it was.
    CreateCourse,
}

/// The catalog the timed creations go to (ADR 0035): same tables and indexes, other rows.
pub(crate) const WRITES_CATALOG: &str = "bench-escritas";

impl Operation {
    /// Every operation, in report order.
    pub(crate) const ALL: [Self; 9] = [
        Self::CatalogFirstPage,
        Self::CatalogDeepPage,
        Self::CourseById,
        Self::ListFirstPage,
        Self::ListDeepPage,
        Self::CompleteCommonPrefix,
        Self::CompleteRareContains,
        Self::CompleteIdPrefix,
        Self::CreateCourse,
    ];

    /// The operation as the report names it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::CatalogFirstPage => "resources/read cursos://catalogo",
            Self::CatalogDeepPage => "resources/read cursos://catalogo?pagina= (deep)",
            Self::CourseById => "resources/read cursos://{uuid} (random)",
            Self::ListFirstPage => "resources/list (first page)",
            Self::ListDeepPage => "resources/list nextCursor (deep)",
            Self::CompleteCommonPrefix => "completion/complete uuid, common title prefix",
            Self::CompleteRareContains => "completion/complete uuid, rare title substring",
            Self::CompleteIdPrefix => "completion/complete uuid, id prefix",
            Self::CreateCourse => "create a course (Catalog::create, sequential)",
        }
    }
}

/// Latency percentiles of one operation, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Latency {
    pub(crate) median: f64,
    pub(crate) p90: f64,
    pub(crate) p99: f64,
}

impl Latency {
    /// Nearest-rank percentiles of `samples` (at least one).
    pub(crate) fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        let rank = |fraction: f64| {
            // Nearest rank: the smallest sample with at least `fraction` of the samples at or below it.
            let index = (fraction * samples.len() as f64).ceil() as usize;
            samples[index.clamp(1, samples.len()) - 1].as_secs_f64() * 1e6
        };
        Self { median: rank(0.5), p90: rank(0.9), p99: rank(0.99) }
    }
}

/// A request, built before the timer starts.
#[derive(Debug)]
enum Request {
    Read(String),
    List(Option<String>),
    Complete(String),
    Create(String),
}

/// What came back, kept only for the sanity checks (decoded outside the timed section).
#[derive(Debug)]
enum Response {
    Read(ReadResourceResult),
    List(ListResourcesResult),
    Complete(CompleteResult),
    Created,
}

/// An rmcp client connected to the real server, in process.
pub(crate) struct Harness {
    client: RunningService<RoleClient, ()>,
    writes: Catalog,
    /// Distinguishes this run's titles from those of earlier runs on a kept file.
    run: String,
    created: u64,
    server: JoinHandle<()>,
    fixtures: Fixtures,
    active: u64,
    random: SplitMix64,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Harness").field("active", &self.active).finish_non_exhaustive()
    }
}

impl Harness {
    /// Serves the catalog (on either store) and connects a client (the `initialize` handshake).
    pub(crate) async fn start(catalog: Catalog, fixtures: Fixtures, active: u64, seed: u64) -> Result<Self> {
        let (server_io, client_io) = tokio::io::duplex(1 << 20);
        let writes = catalog.scoped(&CatalogName::parse(WRITES_CATALOG)?);
        let run = time::OffsetDateTime::now_utc().unix_timestamp_nanos().to_string();
        let server = build_server(catalog);
        let server = tokio::spawn(async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let client = ().serve(client_io).await.context("the MCP handshake failed")?;
        // Every timed call must reach the server, whatever cache hints it may send one day.
        client.set_response_cache_config(ClientCacheConfig::disabled()).await;
        Ok(Self {
            client,
            writes,
            run,
            created: 0,
            server,
            fixtures,
            active,
            random: SplitMix64::new(seed ^ 0x0b5e_55ed),
        })
    }

    /// Closes the connection and waits for the server to finish.
    pub(crate) async fn stop(self) -> Result<()> {
        self.client.cancel().await?;
        self.server.await?;
        Ok(())
    }

    /// Checks that `operation` answers what it should, then times it `iterations` times after a
    /// short warm-up.
    pub(crate) async fn measure(&mut self, operation: Operation, iterations: usize) -> Result<Latency> {
        let request = self.request(operation);
        let response = self.send(request).await.with_context(|| operation.label())?;
        self.check(operation, &response).with_context(|| format!("{}: unexpected answer", operation.label()))?;
        let warm_up = (iterations / 10).clamp(5, 50);
        for _ in 0..warm_up {
            let request = self.request(operation);
            self.send(request).await?;
        }
        let mut samples = Vec::with_capacity(iterations);
        for _ in 0..iterations.max(1) {
            let request = self.request(operation);
            let started = Instant::now();
            let response = self.send(request).await;
            samples.push(started.elapsed());
            response?;
        }
        Ok(Latency::of(&mut samples))
    }

    fn request(&mut self, operation: Operation) -> Request {
        let deep = &self.fixtures.deep_cursor;
        match operation {
            Operation::CatalogFirstPage => Request::Read("cursos://catalogo".to_owned()),
            Operation::CatalogDeepPage => Request::Read(format!("cursos://catalogo?pagina={deep}")),
            Operation::CourseById => {
                let ids = &self.fixtures.course_ids;
                let index = usize::try_from(self.random.below(ids.len() as u64)).unwrap_or(0);
                Request::Read(format!("cursos://{}", ids[index]))
            }
            Operation::ListFirstPage => Request::List(None),
            Operation::ListDeepPage => Request::List(Some(deep.clone())),
            Operation::CompleteCommonPrefix => Request::Complete("introdução".to_owned()),
            // Every title ends with its row number (active and archived rows alike).
            Operation::CompleteRareContains => Request::Complete(format!("{:07}", self.random.below(self.active))),
            Operation::CompleteIdPrefix => {
                let ids = &self.fixtures.course_ids;
                let index = usize::try_from(self.random.below(ids.len() as u64)).unwrap_or(0);
                Request::Complete(ids[index][..8].to_owned())
            }
            Operation::CreateCourse => {
                self.created += 1;
                Request::Create(format!("Curso de medição {} {}", self.run, self.created))
            }
        }
    }

    async fn send(&self, request: Request) -> Result<Response> {
        Ok(match request {
            Request::Read(uri) => Response::Read(self.client.read_resource(ReadResourceRequestParams::new(uri)).await?),
            Request::List(cursor) => {
                let params = cursor.map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
                Response::List(self.client.list_resources(params).await?)
            }
            Request::Complete(typed) => {
                let params = CompleteRequestParams::new(
                    Reference::for_resource("cursos://{uuid}"),
                    ArgumentInfo::new("uuid", typed),
                );
                Response::Complete(self.client.complete(params).await?)
            }
            Request::Create(title) => {
                let course =
                    NewCourse { title: CourseTitle::parse(&title)?, workload_hours: WorkloadHours::parse(10)? };
                self.writes.create(course, Provenance::new("bench", "criar_curso", "{}")).await?;
                Response::Created
            }
        })
    }

    /// Makes sure the timed requests do the real work: full pages, the right total, real courses.
    fn check(&self, operation: Operation, response: &Response) -> Result<()> {
        let full_page = self.active.min(100);
        let (result, is_read) = match response {
            Response::Read(result) => (serde_json::to_value(result)?, true),
            Response::List(result) => (serde_json::to_value(result)?, false),
            Response::Created => return Ok(()),
            Response::Complete(result) => {
                let values = &result.completion.values;
                ensure!(values.len() <= 100, "{} values", values.len());
                if operation == Operation::CompleteCommonPrefix {
                    ensure!(!values.is_empty(), "no course completes a common title prefix");
                }
                return Ok(());
            }
        };
        let document = || -> Result<Value> {
            Ok(serde_json::from_str(result["contents"][0]["text"].as_str().context("no text contents")?)?)
        };
        match (operation, is_read) {
            (Operation::CatalogFirstPage | Operation::CatalogDeepPage, true) => {
                let page = document()?;
                ensure!(page["total"] == self.active, "total {} is not {}", page["total"], self.active);
                let courses = page["cursos"].as_array().context("no cursos")?.len();
                if operation == Operation::CatalogFirstPage {
                    ensure!(courses as u64 == full_page, "{courses} courses on the first page");
                } else {
                    ensure!(courses > 0, "the deep page is empty");
                }
            }
            (Operation::CourseById, true) => {
                let course = document()?;
                ensure!(course["id"].is_string() && course["titulo"].is_string(), "not a course: {course}");
            }
            (Operation::ListFirstPage, false) => {
                let resources = result["resources"].as_array().context("no resources")?;
                ensure!(resources.len() as u64 == 1 + full_page, "{} resources", resources.len());
            }
            (Operation::ListDeepPage, false) => {
                ensure!(result["resources"].as_array().is_some_and(|list| !list.is_empty()), "empty deep list");
            }
            (operation, _) => anyhow::bail!("{operation:?} answered {result}"),
        }
        Ok(())
    }
}
