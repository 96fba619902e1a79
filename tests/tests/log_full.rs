//! A log that cannot be written (a full disk) degrades to "no log file"
//! with a note, never to a failed call. The disk is "full" through
//! RLIMIT_FSIZE, which is per process: hence its own test binary.

use std::sync::Arc;

use bashtool_core::{BashTool, ToolConfig};
use bashtool_tests::{local_exec, run, temp_dir};
use nix::sys::resource::{Resource, setrlimit};
use nix::sys::signal::{SigHandler, Signal, signal};

#[tokio::test]
async fn a_full_disk_means_no_log_file_and_a_note() {
    let dir = temp_dir();
    // SAFETY: ignoring a signal installs no handler code; writes past the
    // limit then fail with EFBIG instead of killing the test.
    #[allow(unsafe_code)]
    unsafe {
        signal(Signal::SIGXFSZ, SigHandler::SigIgn).expect("ignore SIGXFSZ");
    }
    setrlimit(Resource::RLIMIT_FSIZE, 100_000, 100_000).expect("limit file size");
    let exec = local_exec(dir.path());
    let result = run(&exec, "seq 1 200000").await;
    assert_eq!(result.exit_code, Some(0));
    assert_eq!(result.output.total_lines(), 200_000);
    assert_eq!(result.log_file, None);
    assert!(
        result
            .output
            .log_error()
            .is_some_and(|error| error.starts_with("writing the log file failed")),
        "{:?}",
        result.output.log_error()
    );
    let tool = BashTool::new(ToolConfig::default(), Arc::new(exec));
    let result = tool
        .call(serde_json::json!({"command": "seq 1 200000"}))
        .await;
    assert!(!result.is_error);
    assert!(
        result
            .text()
            .contains("[writing the log file failed: File too large (os error 27); no log file]"),
        "{}",
        result.text()
    );
}
