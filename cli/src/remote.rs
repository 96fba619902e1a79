//! `--remote 'COMMAND LINE'`: run the commands in a remote environment. The
//! line runs with `sh -c` here and must start `bashtool serve` there (`ssh
//! devbox bashtool serve`, `docker exec -i box bashtool serve`, `kubectl exec
//! -i pod -- bashtool serve`); the tool, its policy and the shortening stay
//! here, the processes, their logs and their sessions live there.

use std::time::Duration;

use bashtool_core::ToolConfig;
use bashtool_env_remote::{JobsSource, RemoteConfig, RemoteExec, SessionRequest};
use clap::Args;

use crate::config::seconds;
use crate::options::ToolArgs;
use crate::session::Exec;

/// How long closing a connection may take beyond the kill grace: the server
/// stops what it started and saves a named session before it exits.
pub const CLOSE_MARGIN: Duration = Duration::from_secs(3);

/// The `--remote` flag.
#[derive(Debug, Clone, Default, Args)]
pub struct RemoteArgs {
    /// Run commands in a remote environment: COMMAND LINE runs with `sh -c` here and must start `bashtool serve` there, e.g. 'ssh devbox bashtool serve' or 'docker exec -i box bashtool serve' (--cwd and --session then name a directory and a session over there)
    #[arg(long, value_name = "COMMAND LINE")]
    pub remote: Option<String>,
}

/// The tool's configuration for a remote environment: `--cwd` names a
/// directory over there, so it is not checked here.
pub fn tool_config(args: &ToolArgs) -> anyhow::Result<ToolConfig> {
    let here = ToolArgs {
        cwd: None,
        ..args.clone()
    };
    let file = here.file()?;
    let mut config = here.tool_config(&file)?;
    config.working_directory.clone_from(&args.cwd);
    config.persistent_session = args.session.is_some();
    Ok(config)
}

/// The connection settings from the shared flags.
pub fn remote_config(
    args: &ToolArgs,
    session: Option<SessionRequest>,
) -> anyhow::Result<RemoteConfig> {
    let mut config = RemoteConfig {
        session,
        working_directory: args.cwd.clone(),
        ..RemoteConfig::default()
    };
    if let Some(grace) = args.kill_grace {
        config.remote_kill_grace = seconds("--kill-grace", grace, 600.0)?;
    }
    Ok(config)
}

/// The environment of `run` and `call`: remote with `--remote`, else local.
pub fn cli_exec(tool: &ToolArgs, remote: &RemoteArgs) -> anyhow::Result<(ToolConfig, Exec)> {
    let Some(line) = &remote.remote else {
        let file = tool.file()?;
        let mut config = tool.tool_config(&file)?;
        let local = tool.local_config(&mut config, &file)?;
        let exec = Exec::new(tool.session.as_deref(), &mut config, local)?;
        return Ok((config, exec));
    };
    let config = tool_config(tool)?;
    let session = tool
        .session
        .clone()
        .map(|name| SessionRequest { name: Some(name) });
    let mut remote_config = remote_config(tool, session)?;
    // As locally: a background job outlives this process, and `bashtool
    // jobs --remote` finds it in the records over there.
    remote_config.keep_jobs = true;
    Ok((
        config,
        Exec::Remote(RemoteExec::command(line, remote_config)),
    ))
}

/// The jobs of every bashtool process of the server's user, for `bashtool jobs --remote`.
pub fn recorded_jobs(line: &str) -> RemoteExec {
    let config = RemoteConfig {
        jobs: JobsSource::Recorded,
        keep_jobs: true,
        ..RemoteConfig::default()
    };
    RemoteExec::command(line, config)
}
