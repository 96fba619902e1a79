//! What every transport must show (ssh on loopback, docker exec): the same
//! scenarios, driven through `RemoteExec` over a real transport. Liveness
//! of the remote processes is decided by the test's own probe (`/proc`
//! here, or `/proc` inside the container through `docker exec`), never by
//! the code under test.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use bashtool_core::{CommandExec, CommandResult, ExecMode, Jobs, ReadFrom, SpawnOptions};
use bashtool_env_remote::{RemoteConfig, RemoteExec, ServeBinary, SessionRequest, ShellTransport};
use bashtool_tests::{
    DEATH_LIMIT, echo_pid, escapee, grandchildren_script, pid_watch, qualified_pid, survivors_by,
    text,
};
use tokio_util::sync::CancellationToken;

/// A safety timeout for commands that end by themselves.
pub const SAFETY: Duration = Duration::from_secs(60);

/// A remote environment to drive.
pub struct Target {
    /// The transport command line that starts `bashtool serve` over there,
    /// or with [`Target::upload`] one that opens a POSIX shell there.
    pub line: String,
    /// `Some`: [`Target::line`] opens a shell (`--remote-shell`).
    pub upload: Option<Upload>,
    /// Whether bash is over there: persistent sessions need it.
    pub sessions: bool,
    /// A writable directory over there.
    pub remote_dir: String,
    /// Whether a pid over there is alive (not a zombie), asked by the test.
    pub alive: Box<dyn Fn(u32) -> bool + Send + Sync>,
    /// The pids a command printed (`pid:<n>@<inode>`), numbered as
    /// [`Target::alive`] and the server's job pids number them.
    pub pids_in: fn(&str) -> Vec<u32>,
    /// A local file the transport's pid can be written to.
    pub pid_file: std::path::PathBuf,
}

/// What a shell line's target uploads and starts.
pub struct Upload {
    /// The build uploaded when no `serve` of this version is there.
    pub build: ServeBinary,
    /// `serve`'s flags beyond `--cwd remote_dir --kill-grace 1`.
    pub serve_args: Vec<String>,
}

impl Target {
    fn exec(&self, config: RemoteConfig) -> RemoteExec {
        self.exec_through(self.line.clone(), config)
    }

    /// The environment reached through `line` (the target's line, or one
    /// wrapped around it).
    fn exec_through(&self, line: String, config: RemoteConfig) -> RemoteExec {
        let config = RemoteConfig {
            remote_kill_grace: Duration::from_secs(1),
            ..config
        };
        match &self.upload {
            None => RemoteExec::command(line, config),
            Some(upload) => {
                let mut serve_args: Vec<String> = ["--cwd", &self.remote_dir, "--kill-grace", "1"]
                    .map(str::to_owned)
                    .to_vec();
                serve_args.extend(upload.serve_args.iter().cloned());
                let transport =
                    ShellTransport::new(line, Some(upload.build.clone())).serve_args(serve_args);
                RemoteExec::new(Arc::new(transport), config)
            }
        }
    }

    /// Waits until none of `pids` is alive over there; returns the survivors.
    pub async fn survivors_after(&self, pids: &[u32]) -> Vec<u32> {
        survivors_by(pids, DEATH_LIMIT, |pid| (self.alive)(pid)).await
    }
}

async fn run(exec: &RemoteExec, command: &str, options: SpawnOptions) -> CommandResult {
    exec.spawn(command, options)
        .await
        .expect("the command starts")
}

/// Runs every scenario in order.
pub async fn every_scenario(target: &Target) {
    exit_codes_and_streaming(target).await;
    timeout_stops_the_remote_tree(target).await;
    cancel_stops_the_remote_tree(target).await;
    background_jobs(target).await;
    if target.sessions {
        session_survives_reconnect(target).await;
    }
    killing_the_local_client_stops_the_remote_processes(target).await;
}

