//! Runs scripts in the sandbox, one after the other with the same sandbox,
//! for trying it by hand (for example as another user: `setpriv
//! --reuid=65534 --regid=65534 --clear-groups target/debug/examples/sandbox_run
//! /some/workspace workspace-write off 'git init' 'touch .git/hooks/x'`).

#![allow(unsafe_code)]

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use bashtool_env_local::{Launch, SandboxConfig, SpawnWrapper as _};

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [workspace, mode, network, scripts @ ..] = arguments.as_slice() else {
        eprintln!("usage: sandbox_run WORKSPACE MODE NETWORK SCRIPT...");
        return ExitCode::from(2);
    };
    let config = SandboxConfig {
        mode: mode.parse().expect("mode"),
        network: network.parse().expect("network"),
        ..SandboxConfig::default()
    };
    let sandbox = match bashtool_env_local::Sandbox::new(&config, Path::new(workspace), None) {
        Ok(sandbox) => sandbox,
        Err(error) => {
            eprintln!("sandbox_run: {error}");
            return ExitCode::from(1);
        }
    };
    eprint!("{}", sandbox.describe());
    let mut last = 0;
    for script in scripts {
        let mut launch = Launch {
            argv: vec!["bash".into(), "-c".into(), script.into()],
            env: std::env::vars_os().collect(),
            cwd: PathBuf::from(workspace),
        };
        if let Err(error) = sandbox.wrap(&mut launch) {
            eprintln!("sandbox_run: {error}");
            return ExitCode::from(1);
        }
        let mut command = Command::new(&launch.argv[0]);
        command
            .args(&launch.argv[1..])
            .env_clear()
            .envs(launch.env)
            .current_dir(&launch.cwd);
        let wrapper = sandbox.clone();
        // SAFETY: setsid and the sandbox's async-signal-safe steps.
        unsafe {
            command.pre_exec(move || {
                nix::unistd::setsid()?;
                wrapper.pre_exec()
            });
        }
        last = command.status().expect("spawn").code().unwrap_or(128);
    }
    ExitCode::from(last as u8)
}
