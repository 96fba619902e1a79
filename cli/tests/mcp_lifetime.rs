//! `bashtool mcp` killed from outside leaves nothing running: SIGHUP stops
//! its commands like SIGTERM; after SIGKILL (which cannot be caught) the
//! command's root dies with it (parent-death signal) and the next server
//! start stops what is left. Liveness is read from /proc by the test.

use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

fn wait_until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    condition()
}

fn kill(pid: u32, signal: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal);
}

/// A server with a call running `command`; returns it once the command
/// wrote `pids` (one pid per line).
fn server_running(state: &Path, command: &str, pids: &Path) -> Child {
    let mut server = Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(["mcp", "--stateless"])
        .env("BASHTOOL_STATE_DIR", state.join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("server");
    let stdin = server.stdin.as_mut().expect("stdin");
    let messages = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": command, "timeout": 600}}}),
    ];
    for message in messages {
        writeln!(stdin, "{message}").expect("send");
    }
    stdin.flush().expect("flush");
    assert!(
        wait_until(Duration::from_secs(20), || {
            std::fs::read_to_string(pids).is_ok_and(|text| text.lines().count() >= 2)
        }),
        "the command did not start"
    );
    server
}

fn read_pids(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .expect("pids")
        .lines()
        .filter_map(bashtool_tests::parse_pid)
        .collect()
}

#[test]
fn sighup_stops_the_servers_commands() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pids_file = dir.path().join("pids");
    let command = format!(
        "echo $$@$(stat -Lc %i /proc/$$/ns/pid) >> '{file}'; sh -c 'echo $$@$(stat -Lc %i /proc/$$/ns/pid) >> \"$0\"; exec sleep 300' '{file}' & wait",
        file = pids_file.display()
    );
    let mut server = server_running(dir.path(), &command, &pids_file);
    let pids = read_pids(&pids_file);
    kill(server.id(), nix::sys::signal::Signal::SIGHUP);
    server.wait().expect("server ends");
    let gone = wait_until(Duration::from_secs(10), || {
        pids.iter().all(|&pid| !pid_alive(pid))
    });
    for &pid in &pids {
        kill(pid, nix::sys::signal::Signal::SIGKILL);
    }
    assert!(gone, "{pids:?} outlived SIGHUP to the server");
}

#[test]
fn after_sigkill_nothing_survives_the_next_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pids_file = dir.path().join("pids");
    let command = format!(
        "echo $$@$(stat -Lc %i /proc/$$/ns/pid) >> '{file}'; sh -c 'echo $$@$(stat -Lc %i /proc/$$/ns/pid) >> \"$0\"; exec sleep 300' '{file}' & wait",
        file = pids_file.display()
    );
    let mut server = server_running(dir.path(), &command, &pids_file);
    let pids = read_pids(&pids_file);
    assert_eq!(pids.len(), 2);
    kill(server.id(), nix::sys::signal::Signal::SIGKILL);
    server.wait().expect("server ends");
    // The command's root had a parent-death signal.
    assert!(
        wait_until(Duration::from_secs(10), || !pid_alive(pids[0])),
        "the command's root outlived the server"
    );
    // The next server start stops what is left (this one ends at once: its
    // stdin is empty, so no client ever initializes it).
    let _next = Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(["mcp", "--stateless"])
        .env("BASHTOOL_STATE_DIR", dir.path().join("state"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("next server");
    let gone = wait_until(Duration::from_secs(10), || !pid_alive(pids[1]));
    kill(pids[1], nix::sys::signal::Signal::SIGKILL);
    assert!(
        gone,
        "a grandchild of the killed server survived the next start"
    );
}
