//! The sandbox flags shared by `run`, `call` and `mcp`, and `bashtool
//! sandbox`: what this machine can enforce and the effective profile.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use bashtool_sandbox::{NetworkMode, SandboxConfig, SandboxMode};
use clap::Args;

/// `--sandbox`, `--writable`, `--network`.
#[derive(Debug, Clone, Default, Args)]
pub struct SandboxArgs {
    /// OS sandbox: off, read-only or workspace-write (writes only to the working directory, temp and --writable dirs) [default: workspace-write]
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    pub sandbox: Option<SandboxMode>,
    /// Another directory commands may write to under workspace-write (repeatable)
    #[arg(long = "writable", value_name = "DIR")]
    pub writable: Vec<PathBuf>,
    /// on, or off: nothing outside the sandbox is reachable, only its own loopback [default: on]
    #[arg(long, value_name = "on|off", value_parser = parse_network)]
    pub network: Option<NetworkMode>,
}

fn parse_mode(text: &str) -> Result<SandboxMode, String> {
    text.parse()
        .map_err(|error: bashtool_sandbox::Error| error.to_string())
}

fn parse_network(text: &str) -> Result<NetworkMode, String> {
    text.parse()
        .map_err(|error: bashtool_sandbox::Error| error.to_string())
}

impl SandboxArgs {
    /// Applies the flags over `config` (the defaults or the config file's).
    pub fn apply(&self, config: &mut SandboxConfig) -> anyhow::Result<()> {
        if let Some(mode) = self.sandbox {
            config.mode = mode;
        }
        if let Some(network) = self.network {
            config.network = network;
        }
        let current = std::env::current_dir().context("reading the current directory")?;
        config.writable.extend(
            self.writable
                .iter()
                .map(|directory| current.join(directory)),
        );
        config.validate()?;
        Ok(())
    }
}

/// Show what sandbox this machine can enforce and the effective profile
///
/// Prints the kernel features the sandbox uses (Landlock ABI, seccomp, user
/// and network namespaces, bubblewrap) and the cgroups it mounts (version,
/// controllers), then the profile the same flags would give `run`, `call`
/// or `mcp`: writable roots, protected paths, network, and the limits per
/// command with what enforces them. Exit status 1 when that profile cannot
/// be enforced here.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  bashtool sandbox\n  bashtool sandbox --network off --writable ~/.cache/foo\n  bashtool sandbox --cwd ~/project --sandbox read-only\n  bashtool sandbox --limit memory=2G,pids=512"
)]
pub struct SandboxCommandArgs {
    /// The workspace [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    #[command(flatten)]
    pub limits: crate::limits::LimitArgs,
}

pub fn run(args: &SandboxCommandArgs) -> anyhow::Result<ExitCode> {
    let current = std::env::current_dir().context("reading the current directory")?;
    let workspace = args
        .cwd
        .as_ref()
        .map_or_else(|| current.clone(), |directory| current.join(directory));
    let mut config = SandboxConfig::default();
    args.sandbox.apply(&mut config)?;
    let limits = args.limits.over(None)?;
    println!("This machine:");
    for line in bashtool_sandbox::probe().to_string().lines() {
        println!("  {line}");
    }
    for line in bashtool_process::CgroupHost::probe().to_string().lines() {
        println!("  {line}");
    }
    println!();
    println!("Effective profile:");
    let limits_enforced = print_limits(&limits);
    let done = if limits_enforced {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    if config.mode == SandboxMode::Off {
        println!("  mode: off (commands run with your full rights)");
        return Ok(done);
    }
    // The profile a server started here would have: its state directory
    // hidden, the logs shown.
    let local = bashtool_env_local::LocalConfig {
        working_directory: workspace,
        confinement: config.confinement(),
        job_records: bashtool_env_local::default_state_dir().ok(),
        ..bashtool_env_local::LocalConfig::default()
    };
    match bashtool_env_local::describe_sandbox(&local) {
        Ok(Some(description)) => {
            for line in description.lines() {
                println!("  {line}");
            }
            Ok(done)
        }
        Ok(None) => {
            println!("  mode: off (commands run with your full rights)");
            Ok(done)
        }
        Err(error) => {
            println!("  cannot be enforced: {error}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Prints the limits per command `settings` give here, and what enforces
/// them; false when limits asked for cannot be enforced.
fn print_limits(settings: &bashtool_core::LimitSettings) -> bool {
    let info = match bashtool_env_local::limits_info(settings) {
        Ok(info) => info,
        Err(error) => {
            println!("  limits: cannot be enforced: {error}");
            return false;
        }
    };
    let pids = match info.pids {
        Some(pids) if info.pids_is_default => format!("{pids} (the default)"),
        Some(pids) => pids.to_string(),
        None => "off".to_owned(),
    };
    let memory = info
        .memory
        .map_or_else(|| "off".to_owned(), bashtool_core::format_size);
    let cpu = info
        .cpu
        .map_or_else(|| "off".to_owned(), |cpu| format!("{cpu} CPUs"));
    println!("  limits per command: pids {pids}, memory {memory}, cpu {cpu}");
    if let Some(by) = &info.enforced_by {
        println!("  enforced by: {by} (a cgroup per command; per session for a session's calls)");
    }
    if let Some(reason) = &info.not_in_force {
        println!("  not in force: {reason}");
    }
    true
}
