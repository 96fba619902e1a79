//! `bashtool mcp`: the bash tool as an MCP server over stdio, or over
//! streamable HTTP with `--http` ([`http`]).

mod gate;
mod http;
mod instructions;
mod order;
mod progress;
mod server;
pub mod stdio;
pub mod tools;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bashtool_core::{BashTool, CommandExec, Jobs, JobsTool, Shortening, ToolConfig};
use bashtool_env_local::{LocalConfig, LocalExec, Session, SessionConfig};
use clap::Args;
use rmcp::ServiceExt as _;

use crate::config::{FileConfig, seconds};
use crate::logging;
use crate::options::ToolArgs;
use crate::signals::StopSignals;
use order::ArrivalOrder;
use server::{Backend, BashServer};

/// How often progress notifications may be sent, by default.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);
/// Time for running calls to stop, beyond the kill grace, at shutdown.
const SHUTDOWN_MARGIN: Duration = Duration::from_secs(3);

/// Serve the bash tool over MCP (stdio, or streamable HTTP with --http)
///
/// Speaks MCP on stdin/stdout (logs go to stderr) with two tools: `bash`
/// (the tool's own schema and description; the result's text is what the
/// model reads, `isError` the outcome, `structuredContent` the details) and
/// `bash_jobs` (list, read, wait on and stop background jobs). Calls run
/// concurrently, progress notifications carry live output, and a client's
/// cancel stops the command's whole process tree. By default all calls share
/// one persistent shell (cwd, variables, functions carry over), served in
/// arrival order; --stateless gives each call a fresh shell. On stdin EOF or
/// SIGTERM the server stops its commands and jobs and exits. With --http it
/// serves MCP over streamable HTTP instead, one shell per MCP session, behind
/// a bearer token.
///
/// Settings come from the flags, then the config file, then the defaults.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct McpArgs {
    #[command(flatten)]
    pub tool: ToolArgs,
    #[command(flatten)]
    pub remote: crate::options::RemoteArgs,
    /// Run each call in a fresh shell instead of one persistent session
    #[arg(long)]
    pub stateless: bool,
    /// Leave background jobs running when the server exits
    #[arg(long)]
    pub keep_jobs: bool,
    /// Timeout of mode "default", in seconds [default: 30]
    #[arg(long, value_name = "SECONDS")]
    pub default_timeout: Option<u64>,
    /// Timeout of mode "slow", in seconds [default: 900]
    #[arg(long, value_name = "SECONDS")]
    pub slow_timeout: Option<u64>,
    /// Largest timeout the model may ask for, in seconds [default: 1800]
    #[arg(long, value_name = "SECONDS")]
    pub max_timeout: Option<u64>,
    /// Refuse commands that contain PATTERN (repeatable)
    #[arg(long = "deny", value_name = "PATTERN")]
    pub deny: Vec<String>,
    /// Add a variable to every command's environment (repeatable)
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Directory for the full logs of commands
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// Logging on stderr: error, warn, info, debug, trace or a RUST_LOG filter [default: $RUST_LOG, else warn]
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Least time between two progress notifications of a call, in milliseconds [default: 250]
    #[arg(long, value_name = "MS")]
    pub progress_interval_ms: Option<u64>,
    /// Serve MCP over streamable HTTP at ADDR:PORT, path /mcp, instead of stdio (a bare PORT is loopback); each MCP session gets its own shell
    #[arg(long, value_name = "ADDR:PORT")]
    pub http: Option<String>,
    /// With --http: the bearer token is in FILE (yours, not readable by group or others) [default: a random token, printed once on stderr and written 0600 to the state directory]
    #[arg(long, value_name = "FILE", requires = "http")]
    pub token_file: Option<PathBuf>,
    /// With --http: close a connection whose request headers take longer than SECONDS to arrive, or that sits idle that long between requests [default: 10]
    #[arg(long, value_name = "SECONDS", requires = "http")]
    pub http_header_timeout: Option<u64>,
    /// With --http: most connections open at once; when full, the oldest one that has not presented the token is closed to make room, and if all have, a new one gets 503 [default: 256]
    #[arg(long, value_name = "N", requires = "http")]
    pub http_max_connections: Option<usize>,
    /// How much the tools' output schema spells out: `compact` (an object whose description names the fields; cheap for clients that check the schema on every call, like the Python SDK 1.x) or `full` (every field with its type)
    #[arg(long, value_enum, default_value_t = tools::OutputSchema::Compact)]
    pub output_schema: tools::OutputSchema,
}

