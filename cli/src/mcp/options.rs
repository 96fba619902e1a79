//! `bashtool mcp`'s flags and help, and their merge with the config file
//! and the defaults into the [`Settings`] the server runs with. The flags
//! it shares with `run` and `call` are merged by [`ToolArgs`]; this file
//! adds the server's own.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

#[cfg(target_os = "linux")]
use anyhow::Context as _;
use bashtool_core::ToolConfig;
use clap::Args;

use super::http::Limits;
use super::tools::OutputSchema;
use crate::config::{FileConfig, seconds};
use crate::environment::ServerEnvironment;
use crate::logging;
use crate::options::{RemoteArgs, ToolArgs};
use crate::remote::Remote;

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
    pub remote: RemoteArgs,
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
    #[arg(long, value_enum, default_value_t = OutputSchema::Compact)]
    pub output_schema: OutputSchema,
    #[command(flatten)]
    pub approvals: crate::approvals::ApprovalArgs,
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
              allowed_domains = [\"registries\", \"*.example.com\"]   (the network only to these, via a proxy)
  [limits]    pids = 4096   memory = \"2G\"   cpu = 1.5   (each may be \"off\"; per command, see --limit)
  [redact]    mode = \"on\" | \"off\"   env = [\"DATABASE_URL\"]
The config file applies to run, call and check too (all but cwd, stateless,
keep_jobs, log_level and progress_interval_ms).";

/// Everything the server runs with, after flags and file are merged.
pub struct Settings {
    pub tool: ToolConfig,
    /// Where the commands run.
    pub environment: ServerEnvironment,
    pub progress_interval: Duration,
    pub log_filter: String,
    /// `--http`: serve MCP over HTTP instead of stdio.
    pub http: Option<HttpSettings>,
    pub output_schema: OutputSchema,
    /// `--approvals`, `--approval-timeout`.
    pub approvals: crate::approvals::ApprovalSettings,
}

/// `--http` and the flags that go with it.
pub struct HttpSettings {
    pub address: SocketAddr,
    pub token_file: Option<PathBuf>,
    pub limits: Limits,
}

impl Settings {
    /// Flags over the file over the defaults.
    pub fn new(args: &McpArgs, file: &FileConfig) -> anyhow::Result<Self> {
        let cwd = args.tool.requested_directory(file.cwd.as_deref())?;
        // With --remote, --cwd names a directory over there.
        let remote =
            Remote::from_flags(&args.remote, args.tool.serve_args(), file.remote.as_ref())?;
        #[cfg(not(target_os = "linux"))]
        anyhow::ensure!(remote.is_some(), crate::relay::needs_remote());
        anyhow::ensure!(
            remote.is_some() || cwd.is_dir(),
            "the working directory {} is not an existing directory",
            cwd.display()
        );
        let told_cwd = if remote.is_some() {
            args.tool.cwd.clone().or_else(|| file.cwd.clone())
        } else {
            Some(cwd.clone())
        };
        let mut tool = args.tool.tool_config(file, told_cwd)?;
        tool.policy.deny_patterns.extend(args.deny.iter().cloned());
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
        #[cfg(target_os = "linux")]
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
            remote.is_none()
                || (args.env.is_empty() && file.env.is_empty() && args.log_dir.is_none()),
            "--env, [env] and --log-dir configure local commands; with --remote, set them where `bashtool serve` runs (e.g. 'ssh devbox env K=V bashtool serve')"
        );
        let http = http_settings(args)?;
        anyhow::ensure!(
            http.is_none() || args.tool.session.is_none(),
            "--http with --session is not supported: --session names one shell, and over HTTP each \
             MCP session gets its own"
        );
        let keep_jobs = args.keep_jobs || file.keep_jobs.unwrap_or(false);
        // With a remote the sandbox flags, the allowed domains, the limits
        // and the masking go to the server in `initialize` (for --remote
        // and --remote-shell alike), which applies them over there (their
        // paths are its paths).
        let remote_sandbox = remote.as_ref().and_then(|_| args.tool.remote_sandbox(file));
        let remote_allowed_domains = if remote.is_some() {
            args.tool
                .sandbox
                .remote_allowed_domains(file.sandbox.as_ref())?
        } else {
            Vec::new()
        };
        let redact = args.tool.redact_settings(file)?;
        #[cfg(target_os = "linux")]
        let local = {
            let is_remote = remote.is_some();
            let mut local =
                local_config(args, file, &mut tool, cwd, stateless, keep_jobs, is_remote)?;
            tool.redactor = if is_remote {
                // Masked here with this side's variables, and over there
                // with that side's.
                crate::redact::redactor(&redact, &args.tool.env_policy(file), &local.env)
            } else {
                crate::redact::apply(&redact, &mut local)
            };
            local
        };
        #[cfg(not(target_os = "linux"))]
        {
            tool.redactor = crate::redact::redactor(
                &redact,
                &args.tool.env_policy(file),
                &std::collections::BTreeMap::new(),
            );
        }

        let progress_interval = args
            .progress_interval_ms
            .or(file.progress_interval_ms)
            .map_or(PROGRESS_INTERVAL, Duration::from_millis)
            .max(Duration::from_millis(10));
        Ok(Self {
            tool,
            environment: ServerEnvironment {
                #[cfg(target_os = "linux")]
                local,
                #[cfg(not(target_os = "linux"))]
                kill_grace: relay_kill_grace(args, file)?,
                #[cfg(not(target_os = "linux"))]
                limits: args.tool.limit_settings(file)?,
                remote,
                stateless,
                session_name: args.tool.session.clone(),
                #[cfg(target_os = "linux")]
                session_path,
                keep_jobs,
                remote_sandbox,
                remote_allowed_domains,
                redact,
            },
            progress_interval,
            log_filter: logging::filter(args.log_level.as_deref(), file.log_level.as_deref()),
            http,
            output_schema: args.output_schema,
            approvals: args.approvals.settings()?,
        })
    }

    /// How long running calls get to stop at shutdown.
    pub fn shutdown_grace(&self) -> Duration {
        self.environment.kill_grace() + SHUTDOWN_MARGIN
    }
}

