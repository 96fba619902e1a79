//! `bashtool mcp` killed from outside leaves nothing running: SIGHUP stops
//! its commands like SIGTERM; after SIGKILL (which cannot be caught) the
//! command's root dies with it (parent-death signal) and the next server
//! start stops what is left. Liveness is read from /proc by the test.

use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use bashtool_tests::{
    DEATH_LIMIT, kill_all, killed_survivors, pid_alive, qualified_pid, read_pids, wait_until,
};

/// A server with a call running `command`; returns it and the two pids
/// the command wrote to `pids` (one a line).
async fn server_running(state: &Path, command: &str, pids: &Path) -> (Child, Vec<u32>) {
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
    let pids = read_pids(pids, 2).await;
    (server, pids)
}

/// A command that writes its pid and its child's to `file`, and waits.
fn tree_command(file: &Path) -> String {
    format!(
        "echo {pid} >> '{file}'; sh -c 'echo {pid} >> \"$0\"; exec sleep 300' '{file}' & wait",
        pid = qualified_pid("$$"),
        file = file.display()
    )
}

fn signal(pid: u32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).expect("signal");
}

#[tokio::test]
async fn sighup_stops_the_servers_commands() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pids_file = dir.path().join("pids");
    let (mut server, pids) =
        server_running(dir.path(), &tree_command(&pids_file), &pids_file).await;
    signal(server.id(), nix::sys::signal::Signal::SIGHUP);
    server.wait().expect("server ends");
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new(),
        "outlived SIGHUP to the server"
    );
}

#[tokio::test]
async fn after_sigkill_nothing_survives_the_next_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pids_file = dir.path().join("pids");
    let (mut server, pids) =
        server_running(dir.path(), &tree_command(&pids_file), &pids_file).await;
    assert_eq!(pids.len(), 2);
    signal(server.id(), nix::sys::signal::Signal::SIGKILL);
    server.wait().expect("server ends");
    // The command's root had a parent-death signal.
    assert!(
        wait_until(DEATH_LIMIT, || !pid_alive(pids[0])).await,
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
    let gone = wait_until(DEATH_LIMIT, || !pid_alive(pids[1])).await;
    kill_all(&pids[1..]);
    assert!(
        gone,
        "a grandchild of the killed server survived the next start"
    );
}
