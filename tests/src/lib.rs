//! Helpers for the integration tests: a temp dir, an environment in it,
//! probes for processes and fds, a script that forks grandchildren and
//! prints their pids, and waiting for an event with a deadline.

use std::path::Path;
use std::time::Duration;

use bashtool_core::{
    CallContext, CommandExec, CommandResult, ExecError, OutputChunk, SpawnOptions,
};
use bashtool_env_local::{LocalConfig, LocalExec};

pub use tempfile::TempDir;

pub mod contract;

pub fn temp_dir() -> TempDir {
    tempfile::tempdir().expect("create a temp dir")
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

/// A process exists and is not a zombie, read from `/proc` by the test
/// itself (never by the code under test).
pub fn process_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which ends at the last `)`.
    let state = stat
        .rfind(')')
        .and_then(|end| stat.get(end + 2..end + 3))
        .unwrap_or("X");
    !matches!(state, "Z" | "X" | "x")
}

/// Same as [`process_alive`].
pub fn pid_alive(pid: u32) -> bool {
    process_alive(pid)
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
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            parse_pid(
                line.strip_prefix("pid:")
                    .or_else(|| line.strip_prefix("pid "))?,
            )
        })
        .collect()
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

/// Waits until every pid is gone (dead or a zombie); returns the survivors.
pub async fn survivors_after(pids: &[u32], limit: Duration) -> Vec<u32> {
    wait_until(limit, || pids.iter().all(|&pid| !pid_alive(pid))).await;
    pids.iter().copied().filter(|&pid| pid_alive(pid)).collect()
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
