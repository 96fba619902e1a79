//! Runs one script in the sandbox, for trying it by hand (for example as
//! another user: `setpriv --reuid=65534 --regid=65534 --clear-groups
//! target/debug/examples/sandbox_run /some/workspace 'touch x'`).
//! Arguments: WORKSPACE SCRIPT [read-only|workspace-write] [on|off].

#![allow(unsafe_code)]

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, ExitCode};

use bashtool_env_local::{SandboxConfig, SpawnWrapper as _};

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [workspace, script, rest @ ..] = arguments.as_slice() else {
        eprintln!("usage: sandbox_run WORKSPACE SCRIPT [MODE] [NETWORK]");
        return ExitCode::from(2);
    };
    let mut config = SandboxConfig::default();
    if let Some(mode) = rest.first() {
        config.mode = mode.parse().expect("mode");
    }
    if let Some(network) = rest.get(1) {
        config.network = network.parse().expect("network");
    }
    let sandbox = match bashtool_env_local::Sandbox::new(&config, Path::new(workspace), None) {
        Ok(sandbox) => sandbox,
        Err(error) => {
            eprintln!("sandbox_run: {error}");
            return ExitCode::from(1);
        }
    };
    eprint!("{}", sandbox.describe());
    let mut command = Command::new("bash");
    command.args(["-c", script]).current_dir(workspace);
    // SAFETY: setsid and the sandbox's async-signal-safe steps.
    unsafe {
        command.pre_exec(move || {
            nix::unistd::setsid()?;
            sandbox.pre_exec()
        });
    }
    let status = command.status().expect("spawn");
    ExitCode::from(status.code().unwrap_or(128) as u8)
}