/// Exit codes come back; output arrives while the command still runs.
pub async fn exit_codes_and_streaming(target: &Target) {
    let exec = target.exec(RemoteConfig::default());
    let info = exec.connect().await.expect("handshake");
    assert_eq!(info.protocol, "bashtool-serve/1");
    // A shell line's name may carry a note (no bash there).
    let name = exec.environment().name;
    assert!(
        name.starts_with(&format!("remote: {}", target.line)),
        "{name}"
    );
    for (command, code) in [("true", 0), ("false", 1), ("exit 42", 42)] {
        let result = run(&exec, command, SpawnOptions::default().timeout(SAFETY)).await;
        assert_eq!(result.exit_code, Some(code), "{command}");
    }
    let result = run(
        &exec,
        "printf 'a\\xffb\\n'; echo err >&2",
        SpawnOptions::default().timeout(SAFETY),
    )
    .await;
    assert_eq!(text(&result), "a\u{FFFD}b\nerr");
    // The cancel fires from the output: it can only come while the command runs.
    let printed = CancellationToken::new();
    let (_, sink) = pid_watch(1, printed.clone());
    let result = run(
        &exec,
        &format!("{}; sleep 300", echo_pid("$$")),
        SpawnOptions::default()
            .timeout(SAFETY)
            .cancel(printed)
            .on_output(sink),
    )
    .await;
    assert!(result.cancelled, "{result:?}");
    let pids = (target.pids_in)(&text(&result));
    assert_eq!(pids.len(), 1);
    assert_eq!(target.survivors_after(&pids).await, Vec::<u32>::new());
    exec.shutdown(SAFETY).await;
}

fn tree_script() -> String {
    format!("{}{}\nsleep 300", grandchildren_script(2), escapee())
}

/// The remote side enforces the timeout on the whole tree.
pub async fn timeout_stops_the_remote_tree(target: &Target) {
    let exec = target.exec(RemoteConfig::default());
    let result = run(
        &exec,
        &tree_script(),
        SpawnOptions::default().timeout(Duration::from_secs(2)),
    )
    .await;
    assert!(result.timed_out, "{result:?}");
    let pids = (target.pids_in)(&text(&result));
    assert_eq!(pids.len(), 3, "{}", text(&result));
    assert_eq!(target.survivors_after(&pids).await, Vec::<u32>::new());
    exec.shutdown(SAFETY).await;
}

/// A cancel is a message: the tree stops, the connection stays.
pub async fn cancel_stops_the_remote_tree(target: &Target) {
    let exec = target.exec(RemoteConfig::default());
    let cancel = CancellationToken::new();
    let (_, sink) = pid_watch(3, cancel.clone());
    let result = run(
        &exec,
        &tree_script(),
        SpawnOptions::default()
            .timeout(SAFETY)
            .cancel(cancel)
            .on_output(sink),
    )
    .await;
    assert!(result.cancelled && !result.timed_out, "{result:?}");
    let pids = (target.pids_in)(&text(&result));
    assert_eq!(pids.len(), 3, "{}", text(&result));
    assert_eq!(target.survivors_after(&pids).await, Vec::<u32>::new());
    let again = run(
        &exec,
        "echo same connection",
        SpawnOptions::default().timeout(SAFETY),
    )
    .await;
    assert_eq!(text(&again), "same connection");
    exec.shutdown(SAFETY).await;
}

