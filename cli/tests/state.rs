//! With no per-user state directory, bashtool refuses clearly instead of
//! falling back to a shared place such as /tmp.

use std::process::Command;

#[test]
fn no_state_directory_is_a_clear_refusal_not_a_tmp_fallback() {
    let output = Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(["run", "--session", "demo", "--", "echo hi"])
        .env_remove("HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("BASHTOOL_STATE_DIR")
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "no per-user state directory: set BASHTOOL_STATE_DIR, XDG_STATE_HOME or HOME"
        ),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "nothing ran");
}
