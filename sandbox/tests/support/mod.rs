//! What the sandbox's integration tests share: a command started in a
//! sandbox through the one launch path, with its output on pipes, and the
//! host's own address (which no sandboxed command may reach).

use std::ffi::OsString;
use std::io::Read as _;
use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use bashtool_process::{ChildIo, ExitStatus, Launch, RootProcess, Sink, Wrapper};
use bashtool_sandbox::Sandbox;

/// A sandboxed command started through the launch path (the only
/// one that puts it in the sandbox's pid namespace), with its output on
/// pipes the test reads synchronously.
pub struct Launched {
    pub root: RootProcess,
    pub stdout: Option<std::fs::File>,
    pub stderr: Option<std::fs::File>,
}

impl Launched {
    /// Blocks until the process exits (without reaping it), then reaps it.
    pub fn wait(&mut self) -> std::process::ExitStatus {
        use std::os::unix::process::ExitStatusExt as _;
        match self.root.wait_blocking() {
            ExitStatus::Code(code) => std::process::ExitStatus::from_raw(code << 8),
            ExitStatus::Signal(signal) => std::process::ExitStatus::from_raw(signal as i32),
            ExitStatus::Running => std::process::ExitStatus::from_raw(-1),
        }
    }

    pub fn wait_with_output(mut self) -> Output {
        let read_all = |file: Option<std::fs::File>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut file) = file {
                    let _ = file.read_to_end(&mut bytes);
                }
                bytes
            })
        };
        let stdout = read_all(self.stdout.take());
        let stderr = read_all(self.stderr.take());
        let status = self.wait();
        Output {
            status,
            stdout: stdout.join().expect("stdout reader"),
            stderr: stderr.join().expect("stderr reader"),
        }
    }
}

/// `bash -c script` in `sandbox`, in `cwd` with `env`.
pub fn launch(
    sandbox: &Arc<Sandbox>,
    cwd: &Path,
    env: Vec<(OsString, OsString)>,
    script: &str,
) -> Launched {
    let launch = Launch {
        argv: vec!["bash".into(), "-c".into(), script.into()],
        env,
        cwd: cwd.to_path_buf(),
    };
    let pipe = || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).expect("pipe");
    let (stdout_read, stdout_write) = pipe();
    let (stderr_read, stderr_write) = pipe();
    let wrappers: Vec<Arc<dyn Wrapper>> = vec![Arc::clone(sandbox) as Arc<dyn Wrapper>];
    let spawned = bashtool_process::launch(
        launch,
        &wrappers,
        ChildIo {
            stdin_pipe: false,
            stdout: Sink::Fd(stdout_write),
            stderr: Sink::Fd(stderr_write),
            extra: Vec::new(),
            terminal: None,
        },
        None,
    )
    .expect("launch");
    Launched {
        root: spawned.root,
        stdout: Some(std::fs::File::from(stdout_read)),
        stderr: Some(std::fs::File::from(stderr_read)),
    }
}

/// The host's address on its default route (no packet is sent).
pub fn host_address() -> std::net::IpAddr {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").expect("udp");
    probe
        .connect("192.0.2.1:53")
        .map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), |()| {
            probe.local_addr().expect("addr").ip()
        })
}