/// Background jobs are listed, read and stopped over there.
pub async fn background_jobs(target: &Target) {
    let exec = target.exec(RemoteConfig::default());
    let result = run(
        &exec,
        &format!(
            "echo started; sh -c '{}; exec sleep 300' & wait",
            echo_pid("$$")
        ),
        SpawnOptions::default().mode(ExecMode::Background),
    )
    .await;
    let job = result.background.expect("a background job");
    let listed = exec.list().await;
    assert!(listed.iter().any(|info| info.id == job.id), "{listed:?}");
    let deadline = tokio::time::Instant::now() + SAFETY;
    let mut pids = Vec::new();
    while pids.is_empty() && tokio::time::Instant::now() < deadline {
        let window = exec
            .read(&job.id, ReadFrom::Cursor(0), 100_000)
            .await
            .expect("read");
        pids = (target.pids_in)(&window.text);
        if pids.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert_eq!(pids.len(), 1, "the job printed its child");
    pids.extend(job.pid);
    // The probe sees them alive now, so that its verdict after the stop
    // means something.
    assert!(
        pids.iter().all(|&pid| (target.alive)(pid)),
        "the probe does not see the running job's processes {pids:?}"
    );
    let info = exec.stop(&job.id).await.expect("known job");
    assert!(!info.state.is_running(), "{info:?}");
    assert_eq!(target.survivors_after(&pids).await, Vec::<u32>::new());
    assert!(matches!(
        exec.stop("no-such-job").await,
        Err(bashtool_core::JobError::UnknownJob { .. })
    ));
    exec.shutdown(SAFETY).await;
}

/// A named session keeps the cwd and variables across calls and across a
/// new connection.
pub async fn session_survives_reconnect(target: &Target) {
    let config = RemoteConfig {
        session: Some(SessionRequest {
            name: Some("remote-test".to_owned()),
        }),
        ..RemoteConfig::default()
    };
    let exec = target.exec(config);
    let sub = format!("{}/session-sub", target.remote_dir);
    let setup = run(
        &exec,
        &format!("mkdir -p '{sub}' && cd '{sub}' && export GREETING='hello there'"),
        SpawnOptions::default().timeout(SAFETY),
    )
    .await;
    assert_eq!(setup.exit_code, Some(0), "{}", text(&setup));
    let probe = "pwd; echo \"$GREETING\"";
    let same = run(&exec, probe, SpawnOptions::default().timeout(SAFETY)).await;
    assert_eq!(text(&same), format!("{sub}\nhello there"));
    exec.shutdown(SAFETY).await;
    let reconnected = run(&exec, probe, SpawnOptions::default().timeout(SAFETY)).await;
    assert_eq!(text(&reconnected), format!("{sub}\nhello there"));
    exec.shutdown(SAFETY).await;
}

/// When the local transport process dies, the call returns at once saying
/// so, the server sees its input close and stops the command's tree, and
/// the next call reconnects.
pub async fn killing_the_local_client_stops_the_remote_processes(target: &Target) {
    let pid_file = target.pid_file.display().to_string();
    let line = format!(
        "echo {} > '{pid_file}'; exec {}",
        qualified_pid("$$"),
        target.line
    );
    let exec = target.exec_through(line, RemoteConfig::default());
    let printed = CancellationToken::new();
    let (seen, sink) = pid_watch(1, printed.clone());
    let command = format!("sh -c '{}; exec sleep 300' & wait", echo_pid("$$"));
    let call = exec.spawn(
        &command,
        SpawnOptions::default().timeout(SAFETY).on_output(sink),
    );
    tokio::pin!(call);
    tokio::select! {
        () = printed.cancelled() => {}
        _ = &mut call => panic!("the call ended by itself"),
    }
    let transport =
        bashtool_tests::parse_pid(&std::fs::read_to_string(&target.pid_file).expect("pid file"))
            .expect("a pid") as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(transport),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the transport");
    let result = tokio::time::timeout(SAFETY, call)
        .await
        .expect("the call returns promptly")
        .expect("a result, not an error");
    assert_eq!(result.exit_code, None);
    assert!(
        result.notes.iter().any(|note| note.contains("was lost")),
        "{:?}",
        result.notes
    );
    let pids = (target.pids_in)(&seen.lock().unwrap_or_else(PoisonError::into_inner));
    assert_eq!(target.survivors_after(&pids).await, Vec::<u32>::new());
    let again = run(
        &exec,
        "echo reconnected",
        SpawnOptions::default().timeout(SAFETY),
    )
    .await;
    assert_eq!(text(&again), "reconnected");
    exec.shutdown(SAFETY).await;
}

/// The static Linux build (`x86_64-unknown-linux-musl`) that `.ci/test`
/// builds and names in `BASHTOOL_TEST_STATIC_BINARY`, stripped into `dir`
/// (a smaller upload). `None` outside CI when it is not named (the caller
/// prints why it skips); in CI its absence fails the test.
pub fn static_build(dir: &Path) -> Option<PathBuf> {
    let Some(path) = std::env::var_os("BASHTOOL_TEST_STATIC_BINARY") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "BASHTOOL_TEST_STATIC_BINARY is not set in CI: .ci/test builds the musl binary and sets it"
        );
        println!(
            "SKIPPED: set BASHTOOL_TEST_STATIC_BINARY to a static build \
             (cargo build -p bashtool-cli --target x86_64-unknown-linux-musl)"
        );
        return None;
    };
    let stripped = dir.join("bashtool-static");
    let done = Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(&path)
        .status()
        .is_ok_and(|status| status.success());
    if !done {
        std::fs::copy(&path, &stripped).expect("copy the static build");
    }
    Some(stripped)
}
