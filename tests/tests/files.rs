//! Where bashtool keeps its files: private to the user, verified before
//! use, capped across processes; nothing another user planted is trusted.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::time::Duration;

use bashtool_core::{CommandExec, SpawnOptions};
use bashtool_env_local::{LocalConfig, LocalExec, LogDir, Session, SessionConfig};
use bashtool_tests::{temp_dir, text};

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).expect("stat").mode() & 0o777
}

async fn run(exec: &LocalExec, command: &str) -> bashtool_core::CommandResult {
    exec.spawn(
        command,
        SpawnOptions::default().timeout(Duration::from_secs(20)),
    )
    .await
    .expect("runs")
}

#[tokio::test]
async fn logs_are_private_files_in_a_private_directory() {
    let dir = temp_dir();
    let logs = dir.path().join("state/logs");
    let exec = LocalExec::new(LocalConfig {
        working_directory: dir.path().to_path_buf(),
        log_dir: Some(logs.clone()),
        ..LocalConfig::default()
    });
    let result = run(&exec, "echo secret output").await;
    let log = result.log_file.expect("a log file");
    assert_eq!(mode(&logs), 0o700);
    assert_eq!(mode(&log), 0o600);
}

#[tokio::test]
async fn a_planted_symlink_log_directory_is_refused_and_the_call_still_runs() {
    let dir = temp_dir();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let logs = dir.path().join("logs");
    std::os::unix::fs::symlink(&elsewhere, &logs).expect("symlink");
    let exec = LocalExec::new(LocalConfig {
        working_directory: dir.path().to_path_buf(),
        log_dir: Some(logs),
        ..LocalConfig::default()
    });
    let result = run(&exec, "echo hi").await;
    assert_eq!(text(&result), "hi");
    assert_eq!(result.log_file, None);
    assert_eq!(
        std::fs::read_dir(&elsewhere).expect("list").count(),
        0,
        "nothing was written through the symlink"
    );
}

/// Makes `path` look `hours` old.
fn age(path: &Path, hours: u32) {
    let status = std::process::Command::new("touch")
        .arg("-d")
        .arg(format!("{hours} hours ago"))
        .arg(path)
        .status()
        .expect("touch");
    assert!(status.success());
}

#[test]
fn the_caps_hold_across_processes() {
    let dir = temp_dir();
    let logs = dir.path().join("logs");
    // Another process's logs: old, and more than the cap.
    std::fs::create_dir(&logs).expect("mkdir");
    std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    for index in 0..10 {
        let path = logs.join(format!("{index:05}-other.log"));
        std::fs::write(&path, "x").expect("write");
        age(&path, 10 - index);
    }
    let ancient = logs.join("job-00001-old.out");
    std::fs::write(&ancient, "old job").expect("write");
    age(&ancient, 24 * 8);
    let ours = LogDir::new(logs.clone(), 3, u64::MAX);
    let (mut writer, handle) = ours.create_log("echo new").expect("log");
    std::io::Write::write_all(&mut writer, b"new").expect("write");
    drop(writer);
    let mut left: Vec<String> = std::fs::read_dir(&logs)
        .expect("list")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| {
            Path::new(name)
                .extension()
                .is_some_and(|extension| extension == "log" || extension == "out")
        })
        .collect();
    left.sort();
    // The newest of the other process's logs are kept up to the cap; ours
    // is new; the week-old job output is gone.
    let ours = handle
        .path
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert_eq!(ours, "00001-echo-new.log");
    assert_eq!(
        left,
        ["00001-echo-new.log", "00008-other.log", "00009-other.log"]
    );
}

/// The logs and job outputs in `logs`, by name.
fn logs_and_outputs(logs: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(logs)
        .expect("list")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| {
            Path::new(name)
                .extension()
                .is_some_and(|extension| extension == "log" || extension == "out")
        })
        .collect();
    names.sort();
    names
}

