//! Issue 23, item 3, in process: the listeners of a caller that lapses (as a token does at its
//! expiry) end by the server's own timer ([`mcp_server::setup::RECHECK_INTERVAL`]), with no keys
//! file and no notice to trigger it, on both eras.

use std::time::{Duration, Instant};

use mcp_server::{Authority, Caller, Lapsed, Setup};

use super::*;

/// Every caller stands until `lapse`, then has expired (what a token's authority says past
/// `exp`; in process every client is the one local caller).
#[derive(Debug)]
struct LapsingAt(Instant);

impl Authority for LapsingAt {
    fn current(&self, caller: &Caller) -> Result<Caller, Lapsed> {
        if Instant::now() >= self.0 { Err(Lapsed::Expired) } else { Ok(caller.clone()) }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated, reason = "resources/subscribe is the 2025-era API this test covers")]
async fn the_listeners_of_a_caller_that_lapses_end_by_the_servers_timer_on_both_eras() {
    let (catalog, _database) = open_catalog();
    let lapse = Instant::now() + Duration::from_millis(800);
    let setup = Setup {
        authority: Some(Arc::new(LapsingAt(lapse))),
        follow_other_processes: false,
        ..Setup::new(ServerOptions::default())
    };
    let running = mcp_server::setup::start(catalog, setup).expect("started");
    let state = running.state().clone();
    let modern = attach((), &state, Era::Discover).await;
    let mut stream = modern.listen(pages_filter(vec!["cursos://catalogo".to_owned()])).await.expect("listen");
    let (sender, _notices) = tokio::sync::mpsc::unbounded_channel();
    let legacy = attach(Recorder(sender), &state, Era::Initialize).await;
    legacy.subscribe(rmcp::model::SubscribeRequestParams::new("cursos://catalogo")).await.expect("subscribe");
    until_counts(&state, "both listeners open", |counts| counts.listen_streams == 1 && counts.sessions == 1).await;
    assert!(Instant::now() < lapse, "the test set up its listeners before the lapse");

    let bound = mcp_server::setup::RECHECK_INTERVAL + Duration::from_secs(1);
    let ended = tokio::time::timeout_at((lapse + bound).into(), stream.next()).await;
    let ended_at = Instant::now();
    let ended = ended.expect("the listen stream ended within the bound of the lapse");
    assert!(matches!(ended, Ok(None) | Err(_)), "it ended without a notice: {ended:?}");
    assert!(ended_at >= lapse, "not before the lapse");
    eprintln!("the listen stream ended {:?} after the lapse", ended_at - lapse);
    until_counts(&state, "the lapsed session dropped", |counts| counts.sessions == 0 && counts.listen_streams == 0)
        .await;
    let _ = modern.cancel().await;
    let _ = legacy.cancel().await;
}
