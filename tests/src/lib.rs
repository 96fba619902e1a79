//! Helpers for the integration tests: a temp dir, an environment in it,
//! probes for processes and fds, a script that forks grandchildren and
//! prints their pids, and waiting for an event with a deadline.

use std::io::Write as _;
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bashtool_core::{
    CallContext, CommandExec, CommandResult, ExecError, OutputChunk, OutputSink, SpawnOptions,
};
use bashtool_env_local::{LocalConfig, LocalExec};
use tokio_util::sync::CancellationToken;

pub use tempfile::TempDir;

pub mod cgroups;
pub mod contract;
pub mod nobody;

pub fn temp_dir() -> TempDir {
    tempfile::tempdir().expect("create a temp dir")
}

/// A directory of the test's own outside every root the default sandbox
/// leaves writable (`/tmp`, `$TMPDIR`), where "outside the sandbox" can be
/// told from inside: under `target_tmpdir` (the test crate's
/// `CARGO_TARGET_TMPDIR`), unless the checkout is itself under /tmp (a CI
/// clone), then under `/var/tmp`. Removed on drop.
pub fn outside_the_writable_roots(target_tmpdir: &str, prefix: &str) -> TempDir {
    let target = Path::new(target_tmpdir);
    let temp_roots = [Path::new("/tmp").to_path_buf(), std::env::temp_dir()];
    let base = if temp_roots.iter().any(|root| target.starts_with(root)) {
        Path::new("/var/tmp")
    } else {
        target
    };
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(base)
        .expect("a directory outside the writable roots")
}

/// The test configuration: runs in `dir`, logs under `dir/logs`, grace 1 s.
pub fn test_config(dir: &Path) -> LocalConfig {
    LocalConfig {
        working_directory: dir.to_path_buf(),
        log_dir: Some(dir.join("logs")),
        kill_grace: Duration::from_secs(1),
        ..LocalConfig::default()
    }
}

pub fn local_exec(dir: &Path) -> LocalExec {
    LocalExec::new(test_config(dir))
}

/// Runs `command` in the foreground with `options`.
pub async fn run_with(
    exec: &LocalExec,
    command: &str,
    options: SpawnOptions,
) -> Result<CommandResult, ExecError> {
    exec.spawn(command, options).await
}

/// Runs `command` with a 20 s safety timeout and expects it to start.
pub async fn run(exec: &LocalExec, command: &str) -> CommandResult {
    run_with(
        exec,
        command,
        SpawnOptions::default().timeout(Duration::from_secs(20)),
    )
    .await
    .expect("the command starts")
}

/// The retained output lines, joined with `\n`.
pub fn text(result: &CommandResult) -> String {
    result
        .output
        .retained()
        .0
        .iter()
        .map(|line| line.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// How long a stopped process tree may take to disappear from `/proc`.
pub const DEATH_LIMIT: Duration = Duration::from_secs(10);

/// A process exists and is not a zombie, read from `/proc` by the test
/// itself (never by the code under test).
pub fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| stat_alive(&stat))
}

/// Whether a `/proc/<pid>/stat` line, read here or elsewhere (inside a
/// container), shows a process that is neither a zombie nor dead.
pub fn stat_alive(stat: &str) -> bool {
    // The state follows the command name, which ends at the last `)`.
    let state = stat
        .rfind(')')
        .and_then(|end| stat.get(end + 2..end + 3))
        .unwrap_or("X");
    !matches!(state, "Z" | "X" | "x")
}

/// The shell expression `pid` (`$$`, `$!`) followed by `@` and the inode
/// of that process's pid namespace: a sandboxed command sees the pids of
/// its own pid namespace, and the namespace tells [`parse_pid`] which
/// process on the host it is.
pub fn qualified_pid(pid: &str) -> String {
    format!("{pid}@$(stat -Lc %i /proc/{pid}/ns/pid)")
}

/// A shell snippet that prints `pid:<pid>@<namespace>` (see
/// [`qualified_pid`]).
pub fn echo_pid(pid: &str) -> String {
    format!("echo pid:{}", qualified_pid(pid))
}

/// A pid as printed by a command, `<n>` or `<n>@<namespace>` (see
/// [`qualified_pid`]), as a pid on the host. A process of another
/// namespace that is gone has no host pid: it gets a number no process can
/// have, so it still counts, as dead.
pub fn parse_pid(text: &str) -> Option<u32> {
    match text.trim().split_once('@') {
        None => text.trim().parse().ok(),
        Some((pid, namespace)) => {
            let pid: u32 = pid.parse().ok()?;
            let namespace: u64 = namespace.parse().ok()?;
            Some(host_pid(pid, namespace).unwrap_or(NO_PROCESS + pid))
        }
    }
}

