//! The sandbox flags shared by `run`, `call` and `mcp`, and `bashtool
//! sandbox`: what this machine can enforce and the effective profile. The
//! relay build (not Linux) has the flags only, to hand on to a `serve`
//! started with `--remote-shell`.

use std::path::PathBuf;
#[cfg(target_os = "linux")]
use std::process::ExitCode;

#[cfg(target_os = "linux")]
use anyhow::Context as _;
#[cfg(target_os = "linux")]
use bashtool_sandbox::{NetworkMode, SandboxConfig, SandboxMode};
use clap::Args;

#[cfg(not(target_os = "linux"))]
use crate::relay::{NetworkMode, SandboxMode};

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
    parse_flag(text)
}

fn parse_network(text: &str) -> Result<NetworkMode, String> {
    parse_flag(text)
}

/// A flag's value, with its error as text (the sandbox crate's error type
/// on Linux, the relay build's `String` elsewhere).
fn parse_flag<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|error: T::Err| error.to_string())
}

impl SandboxArgs {
    /// The same flags, for a `bashtool serve` started elsewhere.
    pub fn serve_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(mode) = self.sandbox {
            args.extend(["--sandbox".to_owned(), mode.to_string()]);
        }
        for directory in &self.writable {
            args.extend(["--writable".to_owned(), directory.display().to_string()]);
        }
        if let Some(network) = self.network {
            args.extend(["--network".to_owned(), network.to_string()]);
        }
        args
    }

    /// Applies the flags over `config` (the defaults or the config file's).
    #[cfg(target_os = "linux")]
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
/// and network namespaces, bubblewrap), then the profile the same flags
/// would give `run`, `call` or `mcp`: writable roots, protected paths,
/// network. Exit status 1 when that profile cannot be enforced here.
#[cfg(target_os = "linux")]
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  bashtool sandbox\n  bashtool sandbox --network off --writable ~/.cache/foo\n  bashtool sandbox --cwd ~/project --sandbox read-only"
)]
pub struct SandboxCommandArgs {
    /// The workspace [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

#[cfg(target_os = "linux")]
pub fn run(args: &SandboxCommandArgs) -> anyhow::Result<ExitCode> {
    let current = std::env::current_dir().context("reading the current directory")?;
    let workspace = args
        .cwd
        .as_ref()
        .map_or_else(|| current.clone(), |directory| current.join(directory));
    let mut config = SandboxConfig::default();
    args.sandbox.apply(&mut config)?;
    println!("This machine:");
    for line in bashtool_sandbox::probe().to_string().lines() {
        println!("  {line}");
    }
    println!();
    println!("Effective profile:");
    if config.mode == SandboxMode::Off {
        println!("  mode: off (commands run with your full rights)");
        return Ok(ExitCode::SUCCESS);
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
            Ok(ExitCode::SUCCESS)
        }
        Ok(None) => {
            println!("  mode: off (commands run with your full rights)");
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            println!("  cannot be enforced: {error}");
            Ok(ExitCode::FAILURE)
        }
    }
}
