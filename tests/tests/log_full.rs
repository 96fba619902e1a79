//! A log that cannot be written (a full disk) degrades to "no log file"
//! with a note, never to a failed call. The disk is "full" through
//! RLIMIT_FSIZE, which is per process: hence its own test binary. The
//! limit is the soft one, lowered only while the test runs: the test
//! harness writes its report to the same stdout, which may be a file
//! already larger than the limit (CI's log), and would lose it.

use std::sync::Arc;

use bashtool_core::{BashTool, ToolConfig};
use bashtool_tests::{local_exec, run, temp_dir};
use nix::sys::resource::{Resource, getrlimit, setrlimit};
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
    let _limit = FileSizeLimit::lower_to(100_000);
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

/// The soft RLIMIT_FSIZE lowered until dropped (also when the test
/// panics, before the harness reports it).
struct FileSizeLimit {
    soft: u64,
    hard: u64,
}

impl FileSizeLimit {
    fn lower_to(bytes: u64) -> Self {
        let (soft, hard) = getrlimit(Resource::RLIMIT_FSIZE).expect("file size limit");
        setrlimit(Resource::RLIMIT_FSIZE, bytes, hard).expect("limit file size");
        Self { soft, hard }
    }
}

impl Drop for FileSizeLimit {
    fn drop(&mut self) {
        let _ = setrlimit(Resource::RLIMIT_FSIZE, self.soft, self.hard);
    }
}