/// A script that starts `count` grandchildren (`sh` that execs `sleep 300`,
/// inside a background subshell) and prints `pid:<n>` for each.
pub fn grandchildren_script(count: usize) -> String {
    format!("( sh -c '{}; exec sleep 300' & wait ) &\n", echo_pid("$$")).repeat(count)
}

/// A script line that starts a process that leaves the session with
/// `setsid` and prints `pid:<n>`.
pub fn escapee() -> String {
    format!("setsid sh -c '{}; exec sleep 300' &", echo_pid("$$"))
}

/// The pids printed as `pid:<n>` or `pid <n>` (`echo pid $!`) in `text`,
/// as pids on the host: `<n>@<inode>` (see [`echo_pid`]) names pid `n` of
/// the pid namespace with that inode. A process of another namespace that
/// is gone has no host pid: it gets a number no process can have, so it
/// still counts, and as dead.
pub fn pids_in(text: &str) -> Vec<u32> {
    printed_pids(text).filter_map(parse_pid).collect()
}

/// The pids printed as in [`pids_in`], as the pid namespace of the
/// process that printed them numbers them (the `<n>` of `<n>@<inode>`):
/// what a probe inside that namespace (a container's `/proc`) needs.
pub fn pids_as_printed(text: &str) -> Vec<u32> {
    printed_pids(text)
        .filter_map(|pid| pid.split('@').next()?.trim().parse().ok())
        .collect()
}

/// The `<n>` or `<n>@<inode>` of each line `pid:…` or `pid …`.
fn printed_pids(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| {
        let line = line.trim();
        line.strip_prefix("pid:")
            .or_else(|| line.strip_prefix("pid "))
    })
}

/// Above the kernel's highest pid (`pid_max` is at most 2^22).
const NO_PROCESS: u32 = 1 << 30;

/// The host pid of the process that is `pid` in the pid namespace whose
/// inode is `namespace` (the last `NSpid` field is the innermost pid).
pub fn host_pid(pid: u32, namespace: u64) -> Option<u32> {
    use std::os::unix::fs::MetadataExt as _;
    let own = std::fs::metadata("/proc/self/ns/pid").ok()?.ino();
    if own == namespace {
        return Some(pid);
    }
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .find(|candidate| {
            std::fs::metadata(format!("/proc/{candidate}/ns/pid"))
                .is_ok_and(|metadata| metadata.ino() == namespace)
                && std::fs::read_to_string(format!("/proc/{candidate}/status")).is_ok_and(
                    |status| {
                        status
                            .lines()
                            .find_map(|line| line.strip_prefix("NSpid:"))
                            .and_then(|pids| pids.split_whitespace().last())
                            .and_then(|last| last.parse::<u32>().ok())
                            == Some(pid)
                    },
                )
        })
}

/// Polls `condition` every 10 ms until it holds or `limit` passes.
pub async fn wait_until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until every pid is gone (dead or a zombie), up to `limit`;
/// returns the survivors.
pub async fn survivors_after(pids: &[u32], limit: Duration) -> Vec<u32> {
    survivors_by(pids, limit, pid_alive).await
}

