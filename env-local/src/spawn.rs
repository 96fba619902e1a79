//! Starting a command: `bash -c <command>` as the leader of a new session,
//! stdin `/dev/null`, a non-interactive environment, through
//! `bashtool_process::launch` (the one launch path) with the environment's
//! wrappers.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bashtool_core::ExecError;
use bashtool_process::{ChildIo, Launch, MARKER_VARIABLE, RootProcess, RunMarker, Sink, Wrapper};
use tokio::net::unix::pipe;

use crate::config::{LocalConfig, NON_INTERACTIVE_ENV};

/// Longest command passed as an argument. Linux refuses a single argument
/// over 128 KiB (`MAX_ARG_STRLEN`, E2BIG); longer scripts go through a file.
pub const MAX_INLINE_SCRIPT: usize = 100 * 1024;

/// What to run. Built by the caller from its config and the call.
#[derive(Debug, Clone)]
pub struct SpawnRequest<'a> {
    pub shell: &'a Path,
    pub shell_args: &'a [String],
    pub command: &'a str,
    pub cwd: &'a Path,
    /// Variables in order of increasing precedence (later wins).
    pub env: Vec<&'a BTreeMap<String, String>>,
    pub non_interactive: bool,
    pub marker: &'a RunMarker,
    /// Applied to the launch, in order.
    pub wrappers: &'a [Arc<dyn Wrapper>],
    /// Filters what is inherited from our own environment.
    pub env_policy: &'a bashtool_core::EnvPolicy,
}

impl<'a> SpawnRequest<'a> {
    pub fn from_config(
        config: &'a LocalConfig,
        command: &'a str,
        cwd: &'a Path,
        call_env: &'a BTreeMap<String, String>,
        marker: &'a RunMarker,
    ) -> Self {
        Self {
            shell: &config.shell,
            shell_args: &config.shell_args,
            command,
            cwd,
            env: vec![&config.env_policy.set, &config.env, call_env],
            env_policy: &config.env_policy,
            non_interactive: config.non_interactive,
            marker,
            wrappers: &config.wrappers,
        }
    }
}

/// A started command.
#[derive(Debug)]
pub struct Spawned {
    pub root: RootProcess,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
    /// The script file of a long command; deleted when dropped, so keep it
    /// until the command has ended (bash may read it lazily).
    pub script_file: Option<tempfile::TempPath>,
}

/// Resolves and checks the working directory of a call.
pub fn resolve_cwd(base: &Path, cwd: Option<&Path>) -> Result<PathBuf, ExecError> {
    let path = match cwd {
        Some(cwd) if cwd.is_absolute() => cwd.to_path_buf(),
        Some(cwd) => base.join(cwd),
        None => base.to_path_buf(),
    };
    match std::fs::metadata(&path) {
        Ok(metadata) if metadata.is_dir() => Ok(path),
        Ok(_) => Err(ExecError::NotADirectory { path }),
        Err(_) => Err(ExecError::MissingDirectory { path }),
    }
}

/// The environment of a child: ours as the policy lets through (secrets
/// withheld), then the non-interactive defaults, the configured and
/// per-call variables, and the run marker (later wins); non-interactive,
/// `PATH` starts with the editors' stand-ins.
pub fn child_environment(
    layers: &[&BTreeMap<String, String>],
    policy: &bashtool_core::EnvPolicy,
    non_interactive: bool,
    marker: &RunMarker,
) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = crate::inherited_env::inherited(policy)
        .into_iter()
        .collect();
    if non_interactive {
        for (key, value) in NON_INTERACTIVE_ENV {
            env.insert(OsString::from(key), OsString::from(value));
        }
    }
    for variables in layers {
        for (key, value) in *variables {
            env.insert(OsString::from(key), OsString::from(value));
        }
    }
    env.insert(
        OsString::from(MARKER_VARIABLE),
        OsString::from(marker.value()),
    );
    if non_interactive {
        crate::editor_guards::guard(&mut env);
    }
    env.into_iter().collect()
}

/// The script file of a command too long for one argument.
pub(crate) fn script_file(command: &str) -> std::io::Result<tempfile::TempPath> {
    let mut file = tempfile::Builder::new()
        .prefix("bashtool-script-")
        .suffix(".sh")
        .tempfile()?;
    file.write_all(command.as_bytes())?;
    file.flush()?;
    Ok(file.into_temp_path())
}

/// Starts the command: `shell shell_args command` (or, for a long command,
/// a `.` of its script file), through [`launch`].
pub fn spawn(request: &SpawnRequest<'_>) -> Result<Spawned, ExecError> {
    let program = request.shell.display().to_string();
    let spawn_error = |source: std::io::Error| ExecError::Spawn {
        program: program.clone(),
        source,
    };
    let mut argv: Vec<OsString> = vec![request.shell.as_os_str().to_owned()];
    argv.extend(request.shell_args.iter().map(OsString::from));
    let script_file = if request.command.len() > MAX_INLINE_SCRIPT {
        let path = script_file(request.command).map_err(&spawn_error)?;
        // `.` runs the file in the same shell, like `-c` would; `$0` is the file.
        argv.push(OsString::from(". \"$0\""));
        argv.push(path.as_os_str().to_owned());
        Some(path)
    } else {
        argv.push(OsString::from(request.command));
        None
    };
    let env = child_environment(
        &request.env,
        request.env_policy,
        request.non_interactive,
        request.marker,
    );
    let io = ChildIo {
        stdout: Sink::Pipe,
        stderr: Sink::Pipe,
        ..ChildIo::null()
    };
    let mut spawned = launch(
        Launch {
            argv,
            env,
            cwd: request.cwd.to_path_buf(),
        },
        request.wrappers,
        io,
        Some(request.marker),
    )?;
    spawned.script_file = script_file;
    Ok(spawned)
}

/// [`bashtool_process::launch`], with its errors as the port's.
pub(crate) fn launch(
    launch: Launch,
    wrappers: &[Arc<dyn Wrapper>],
    io: ChildIo,
    marker: Option<&RunMarker>,
) -> Result<Spawned, ExecError> {
    let launched =
        bashtool_process::launch(launch, wrappers, io, marker).map_err(crate::error::exec_error)?;
    Ok(Spawned {
        root: launched.root,
        stdout: launched.stdout,
        stderr: launched.stderr,
        script_file: None,
    })
}
