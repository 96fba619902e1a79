//! A host that starts us with `SIGCHLD` ignored (inherited across exec: a
//! Python parent that set `SIG_IGN`, some supervisors) would have the
//! kernel reap every command itself, and each status would be lost. This
//! binary ignores `SIGCHLD` for its whole process before anything starts,
//! which is why these tests have a file of their own.

use std::sync::Once;

use bashtool_tests::{
    cwd_line, local_exec, new_session, run, session_tool, temp_dir, text, workspace,
};
use nix::sys::signal::{SigHandler, Signal, signal};
use serde_json::json;

fn ignore_sigchld() {
    static IGNORED: Once = Once::new();
    IGNORED.call_once(|| {
        // SAFETY: SIG_IGN installs no handler.
        #[allow(unsafe_code)]
        unsafe {
            signal(Signal::SIGCHLD, SigHandler::SigIgn).expect("ignore SIGCHLD");
        }
    });
}

#[tokio::test]
async fn a_stateless_command_keeps_its_exit_status_and_gets_sigchld_by_default() {
    ignore_sigchld();
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(&exec, "grep SigIgn /proc/self/status; exit 3").await;
    assert_eq!(result.exit_code, Some(3), "{result:?}");
    let stdout = text(&result);
    let mask = stdout
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no SigIgn line: {stdout:?}"));
    let sigchld = 1_u64 << (Signal::SIGCHLD as i32 - 1);
    assert_eq!(mask & sigchld, 0, "SIGCHLD still ignored: {stdout:?}");
    // A program that waits for its own child gets its status.
    let waited = run(&exec, "python3 -c 'import subprocess, sys; sys.exit(subprocess.run([\"sh\", \"-c\", \"exit 7\"]).returncode)'").await;
    assert_eq!(waited.exit_code, Some(7), "{waited:?}");
}

#[tokio::test]
async fn a_session_shell_that_exits_leaves_its_status() {
    ignore_sigchld();
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let result = tool
        .call(json!({ "command": "exit 5", "timeout": 20 }))
        .await;
    assert_eq!(
        result.text(),
        format!(
            "(no output)\n[the command ended the session's shell (exit, exec or a signal); the next call starts a new shell with the state saved last]\nexit code 5\n{}",
            cwd_line(&root)
        )
    );
}
