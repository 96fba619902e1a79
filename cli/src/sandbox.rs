//! The sandbox flags shared by `run`, `call` and `mcp`, and `bashtool
//! sandbox`: what this machine can enforce and the effective profile. The
//! relay build (not Linux) has the flags only, sent with `[sandbox]` to the
//! `serve` over there in `initialize` (`--remote` or `--remote-shell`).

use std::path::PathBuf;
#[cfg(target_os = "linux")]
use std::process::ExitCode;

#[cfg(target_os = "linux")]
use anyhow::Context as _;
use bashtool_sandbox::{NetworkMode, SandboxConfig, SandboxMode};
use clap::Args;

/// `--sandbox`, `--writable`, `--network`, `--allow-domain`.
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
    /// Commands reach only this domain and the others given (repeatable), through a proxy bashtool runs outside the sandbox: example.com, *.example.com (its subdomains), an IP address, or `registries` (cargo, pip, npm and apt)
    #[arg(long = "allow-domain", value_name = "DOMAIN", value_parser = parse_domain)]
    pub allow_domain: Vec<String>,
}

fn parse_mode(text: &str) -> Result<SandboxMode, String> {
    parse_flag(text)
}

fn parse_network(text: &str) -> Result<NetworkMode, String> {
    parse_flag(text)
}

/// A flag's value, with the sandbox crate's error as text.
fn parse_flag<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|error: T::Err| error.to_string())
}

/// One `--allow-domain`, normalized; clap names the flag in the error.
fn parse_domain(text: &str) -> Result<String, String> {
    bashtool_sandbox::normalize_domain(text).map_err(|error| match error {
        bashtool_sandbox::Error::Setting { message, .. } => message,
        other => other.to_string(),
    })
}

impl SandboxArgs {
    /// What to ask a remote `bashtool serve` for (`--remote`): the config
    /// file's `[sandbox]`, then these flags, as given: the paths name
    /// directories over there, where they are checked. `None` when neither
    /// says anything, so the server's own settings hold.
    pub fn remote_request(
        &self,
        file: Option<&SandboxConfig>,
    ) -> Option<bashtool_env_remote::SandboxRequest> {
        let mut request = bashtool_env_remote::SandboxRequest::default();
        if let Some(file) = file {
            request.mode = Some(file.mode.name().to_owned());
            request.network = Some(file.network.name().to_owned());
            request.writable.clone_from(&file.writable);
            request.protected.clone_from(&file.protected);
        }
        if let Some(mode) = self.sandbox {
            request.mode = Some(mode.name().to_owned());
        }
        if let Some(network) = self.network {
            request.network = Some(network.name().to_owned());
        }
        request.writable.extend(self.writable.iter().cloned());
        (!request.is_empty()).then_some(request)
    }

    /// Applies the flags over `config` (the defaults or the config file's).
    #[cfg(target_os = "linux")]
    pub fn apply(&self, config: &mut SandboxConfig) -> anyhow::Result<()> {
        if let Some(mode) = self.sandbox {
            config.mode = mode;
            // No sandbox, no proxy: the file's domains go with it (given
            // as flags too, they are an error).
            if mode == SandboxMode::Off && self.allow_domain.is_empty() {
                config.allowed_domains.clear();
            }
        }
        self.apply_network(config)?;
        let current = std::env::current_dir().context("reading the current directory")?;
        config.writable.extend(
            self.writable
                .iter()
                .map(|directory| current.join(directory)),
        );
        config.validate()?;
        Ok(())
    }

    /// `--network` and `--allow-domain` over the file's network: a flag
    /// wins over the file (`--network` drops its allowed domains,
    /// `--allow-domain` adds to them and turns a file's `network = "off"`
    /// into the allow-list); both flags at once contradict each other.
    fn apply_network(&self, config: &mut SandboxConfig) -> anyhow::Result<()> {
        if let Some(network) = self.network {
            anyhow::ensure!(
                self.allow_domain.is_empty(),
                "--network {network} and --allow-domain exclude each other: --allow-domain already \
                 limits the network to the domains it names (--network on is unrestricted, \
                 --network off reaches nothing); give one of them"
            );
            config.network = network;
            config.allowed_domains.clear();
        }
        if !self.allow_domain.is_empty() {
            config.network = NetworkMode::On;
            for domain in &self.allow_domain {
                if !config.allowed_domains.contains(domain) {
                    config.allowed_domains.push(domain.clone());
                }
            }
        }
        Ok(())
    }

    /// The allowed domains to ask a remote `bashtool serve` for: the
    /// file's `[sandbox] allowed_domains` and the flags, checked here (the
    /// rest of the sandbox is the server's). Empty: the server decides.
    pub fn remote_allowed_domains(
        &self,
        file: Option<&SandboxConfig>,
    ) -> anyhow::Result<Vec<String>> {
        let mut config = SandboxConfig {
            allowed_domains: file
                .map(|file| file.allowed_domains.clone())
                .unwrap_or_default(),
            network: file.map_or(NetworkMode::On, |file| file.network),
            ..SandboxConfig::default()
        };
        self.apply_network(&mut config)?;
        if config.allowed_domains.is_empty() {
            return Ok(Vec::new());
        }
        anyhow::ensure!(
            config.network == NetworkMode::On,
            "[sandbox] network = \"off\" and allowed_domains exclude each other: off reaches nothing"
        );
        bashtool_sandbox::AllowList::parse(&config.allowed_domains)?;
        Ok(config.allowed_domains)
    }
}

/// The server's own sandbox settings `config` with what a client asked for
/// in `initialize` (`bashtool serve`): each setting given replaces the
/// server's, writable and protected paths add to its lists (relative
/// writable ones taken from `working_directory`), and the result is
/// checked here, where the paths are.
#[cfg(target_os = "linux")]
pub fn with_request(
    config: &SandboxConfig,
    request: &bashtool_env_remote::SandboxRequest,
    working_directory: &std::path::Path,
) -> anyhow::Result<SandboxConfig> {
    let mut config = config.clone();
    if let Some(mode) = &request.mode {
        config.mode = parse_mode(mode).map_err(|error| anyhow::anyhow!("the client's {error}"))?;
    }
    if let Some(network) = &request.network {
        config.network =
            parse_network(network).map_err(|error| anyhow::anyhow!("the client's {error}"))?;
    }
    config.writable.extend(
        request
            .writable
            .iter()
            .map(|directory| working_directory.join(directory)),
    );
    config.protected.extend(request.protected.iter().cloned());
    config
        .validate()
        .map_err(|error| anyhow::anyhow!("the client's {error} (on the server's side)"))?;
    Ok(config)
}

/// Show what sandbox this machine can enforce and the effective profile
///
/// Prints the kernel features the sandbox uses (Landlock ABI, seccomp, user
/// and network namespaces, the domain proxy, bubblewrap) and the cgroups
/// it mounts (version, controllers), then the profile the same flags would
/// give `run`, `call` or `mcp`: writable roots, protected paths, network
/// (and the allowed domains and their proxy), and the limits per command
/// with what enforces them. Exit status 1 when that profile cannot be
/// enforced here.
#[cfg(target_os = "linux")]
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  bashtool sandbox\n  bashtool sandbox --network off --writable ~/.cache/foo\n  bashtool sandbox --allow-domain registries --allow-domain github.com\n  bashtool sandbox --cwd ~/project --sandbox read-only\n  bashtool sandbox --limit memory=2G,pids=512"
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

#[cfg(target_os = "linux")]
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
#[cfg(target_os = "linux")]
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
