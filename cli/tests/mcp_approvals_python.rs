//! The approval cases through the official MCP Python SDK, a real
//! client with an elicitation callback (`python/approvals_client.py`),
//! against the real binary. The SDK is not a Debian package: the test runs
//! it from the venv `benches/run` installs (`target/bench-deps/client-venv`,
//! or `BASHTOOL_BENCH_DEPS`), or from `BASHTOOL_TEST_PYTHON` (which
//! `.ci/test` sets after installing the SDK in a venv), and skips with a
//! printed reason when none has `mcp`, except under CI, where it fails.

use std::path::PathBuf;
use std::process::Command;

/// A Python with the `mcp` package, if one is installed.
fn python_with_the_sdk() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("BASHTOOL_TEST_PYTHON").map(PathBuf::from),
        std::env::var_os("BASHTOOL_BENCH_DEPS")
            .map(|deps| PathBuf::from(deps).join("client-venv/bin/python3")),
        // The test binary is target/debug/deps/NAME.
        std::env::current_exe().ok().and_then(|exe| {
            Some(
                exe.parent()?
                    .parent()?
                    .parent()?
                    .join("bench-deps/client-venv/bin/python3"),
            )
        }),
        Some(PathBuf::from("python3")),
    ];
    candidates.into_iter().flatten().find(|python| {
        Command::new(python)
            .args(["-c", "import mcp"])
            .output()
            .is_ok_and(|output| output.status.success())
    })
}

#[test]
fn the_python_sdk_is_asked_and_only_an_allowing_answer_runs() {
    let Some(python) = python_with_the_sdk() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no Python with the MCP SDK under CI: .ci/test installs it and sets BASHTOOL_TEST_PYTHON"
        );
        eprintln!(
            "skipped: no Python with the official MCP SDK (`mcp`); install it with benches/run or \
             set BASHTOOL_TEST_PYTHON"
        );
        return;
    };
    let work = tempfile::tempdir().expect("work dir");
    let outside =
        bashtool_tests::outside_the_writable_roots(env!("CARGO_TARGET_TMPDIR"), "outside-");
    let remote = tempfile::tempdir().expect("remote dir");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/approvals_client.py"
    );
    let output = Command::new(&python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_bashtool"))
        .arg(work.path())
        .arg(outside.path())
        .arg(remote.path())
        .output()
        .expect("python runs");
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "ok\n");
}
