//! `bashtool mcp`: the bash tool as an MCP server over stdio, or over
//! streamable HTTP with `--http` ([`http`]).
//!
//! This file wires the parts together: the settings from the flags and the
//! config file ([`options`]), the logs ([`crate::logging`]), the
//! environment ([`crate::environment`]), the tools over it ([`backend`]),
//! the server ([`server`]) behind the stdio gate ([`gate`]), and the
//! signals that stop it ([`crate::signals`]).

mod backend;
mod elicitation;
mod gate;
mod http;
mod instructions;
mod options;
mod order;
mod progress;
mod server;
pub mod stdio;
pub mod tools;

use std::process::ExitCode;

use anyhow::Context as _;
use rmcp::ServiceExt as _;

use crate::config::FileConfig;
use crate::logging;
use crate::signals::StopSignals;
use backend::Backend;
pub use options::McpArgs;
use options::Settings;
use server::BashServer;

pub fn run(args: &McpArgs) -> anyhow::Result<ExitCode> {
    let (file, path) = FileConfig::load(args.tool.config.as_deref())?;
    let mut settings = Settings::new(args, &file)?;
    logging::to_stderr(logging::parse(&settings.log_filter)?)?;
    if let Some(path) = &path {
        tracing::info!(path = %path.display(), "config file loaded");
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let outcome = match settings.http.take() {
        Some(http) => runtime.block_on(http::serve(settings, http)),
        None => runtime.block_on(serve_stdio(settings)),
    };
    // tokio reads stdin on a blocking thread that cannot be interrupted; do
    // not wait for it once the server is done.
    runtime.shutdown_background();
    outcome
}

/// The `bash` tool exactly as `bashtool mcp` with `args` serves it in
/// `tools/list`: the server's own settings, environment and tools, built
/// and then closed again (`bashtool schema --format mcp`).
pub fn served_bash_tool(args: &McpArgs) -> anyhow::Result<rmcp::model::Tool> {
    let (file, _) = FileConfig::load(args.tool.config.as_deref())?;
    let settings = Settings::new(args, &file)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let environment = settings.environment.open(&settings.tool).await?;
        let tools = Backend::new(&settings, &environment).tools();
        // Nothing ran; a warm shell started ahead is stopped.
        let _ = environment.finish().await;
        tools
            .into_iter()
            .next()
            .context("the server serves a bash tool")
    })
}

/// Serves one client on stdin/stdout until it goes away or a signal comes,
/// then stops the calls, the jobs (unless kept) and the environment.
#[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
async fn serve_stdio(mut settings: Settings) -> anyhow::Result<ExitCode> {
    let grace = settings.shutdown_grace();
    #[cfg(target_os = "linux")]
    crate::environment::tie_to_this_process(&mut settings.environment.local);
    // An environment that cannot be opened still gets a server: the client
    // is told why (in the instructions, and by every call) instead of
    // seeing the connection close.
    let (environment, problem) = settings.environment.open_or_explain(&settings.tool).await;
    let mut backend = Backend::new(&settings, &environment);
    if let Some(problem) = &problem {
        backend.explain_problem(problem, settings.environment.remote.is_some());
    }
    // Calls into the session must reach it in the order they arrived.
    let session_calls = backend.order.clone().map(|order| gate::SessionCalls {
        order,
        tool: settings.tool.name.clone(),
    });
    let server = BashServer::new(backend, settings.progress_interval);
    let (transport, input_closed) = gate::spawn(stdio::input(), stdio::output(), session_calls);
    {
        let server = server.clone();
        tokio::spawn(async move {
            input_closed.cancelled().await;
            tracing::info!("stdin closed: stopping");
            server.cancel_calls();
        });
    }
    let mut signals = StopSignals::install()?;
    let running = tokio::select! {
        running = server.clone().serve(transport) => running.context("MCP initialization failed")?,
        _ = signals.next() => return Ok(ExitCode::SUCCESS),
    };
    let stop = running.cancellation_token();
    tokio::select! {
        quit = running.waiting() => {
            tracing::info!(?quit, "client went away");
        }
        signal = signals.next() => {
            tracing::info!("{signal}: stopping");
            stop.cancel();
        }
    }
    server
        .shut_down(grace, settings.environment.keep_jobs)
        .await;
    if let Err(error) = environment.close(grace).await {
        tracing::warn!(%error, "the session's state was not saved");
    }
    Ok(ExitCode::SUCCESS)
}
