//! Log files: one per call, the command first, stream headers, caps, and
//! degrading to no log instead of failing.

use std::time::Duration;

use bashtool_core::SpawnOptions;
use bashtool_env_local::{LocalConfig, LocalExec};
use bashtool_tests::{local_exec, run, run_with, temp_dir, test_config, text};

#[tokio::test]
async fn each_call_has_a_log_with_the_command_and_stream_headers() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(&exec, "echo one; echo two >&2; echo three").await;
    let log_file = result.log_file.expect("a log file");
    assert!(log_file.starts_with(dir.path().join("logs")));
    let log = std::fs::read_to_string(&log_file).expect("read");
    // stdout and stderr are different pipes: their relative order is what
    // arrived first, so only the shape is fixed.
    assert!(
        log.starts_with("$ echo one; echo two >&2; echo three\n"),
        "{log}"
    );
    assert!(log.contains("stdout:\none\n"), "{log}");
    assert!(log.contains("stderr:\ntwo\n"), "{log}");
    let other = run(&exec, "echo again").await.log_file.expect("a log file");
    assert_ne!(other, log_file);
}

#[tokio::test]
async fn a_silent_command_creates_no_log_file() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(&exec, "true").await;
    assert_eq!(result.log_file, None);
    assert!(result.notes.is_empty(), "{:?}", result.notes);
}

#[tokio::test]
async fn the_log_keeps_every_line_when_the_model_text_is_shortened() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(&exec, "seq 1 100000").await;
    assert!(!result.output.is_complete());
    let log = std::fs::read_to_string(result.log_file.expect("a log")).expect("read");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2 + 100_000);
    assert_eq!(lines[2], "1");
    assert_eq!(lines[100_001], "100000");
}

#[tokio::test]
async fn log_count_is_capped_removing_the_oldest() {
    let dir = temp_dir();
    let exec = LocalExec::new(LocalConfig {
        max_log_files: 3,
        ..test_config(dir.path())
    });
    let mut logs = Vec::new();
    for number in 0..5 {
        logs.push(
            run(&exec, &format!("echo {number}"))
                .await
                .log_file
                .expect("log"),
        );
    }
    let existing: Vec<bool> = logs.iter().map(|path| path.exists()).collect();
    assert_eq!(existing, [false, false, true, true, true]);
}

#[tokio::test]
async fn log_size_is_capped() {
    let dir = temp_dir();
    let exec = LocalExec::new(LocalConfig {
        max_log_bytes: 10_000,
        ..test_config(dir.path())
    });
    let first = run(&exec, "seq 1 10000").await;
    let path = first.log_file.clone().expect("log");
    let log = std::fs::read_to_string(&path).expect("read");
    assert!(log.len() <= 10_000, "{}", log.len());
    assert_eq!(first.output.total_lines(), 10_000);
    // Its start and its end are kept: the end is where errors are.
    assert!(log.starts_with("$ seq 1 10000\nstdout:\n1\n2\n"), "{log}");
    assert!(log.ends_with("\n9999\n10000\n"), "{log}");
    assert!(
        first
            .notes
            .iter()
            .any(|note| note.starts_with("the output was over the log file's size cap of 9.8 KiB")),
        "{:?}",
        first.notes
    );
    // Logs over the total cap push the oldest out.
    let second = run(&exec, "seq 1 10000").await;
    let third = run(&exec, "echo small").await;
    assert!(!path.exists());
    assert!(second.log_file.expect("log").exists());
    assert!(third.log_file.expect("log").exists());
}

#[tokio::test]
async fn an_unwritable_log_directory_means_no_log_not_a_failure() {
    let dir = temp_dir();
    std::fs::write(dir.path().join("file"), "").expect("write");
    let exec = LocalExec::new(LocalConfig {
        log_dir: Some(dir.path().join("file").join("logs")),
        ..test_config(dir.path())
    });
    let result = run_with(
        &exec,
        "echo fine",
        SpawnOptions::default().timeout(Duration::from_secs(10)),
    )
    .await
    .expect("the call still runs");
    assert_eq!(result.exit_code, Some(0));
    assert_eq!(text(&result), "fine");
    assert_eq!(result.log_file, None);
    let error = result
        .output
        .log_error()
        .expect("the log error is reported");
    assert!(
        error.starts_with("writing the log file failed: could not create a log file in "),
        "{error}"
    );
}

#[tokio::test]
async fn the_model_is_told_which_lines_a_capped_log_keeps_and_they_are_there() {
    let dir = temp_dir();
    let exec = std::sync::Arc::new(LocalExec::new(LocalConfig {
        max_log_file_bytes: 16 * 1024,
        ..test_config(dir.path())
    }));
    let tool = bashtool_core::BashTool::new(bashtool_core::ToolConfig::default(), exec);
    let result = tool
        .call(serde_json::json!({"command": "seq 1 20000; echo 'error: the last line'; exit 3"}))
        .await;
    let log = result.details.log_file.clone().expect("a log");
    let text = result.text().replace(&log, "LOG");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[lines.len() - 3..],
        [
            "[the output was over the log file's size cap of 16.0 KiB, so it keeps lines 1-527 and 18641-20003 with a marker line between them: line N >= 18641 is line N-18112 of the file]",
            "exit code 3",
            "[output shortened: the output had 20001 lines (106.4 KiB), and the log LOG keeps its first and last parts; read parts of it with sed -n 'FROM,TOp' LOG or search it with grep -n PATTERN LOG]",
        ]
    );
    // What the note says holds in the file.
    let file = std::fs::read_to_string(&log).expect("read");
    let file_lines: Vec<&str> = file.lines().collect();
    assert_eq!(
        file_lines[..3],
        [
            "$ seq 1 20000; echo 'error: the last line'; exit 3",
            "stdout:",
            "1"
        ]
    );
    // Output line N is line N+2 of the log (after `$ command` and `stdout:`).
    assert_eq!(file_lines[18641 - 18112 - 1], "18639");
    assert_eq!(
        file_lines[20002 - 18112 - 1..],
        ["20000", "error: the last line"]
    );
}