/// Another process's files in `logs` (created 0700 if missing): `(name,
/// bytes, hours old)`.
fn plant(logs: &Path, files: &[(&str, usize, u32)]) {
    std::fs::create_dir_all(logs).expect("mkdir");
    std::fs::set_permissions(logs, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    for &(name, bytes, hours) in files {
        let path = logs.join(name);
        std::fs::write(&path, "x".repeat(bytes)).expect("write");
        age(&path, hours);
    }
}

fn capped_config(dir: &Path, max_log_files: usize, max_log_bytes: u64) -> LocalConfig {
    LocalConfig {
        working_directory: dir.to_path_buf(),
        log_dir: Some(dir.join("logs")),
        max_log_files,
        max_log_bytes,
        kill_grace: Duration::from_secs(1),
        ..LocalConfig::default()
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned()
}

#[tokio::test]
async fn job_outputs_count_toward_the_file_cap_with_logs_and_a_running_jobs_output_stays() {
    let dir = temp_dir();
    let logs = dir.path().join("logs");
    // A silent job whose output is the oldest file, older than a week.
    let first = LocalExec::new(capped_config(dir.path(), 3, u64::MAX));
    let job = first
        .spawn(
            "sleep 300",
            SpawnOptions::default().mode(bashtool_core::ExecMode::Background),
        )
        .await
        .expect("starts")
        .background
        .expect("a job");
    let running = job.output_file.expect("output file");
    age(&running, 24 * 8);
    plant(
        &logs,
        &[
            ("job-00901-a.out", 10, 72),
            ("00902-b.log", 10, 48),
            ("job-00903-c.out", 10, 24),
        ],
    );
    // Another environment (another process would do the same) prunes
    // before its first file: four files, a cap of three with room for the
    // new one, and the running job's output is not removed.
    let second = LocalExec::new(capped_config(dir.path(), 3, u64::MAX));
    let log = run(&second, "echo new").await.log_file.expect("a log");
    let mut expected = vec![
        file_name(&log),
        "job-00903-c.out".to_owned(),
        file_name(&running),
    ];
    expected.sort();
    assert_eq!(logs_and_outputs(&logs), expected);
    bashtool_core::Jobs::stop(&first, &job.id)
        .await
        .expect("stopped");
}

#[tokio::test]
async fn job_outputs_count_toward_the_size_cap_with_logs() {
    let dir = temp_dir();
    let logs = dir.path().join("logs");
    plant(
        &logs,
        &[
            ("job-00901-a.out", 60_000, 72),
            ("00902-b.log", 30_000, 48),
            ("job-00903-c.out", 30_000, 24),
        ],
    );
    // 120 000 bytes against a cap of 100 000: the oldest goes, a job's
    // output like any log.
    let exec = LocalExec::new(capped_config(dir.path(), 100, 100_000));
    let log = run(&exec, "echo new").await.log_file.expect("a log");
    let mut expected = vec![
        "00902-b.log".to_owned(),
        file_name(&log),
        "job-00903-c.out".to_owned(),
    ];
    expected.sort();
    assert_eq!(logs_and_outputs(&logs), expected);
}

#[tokio::test]
async fn a_planted_session_snapshot_is_never_sourced() {
    let dir = temp_dir();
    let sessions = dir.path().join("sessions");
    std::fs::create_dir(&sessions).expect("mkdir");
    std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let snapshot = sessions.join("demo.sh");
    let marker = dir.path().join("planted-code-ran");
    std::fs::write(
        &snapshot,
        format!(
            "touch '{}'\n# bashtool snapshot complete 99\n",
            marker.display()
        ),
    )
    .expect("write");
    // Writable by others: as if planted or tampered with.
    std::fs::set_permissions(&snapshot, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let session = Session::with_snapshot_path(
        SessionConfig {
            local: LocalConfig {
                working_directory: dir.path().to_path_buf(),
                log_dir: Some(dir.path().join("logs")),
                ..LocalConfig::default()
            },
            ..SessionConfig::default()
        },
        &snapshot,
    )
    .expect("session");
    let result = session
        .spawn(
            "echo ok",
            SpawnOptions::default().timeout(Duration::from_secs(20)),
        )
        .await
        .expect("runs");
    assert_eq!(text(&result), "ok");
    assert!(!marker.exists(), "the planted snapshot ran");
    session.shutdown().await.expect("saved");
    // The state saved now is private.
    assert_eq!(mode(&snapshot), 0o600);
}