/// The local environment of a server: the shared flags and the file, then
/// the server's own (`--env`, `--log-dir`, jobs kept, warm shells). With a
/// remote, without the sandbox (applied over there) and without checking
/// the limits here (enforced over there).
#[cfg(target_os = "linux")]
fn local_config(
    args: &McpArgs,
    file: &FileConfig,
    tool: &mut ToolConfig,
    cwd: PathBuf,
    stateless: bool,
    keep_jobs: bool,
    remote: bool,
) -> anyhow::Result<bashtool_env_local::LocalConfig> {
    let mut local = if remote {
        args.tool.local_config_unconfined(tool, file, cwd)?
    } else {
        let local = args.tool.local_config(tool, file, cwd)?;
        crate::limits::check_enforceable(&local.limits)?;
        local
    };
    local.keep_jobs_on_drop = keep_jobs;
    // A long-lived server: the next call's fresh shell is started while
    // the client reads this one's answer.
    local.warm_shells = usize::from(stateless);
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
    Ok(local)
}

/// The relay build's kill grace: `--kill-grace`, else the file's, else 2 s.
#[cfg(not(target_os = "linux"))]
fn relay_kill_grace(args: &McpArgs, file: &FileConfig) -> anyhow::Result<Duration> {
    match (args.tool.kill_grace, file.timeouts.kill_grace) {
        (Some(grace), _) => seconds("--kill-grace", grace, 600.0),
        (None, Some(grace)) => seconds("timeouts.kill_grace", grace, 600.0),
        (None, None) => Ok(bashtool_env_remote::DEFAULT_REMOTE_KILL_GRACE),
    }
}

/// `--http`, `--token-file` and the connection limits; `None` for stdio.
/// The limits are checked even without `--http`.
fn http_settings(args: &McpArgs) -> anyhow::Result<Option<HttpSettings>> {
    let address = args.http.as_deref().map(parse_address).transpose()?;
    let limits = Limits::from_flags(args.http_header_timeout, args.http_max_connections)?;
    Ok(address.map(|address| HttpSettings {
        address,
        token_file: args.token_file.clone(),
        limits,
    }))
}

/// `--http`'s value: `ADDR:PORT`, `[IPv6]:PORT`, `localhost:PORT`, or a bare
/// `PORT` (loopback).
fn parse_address(value: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(port) = value.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some(port) = value.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    value.parse().map_err(|_| {
        anyhow::anyhow!(
            "--http {value}: expected ADDR:PORT, such as 127.0.0.1:8080, [::1]:8080, \
             localhost:8080 or 8080 (loopback), or 0.0.0.0:8080 for every interface"
        )
    })
}

#[cfg(target_os = "linux")]
fn current_dir_join(path: &std::path::Path) -> anyhow::Result<PathBuf> {
    Ok(std::env::current_dir()
        .context("reading the current directory")?
        .join(path))
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
        Settings::new(&args, &FileConfig::parse(file).expect("valid file")).expect("valid settings")
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
        assert!(settings.environment.keep_jobs);
        assert!(settings.environment.local.keep_jobs_on_drop);
        assert_eq!(settings.environment.local.env["X"], "1");
        assert!(settings.tool.policy.enabled);
        assert!(!settings_for(&["--no-policy"], "").tool.policy.enabled);
    }

    #[test]
    fn bad_flags_are_refused_with_the_flag_named() {
        let args = Command::parse_from(["mcp", "--env", "NOEQUALS"]).mcp;
        let error = Settings::new(&args, &FileConfig::default())
            .err()
            .expect("refused");
        assert!(error.to_string().contains("--env NOEQUALS"), "{error}");
    }

    #[test]
    fn parses_addresses_loopback_by_default() {
        assert_eq!(
            parse_address("8080").expect("port"),
            "127.0.0.1:8080".parse::<SocketAddr>().expect("address")
        );
        assert_eq!(
            parse_address("localhost:9").expect("localhost"),
            "127.0.0.1:9".parse::<SocketAddr>().expect("address")
        );
        assert_eq!(
            parse_address("[::1]:80").expect("v6"),
            "[::1]:80".parse::<SocketAddr>().expect("address")
        );
        let error = parse_address("devbox:80").expect_err("refused").to_string();
        assert!(
            error.starts_with("--http devbox:80: expected ADDR:PORT"),
            "{error}"
        );
    }
}