const AFTER_HELP: &str = "\
Examples:
  bashtool mcp
  bashtool mcp --cwd ~/project --default-timeout 60
  bashtool mcp --stateless --no-policy --log-level debug
  bashtool mcp --http 127.0.0.1:8080            (MCP over HTTP at /mcp; token on stderr)
  claude mcp add bashtool -- bashtool mcp

Claude Desktop (claude_desktop_config.json), Cursor (.cursor/mcp.json):
  {\"mcpServers\": {\"bashtool\": {\"command\": \"bashtool\", \"args\": [\"mcp\"]}}}

Codex (~/.codex/config.toml):
  [mcp_servers.bashtool]
  command = \"bashtool\"
  args = [\"mcp\"]

Config file (TOML; every key optional):
  cwd = \"/home/me/project\"      stateless = false      keep_jobs = false
  remote = \"ssh devbox bashtool serve\"   (commands run over there; see --remote)
  log_level = \"info\"            progress_interval_ms = 250      shell = \"bash\"
  non_interactive = true        (pagers off, prompts fail, editors refuse)
  [tool]      name = \"bash\"   shell_telemetry = true   max_command_bytes = 262144
              fields = { commands = true, mode = true, background = true, timeout = true,
                         working_directory = true, environment = true }
  [timeouts]  default = 30   slow = 900   max = 1800   kill_grace = 2
  [output]    budget_tokens = 2000   max_line_chars = 800   head_percent = 30
              shortening = \"error-aware\" | \"plain\"   error_patterns = [\"FAILED\"]
  [policy]    enabled = true   git_add = true   git_push_force = true   rm_critical = true
              deny_patterns = [\"terraform destroy\"]
  [logs]      dir = \"/tmp/bashtool\"   max_files = 200   max_bytes = 104857600
  [env]       CARGO_TERM_COLOR = \"never\"
  [environment]  exclude = [\"AWS_*\"]   keep = [\"GITHUB_TOKEN\"]   include_only = []
                 ignore_default_excludes = false   set = { CI = \"1\" }
  [sandbox]   mode = \"workspace-write\" | \"read-only\" | \"off\"   writable = [\"/dir\"]   network = \"on\" | \"off\"
The config file applies to run, call and check too (all but cwd, stateless,
keep_jobs, log_level and progress_interval_ms).";

/// Everything the server runs with, after flags and file are merged.
struct Settings {
    tool: ToolConfig,
    local: LocalConfig,
    stateless: bool,
    /// Where a named session keeps its state between servers.
    session_path: Option<PathBuf>,
    keep_jobs: bool,
    progress_interval: Duration,
    log_filter: String,
    /// `--remote` / `remote = "..."`: the commands run over there.
    remote: Option<String>,
    /// `--session NAME`: with `--remote`, a session over there.
    session_name: Option<String>,
    /// `--http`: where to serve MCP over HTTP instead of stdio.
    http: Option<std::net::SocketAddr>,
    token_file: Option<PathBuf>,
    http_limits: http::Limits,
    output_schema: tools::OutputSchema,
}

fn settings(args: &McpArgs, file: &FileConfig) -> anyhow::Result<Settings> {
    let current = std::env::current_dir().context("reading the current directory")?;
    let cwd = match (&args.tool.cwd, &file.cwd) {
        (Some(flag), _) => current.join(flag),
        (None, Some(configured)) => current.join(configured),
        (None, None) => current,
    };
    // With --remote, --cwd names a directory over there.
    let remote = args.remote.remote.clone().or_else(|| file.remote.clone());
    anyhow::ensure!(
        remote.is_some() || cwd.is_dir(),
        "the working directory {} is not an existing directory",
        cwd.display()
    );

    let mut tool = ToolConfig::default();
    file.apply_to_tool(&mut tool)?;
    tool.working_directory = if remote.is_some() {
        args.tool.cwd.clone().or_else(|| file.cwd.clone())
    } else {
        Some(cwd.clone())
    };
    if args.tool.no_policy {
        tool.policy.enabled = false;
    }
    tool.policy.deny_patterns.extend(args.deny.iter().cloned());
    if let Some(tokens) = args.tool.budget_tokens {
        anyhow::ensure!(tokens > 0, "--budget-tokens must be at least 1");
        tool.output.max_output_tokens = tokens;
    }
    if args.tool.plain_shortening {
        tool.output.shortening = Shortening::Plain;
    }
    if let Some(value) = args.default_timeout {
        tool.default_timeout = seconds("--default-timeout", value as f64, 86_400.0)?;
    }
    if let Some(value) = args.slow_timeout {
        tool.slow_timeout = seconds("--slow-timeout", value as f64, 86_400.0)?;
    }
    if let Some(value) = args.max_timeout {
        anyhow::ensure!(value >= 1, "--max-timeout must be at least 1 second");
        tool.max_timeout_secs = value;
    }
    let stateless = args.stateless || file.stateless.unwrap_or(false);
    anyhow::ensure!(
        !(stateless && args.tool.session.is_some()),
        "--session and --stateless exclude each other: a named session is a persistent one"
    );
    let session_path = args
        .tool
        .session
        .as_deref()
        .filter(|_| remote.is_none())
        .map(crate::session::snapshot_path)
        .transpose()?;
    // The description tells the model whether state carries over.
    tool.persistent_session = !stateless;

    // These configure local processes only: with --remote they would be
    // silently ignored, so they are refused.
    anyhow::ensure!(
        remote.is_none() || (args.env.is_empty() && file.env.is_empty() && args.log_dir.is_none()),
        "--env, [env] and --log-dir configure local commands; with --remote, set them where `bashtool serve` runs (e.g. 'ssh devbox env K=V bashtool serve')"
    );
    let http = args.http.as_deref().map(http::parse_address).transpose()?;
    let http_limits =
        http::Limits::from_flags(args.http_header_timeout, args.http_max_connections)?;
    anyhow::ensure!(
        http.is_none() || remote.is_none(),
        "--http with --remote is not supported: each HTTP session would need its own connection; \
         run `bashtool mcp --http` where the commands should run instead"
    );
    anyhow::ensure!(
        http.is_none() || args.tool.session.is_none(),
        "--http with --session is not supported: --session names one shell, and over HTTP each \
         MCP session gets its own"
    );
    let keep_jobs = args.keep_jobs || file.keep_jobs.unwrap_or(false);
    let mut local = LocalConfig {
        working_directory: cwd,
        keep_jobs_on_drop: keep_jobs,
        job_records: Some(bashtool_env_local::default_state_dir()?),
        // A long-lived server: the next call's fresh shell is started while
        // the client reads this one's answer.
        warm_shells: usize::from(stateless),
        ..LocalConfig::default()
    };
    file.apply_to_local(&mut local)?;
    if let Some(grace) = args.tool.kill_grace {
        local.kill_grace = seconds("--kill-grace", grace, 600.0)?;
    }
    args.tool.apply_env_flags(&mut local, &mut tool);
    args.tool.sandbox.apply(&mut local.sandbox)?;
    for pair in &args.env {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("--env {pair}: expected KEY=VALUE"))?;
        anyhow::ensure!(
            bashtool_core::is_valid_variable_name(key),
            "--env {pair}: {key:?} is not a valid variable name"
        );
        local.env.insert(key.to_owned(), value.to_owned());
    }
    if let Some(directory) = &args.log_dir {
        local.log_dir = Some(current_dir_join(directory)?);
    }
    if let Some(directory) = &local.log_dir {
        std::fs::create_dir_all(directory)
            .with_context(|| format!("creating the log directory {}", directory.display()))?;
    }

    let progress_interval = args
        .progress_interval_ms
        .or(file.progress_interval_ms)
        .map_or(PROGRESS_INTERVAL, Duration::from_millis)
        .max(Duration::from_millis(10));
    let log_filter = logging::filter(args.log_level.as_deref(), file.log_level.as_deref());
    Ok(Settings {
        tool,
        local,
        stateless,
        session_path,
        keep_jobs,
        progress_interval,
        log_filter,
        remote,
        session_name: args.tool.session.clone(),
        http,
        token_file: args.token_file.clone(),
        http_limits,
        output_schema: args.output_schema,
    })
}

fn current_dir_join(path: &std::path::Path) -> anyhow::Result<PathBuf> {
    Ok(std::env::current_dir()
        .context("reading the current directory")?
        .join(path))
}

pub fn run(args: &McpArgs) -> anyhow::Result<ExitCode> {
    let (file, path) = FileConfig::load(args.tool.config.as_deref())?;
    let settings = settings(args, &file)?;
    logging::to_stderr(logging::parse(&settings.log_filter)?)?;
    if let Some(path) = &path {
        tracing::info!(path = %path.display(), "config file loaded");
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let outcome = match settings.http {
        Some(address) => {
            let token_file = settings.token_file.clone();
            let limits = settings.http_limits;
            runtime.block_on(http::serve(settings, address, token_file, limits))
        }
        None => runtime.block_on(serve(settings)),
    };
    // tokio reads stdin on a blocking thread that cannot be interrupted; do
    // not wait for it once the server is done.
    runtime.shutdown_background();
    outcome
}

/// A server killed with SIGKILL could not stop its commands: what they
/// left is stopped now, and from here on everything started is tied to this
/// process's life (jobs kept with --keep-jobs excepted).
fn tie_to_this_process(settings: &mut Settings) {
    let reaped = bashtool_env_local::reap_orphans();
    if reaped != bashtool_env_local::Reaped::default() {
        tracing::info!(?reaped, "stopped what servers that died had left");
    }
    settings
        .local
        .wrappers
        .push(Arc::new(bashtool_env_local::StopWithOwner::new()));
}

/// The backend of one MCP connection (stdio) or session (HTTP) with local
/// commands, and its persistent shell unless stateless.
struct LocalBackend {
    backend: Backend,
    session: Option<Session>,
}

fn local_backend(settings: &Settings) -> anyhow::Result<LocalBackend> {
    if settings.stateless {
        let exec = LocalExec::new(settings.local.clone());
        return Ok(LocalBackend {
            backend: backend(settings, Arc::new(exec.clone()), Arc::new(exec), None),
            session: None,
        });
    }
    let config = SessionConfig {
        local: settings.local.clone(),
        snapshot_path: settings.session_path.clone(),
        telemetry: settings.tool.shell_telemetry,
    };
    let session = Session::new(config).context("creating the session")?;
    Ok(LocalBackend {
        backend: backend(
            settings,
            Arc::new(session.clone()),
            Arc::new(session.clone()),
            // Calls into the session must reach it in the order they arrived.
            Some(ArrivalOrder::default()),
        ),
        session: Some(session),
    })
}

/// The tools over `exec` and `jobs`, as an MCP server offers them.
fn backend(
    settings: &Settings,
    exec: Arc<dyn CommandExec>,
    jobs: Arc<dyn Jobs>,
    order: Option<ArrivalOrder>,
) -> Backend {
    let mut tool_config = settings.tool.clone();
    tool_config.jobs_tool = true;
    // Interactive jobs live in this server, which holds their terminals.
    tool_config.fields.interactive = true;
    Backend {
        instructions: instructions::instructions(
            &exec.environment(),
            tool_config.persistent_session,
            tool_config.fields.interactive,
        ),
        tool: BashTool::new(tool_config.clone(), exec),
        order,
        jobs: Some(JobsTool::new(tool_config, jobs)),
        output_schema: settings.output_schema,
    }
}

async fn serve(mut settings: Settings) -> anyhow::Result<ExitCode> {
    let grace = settings.local.kill_grace + SHUTDOWN_MARGIN;
    tie_to_this_process(&mut settings);
    let mut remote_exec = None;
    let (backend, session) = if let Some(line) = &settings.remote {
        let remote = remote_environment(line, &settings).await?;
        remote_exec = Some(remote.clone());
        let exec: Arc<dyn CommandExec> = Arc::new(remote.clone());
        let order = (!settings.stateless).then(ArrivalOrder::default);
        (backend(&settings, exec, Arc::new(remote), order), None)
    } else {
        let local = local_backend(&settings)?;
        (local.backend, local.session)
    };
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
    server.shut_down(grace, settings.keep_jobs).await;
    if let Some(remote) = remote_exec {
        remote.shutdown(grace).await;
    }
    if let Some(session) = session
        && let Err(error) = session.shutdown().await
    {
        tracing::warn!(%error, "the session's state was not saved");
    }
    Ok(ExitCode::SUCCESS)
}

/// `--remote`: the MCP server runs here, the commands (and the session)
/// over there. Connects at once, so that a wrong line fails at start with
/// the transport's message.
async fn remote_environment(
    line: &str,
    settings: &Settings,
) -> anyhow::Result<bashtool_env_remote::RemoteExec> {
    let session = (!settings.stateless).then(|| bashtool_env_remote::SessionRequest {
        name: settings.session_name.clone(),
    });
    let config = bashtool_env_remote::RemoteConfig {
        session,
        keep_jobs: settings.keep_jobs,
        remote_kill_grace: settings.local.kill_grace,
        working_directory: settings.tool.working_directory.clone(),
        ..bashtool_env_remote::RemoteConfig::default()
    };
    let remote = bashtool_env_remote::RemoteExec::command(line, config);
    remote.connect().await?;
    Ok(remote)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        mcp: McpArgs,
    }

    fn settings_for(flags: &[&str], file: &str) -> Settings {
        let args = Command::parse_from(std::iter::once("mcp").chain(flags.iter().copied())).mcp;
        settings(&args, &FileConfig::parse(file).expect("valid file")).expect("valid settings")
    }

    #[test]
    fn flags_win_over_the_file_which_wins_over_the_defaults() {
        let file = "keep_jobs = true\n[timeouts]\ndefault = 5\nslow = 60\n[policy]\ndeny_patterns = [\"a\"]\n";
        let settings = settings_for(
            &["--default-timeout", "9", "--deny", "b", "--env", "X=1"],
            file,
        );
        assert_eq!(settings.tool.default_timeout, Duration::from_secs(9));
        assert_eq!(settings.tool.slow_timeout, Duration::from_secs(60));
        assert_eq!(settings.tool.max_timeout_secs, 1800);
        assert_eq!(settings.tool.policy.deny_patterns, ["a", "b"]);
        assert!(settings.keep_jobs);
        assert!(settings.local.keep_jobs_on_drop);
        assert_eq!(settings.local.env["X"], "1");
        assert!(settings.tool.policy.enabled);
        assert!(!settings_for(&["--no-policy"], "").tool.policy.enabled);
    }

    #[test]
    fn bad_flags_are_refused_with_the_flag_named() {
        let args = Command::parse_from(["mcp", "--env", "NOEQUALS"]).mcp;
        let error = settings(&args, &FileConfig::default())
            .err()
            .expect("refused");
        assert!(error.to_string().contains("--env NOEQUALS"), "{error}");
    }
}
