//! `mcp-cursos-backend`: reads its settings, installs logging and runs the command asked for
//! (serving, without one); each command is a file of `backend::commands`.

use backend::Settings;
use backend::commands::{self, settings::Command};

/// jemalloc, not glibc's malloc: the memory of closed sessions goes back to the system (ADR 0046).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Failures end as one line and status 1, whatever `RUST_BACKTRACE` says (issue 25).
fn main() -> std::process::ExitCode {
    let runtime = mcp_server::setup::runtime_with_worker_hooks(
        backend::allocator::on_worker_park,
        backend::allocator::on_worker_unpark,
    );
    mcp_server::log_writer::exit_code(runtime.map_err(anyhow::Error::from).and_then(|runtime| runtime.block_on(run())))
}

async fn run() -> anyhow::Result<()> {
    let settings = Settings::from_command_line();
    // Held to the end of `main`: it flushes the queued log lines (dropped by `exit` paths, which
    // log through the direct writer instead).
    let serving = settings.command.is_none();
    // Telemetry while serving only (issue 27): off unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
    let (layer, telemetry) =
        if serving { mcp_server::telemetry::install("mcp-cursos-backend") } else { (None, Ok(None)) };
    let _logs = backend::install_logging(settings.log_format, serving, layer);
    let telemetry = mcp_server::telemetry::started(telemetry).map_err(anyhow::Error::msg)?;
    match &settings.command {
        None => {
            let served = commands::serve::run(&settings).await;
            if let Some(telemetry) = telemetry {
                // Off the runtime's workers: the SDK's shutdown blocks.
                let _ = tokio::task::spawn_blocking(move || telemetry.shutdown(mcp_server::telemetry::SHUTDOWN)).await;
            }
            served
        }
        Some(Command::Keys(command)) => commands::keys::run(command, settings.keys_file.as_deref()),
        Some(Command::Health) => commands::health::run(&settings),
        Some(Command::Check) => commands::check::run(&settings).await,
        Some(Command::Export(arguments)) => commands::export::run(&settings, arguments).await,
        Some(Command::Import(arguments)) => commands::import::run(&settings, arguments).await,
        Some(Command::Migrate(arguments)) => commands::migrate::run(arguments).await,
        Some(Command::Backup(arguments)) => commands::backup::run(&settings, arguments).await,
        Some(Command::Restore(arguments)) => commands::restore::run(&settings, arguments),
    }
}
