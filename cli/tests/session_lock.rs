//! Two `bashtool run --session NAME` processes at once must not lose
//! updates (issue 18 item 9): the second waits for the first.

use std::process::{Command, Output};

fn run_in_session(state_dir: &std::path::Path, command: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(["run", "--session", "counter", "--", command])
        .env("BASHTOOL_STATE_DIR", state_dir)
        .output()
        .expect("bashtool run")
}

#[test]
fn concurrent_runs_on_one_session_lose_no_update() {
    let state = tempfile::tempdir().expect("temp dir");
    let processes = 6;
    let children: Vec<std::process::Child> = (0..processes)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_bashtool"))
                .args(["run", "--session", "counter", "--", "x=$((x+1)); export x"])
                .env("BASHTOOL_STATE_DIR", state.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("bashtool run")
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().expect("wait");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let result = run_in_session(state.path(), "echo \"x=$x\"");
    assert!(
        String::from_utf8_lossy(&result.stdout).starts_with(&format!("x={processes}\n")),
        "{}",
        String::from_utf8_lossy(&result.stdout)
    );
    // The lock file is private.
    let lock = state.path().join("sessions/counter.sh.lock");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&lock).expect("lock file").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}