/// [`survivors_after`] with another probe of whether a pid is alive (a
/// process on another machine or in a container). Each pid is probed
/// once a round, every 10 ms.
pub async fn survivors_by(pids: &[u32], limit: Duration, alive: impl Fn(u32) -> bool) -> Vec<u32> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let survivors: Vec<u32> = pids.iter().copied().filter(|&pid| alive(pid)).collect();
        if survivors.is_empty() || tokio::time::Instant::now() >= deadline {
            return survivors;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// [`survivors_after`], then kills the survivors, so that none outlives
/// the test that asserts there are none:
/// `assert_eq!(killed_survivors(&pids, DEATH_LIMIT).await, Vec::<u32>::new());`
pub async fn killed_survivors(pids: &[u32], limit: Duration) -> Vec<u32> {
    let survivors = survivors_after(pids, limit).await;
    kill_all(&survivors);
    survivors
}

/// Kills stray test processes (cleanup after a failed assertion).
pub fn kill_all(pids: &[u32]) {
    for &pid in pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Kills a process group when dropped, whatever the test's outcome: for a
/// job that outlives what started it, or that nothing else may stop.
#[derive(Debug)]
pub struct KillGroup(pub u32);

impl Drop for KillGroup {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.0 as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// How long a command may take to write the pids it was asked to write.
const PIDS_LIMIT: Duration = Duration::from_secs(30);

/// The pids a command writes to `file`, one a line (`<n>` or
/// `<n>@<namespace>`, see [`parse_pid`]), once there are `count` of them;
/// fails the test if they are not there within 30 s.
pub async fn read_pids(file: &Path, count: usize) -> Vec<u32> {
    let mut pids = Vec::new();
    let written = wait_until(PIDS_LIMIT, || {
        pids = std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(parse_pid)
            .collect();
        pids.len() >= count
    })
    .await;
    assert!(written, "{count} pids not in {} in time", file.display());
    pids
}

/// A live-output sink that collects the text and fires `trigger` once
/// `count` pids were printed (see [`pids_in`]); the text it collected.
pub fn pid_watch(count: usize, trigger: CancellationToken) -> (Arc<Mutex<String>>, OutputSink) {
    let printed = Arc::new(Mutex::new(String::new()));
    let seen = Arc::clone(&printed);
    let sink = Arc::new(move |chunk: &OutputChunk| {
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.push_str(&chunk.text);
        if pids_in(&seen).len() >= count {
            trigger.cancel();
        }
    });
    (printed, sink)
}

/// Runs a `bashtool call` process (`call`, with its arguments and
/// environment set) with `input` on its stdin; its one JSON result on
/// stdout, and how it ended. Its stderr is what `call` says (inherited
/// unless piped there: a background job may hold a piped stderr open).
/// The input is written on a thread of its own, and a failed write is no
/// error: `call` may stop reading early (an input over the cap), and
/// answers all the same.
pub fn call_json(mut call: std::process::Command, input: &str) -> (serde_json::Value, Output) {
    let mut child = call
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start bashtool call");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_owned();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let output = child.wait_with_output().expect("bashtool call ends");
    writer.join().expect("the input writer");
    let result = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "not one JSON result on stdout ({error}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (result, output)
}

/// Number of open file descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
}

/// Children of this process that are zombies.
pub fn zombie_children() -> Vec<u32> {
    let own = std::process::id();
    bashtool_process::all_processes()
        .into_iter()
        .filter(|info| info.parent == own && info.zombie)
        .map(|info| info.pid)
        .collect()
}

/// Peak resident memory of this process (VmHWM), in bytes.
pub fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// A call context that cancels the call as soon as its output contains
/// `marker`: an event to cancel on, instead of a sleep.
pub fn cancel_when_output_contains(marker: &'static str) -> CallContext {
    let cancel = tokio_util::sync::CancellationToken::new();
    let trigger = cancel.clone();
    CallContext {
        cancel,
        on_output: Some(std::sync::Arc::new(move |chunk: &OutputChunk| {
            if chunk.text.contains(marker) {
                trigger.cancel();
            }
        })),
    }
}

/// What a session result says after its shell was restarted.
pub const RESTARTED: &str = "[the shell session had died and was restarted; the working directory and exported variables were restored]";

/// A temp dir with a `sub` directory, canonicalized so that its paths read
/// the way bash prints them.
pub fn workspace() -> (TempDir, std::path::PathBuf) {
    let dir = temp_dir();
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir(root.join("sub")).expect("mkdir");
    (dir, root)
}

/// The configuration of a test session starting in `dir`: a short kill
/// grace.
pub fn session_config(dir: &Path) -> bashtool_env_local::SessionConfig {
    bashtool_env_local::SessionConfig {
        local: LocalConfig {
            working_directory: dir.to_path_buf(),
            kill_grace: Duration::from_millis(500),
            ..LocalConfig::default()
        },
        ..bashtool_env_local::SessionConfig::default()
    }
}

/// A persistent session starting in `dir`.
pub fn new_session(dir: &Path) -> bashtool_env_local::Session {
    bashtool_env_local::Session::new(session_config(dir)).expect("session")
}

/// The tool on `session`, configured as persistent.
pub fn session_tool(session: &bashtool_env_local::Session) -> bashtool_core::BashTool {
    bashtool_core::BashTool::new(
        bashtool_core::ToolConfig {
            persistent_session: true,
            ..bashtool_core::ToolConfig::default()
        },
        std::sync::Arc::new(session.clone()),
    )
}

/// The telemetry line of a session standing in `path` (no git repository).
pub fn cwd_line(path: &Path) -> String {
    format!("[cwd: {}]", path.display())
}
