//! The CLI leaves nothing behind: leftovers that ignore SIGTERM are killed
//! before `call` exits, a signal to `call` or `run` stops the command's
//! tree, and a `set -m` job in its own process group is stopped too.
//! Liveness is read from /proc by the test.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use bashtool_tests::{DEATH_LIMIT, call_json, echo_pid, killed_survivors, pids_in};

/// `bashtool call` with `input`, its state in `state`, a short kill grace.
fn call(input: &serde_json::Value, state: &std::path::Path) -> serde_json::Value {
    let mut call = Command::new(env!("CARGO_BIN_EXE_bashtool"));
    call.args(["call", "--kill-grace", "0.5"])
        .env("BASHTOOL_STATE_DIR", state);
    call_json(call, &input.to_string()).0
}

#[tokio::test]
async fn a_leftover_that_ignores_sigterm_dies_before_call_exits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let command = format!(
        "mkfifo ready; sh -c 'trap \"\" TERM; echo > ready; exec sleep 300' & {}; read _ < ready",
        echo_pid("$!")
    );
    let result = call(&serde_json::json!({"command": command}), dir.path());
    let text = result["content"][0]["text"].as_str().expect("text");
    let pids = pids_in(text);
    assert_eq!(pids.len(), 1, "{text}");
    // `call` has exited: the SIGKILL after the grace was sent before (no
    // one else would send it now), so the process dies.
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new(),
        "the leftover outlived bashtool call"
    );
    assert!(text.contains("1 leftover process"), "{text}");
}

#[tokio::test]
async fn a_set_m_job_in_its_own_group_is_stopped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let result = call(
        &serde_json::json!({"command": format!("set -m; sleep 300 & {}", echo_pid("$!"))}),
        dir.path(),
    );
    let text = result["content"][0]["text"].as_str().expect("text");
    let pids = pids_in(text);
    assert_eq!(pids.len(), 1, "{text}");
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new(),
        "{text}"
    );
}

#[tokio::test]
async fn sigterm_to_run_stops_the_command_tree() {
    for signal in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGHUP,
        nix::sys::signal::Signal::SIGINT,
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut run = Command::new(env!("CARGO_BIN_EXE_bashtool"))
            .args(["run", "--"])
            .arg(format!(
                "sh -c '{}; exec sleep 300' & {}; wait",
                echo_pid("$$"),
                echo_pid("$!")
            ))
            .env("BASHTOOL_STATE_DIR", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run");
        let mut stdout = BufReader::new(run.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the first pid");
        let pids = pids_in(&line);
        assert_eq!(pids.len(), 1, "{line}");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.id() as i32), signal)
            .expect("signal bashtool");
        let status = run.wait().expect("run ends");
        assert!(!status.success(), "{signal}: {status:?}");
        assert_eq!(
            killed_survivors(&pids, DEATH_LIMIT).await,
            Vec::<u32>::new(),
            "{signal}"
        );
    }
}
