//! Runs scripts in the sandbox, one after the other with the same sandbox,
//! for trying it by hand (for example as another user: `setpriv
//! --reuid=65534 --regid=65534 --clear-groups target/debug/examples/sandbox_run
//! /some/workspace workspace-write off 'git init' 'touch .git/hooks/x'`).

use std::os::fd::AsFd as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use bashtool_process::{ChildIo, ExitStatus, Launch, Sink, Wrapper, launch};
use bashtool_sandbox::{Sandbox, SandboxConfig};

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
    let sandbox = match Sandbox::new(&config, Path::new(workspace), None) {
        Ok(sandbox) => sandbox,
        Err(error) => {
            eprintln!("sandbox_run: {error}");
            return ExitCode::from(1);
        }
    };
    eprint!("{}", sandbox.describe());
    let wrappers = [sandbox as Arc<dyn Wrapper>];
    let mut last = 0;
    for script in scripts {
        let command = Launch {
            argv: vec!["bash".into(), "-c".into(), script.into()],
            env: std::env::vars_os().collect(),
            cwd: PathBuf::from(workspace),
        };
        // The command's output goes where ours does.
        let io = ChildIo {
            stdout: Sink::Fd(
                std::io::stdout()
                    .as_fd()
                    .try_clone_to_owned()
                    .expect("stdout"),
            ),
            stderr: Sink::Fd(
                std::io::stderr()
                    .as_fd()
                    .try_clone_to_owned()
                    .expect("stderr"),
            ),
            ..ChildIo::null()
        };
        let launched = match launch(command, &wrappers, io, None) {
            Ok(launched) => launched,
            Err(error) => {
                eprintln!("sandbox_run: {error}");
                return ExitCode::from(1);
            }
        };
        last = match launched.root.wait_blocking() {
            ExitStatus::Code(code) => code,
            ExitStatus::Signal(signal) => 128 + signal as i32,
            ExitStatus::Running => 255,
        };
    }
    ExitCode::from(last as u8)
}
