//! A command that holds bashtool's lock files (`flock` works on any file it
//! can open, even read-only) stalls nothing: calls and background starts
//! return, and what could not be done under the lock says so.

use std::io::BufRead as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bashtool_core::{CommandExec, CommandResult, ExecMode, SpawnOptions};
use bashtool_env_local::{JobStore, LocalConfig, LocalExec, RecordedJobs};
use bashtool_tests::{temp_dir, test_config, text};

/// Far below how long the holders keep their locks (300 s), far above what
/// a call that does not wait for them takes.
const DEADLINE: Duration = Duration::from_secs(20);

/// A process holding an exclusive `flock` on `path` until it is killed;
/// returns once it holds the lock.
fn hold(path: &Path) -> Holder {
    // In a group of its own: killing the group ends `flock` and its
    // `sleep`.
    let mut child = Command::new("flock")
        // -o: only `flock` holds the lock, not the command it runs, so
        // the lock is free once `flock` is reaped.
        .args(["-x", "-o"])
        .arg(path)
        .args(["-c", "echo held; exec sleep 300"])
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("flock");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    assert_eq!(line, "held\n");
    Holder(child)
}

/// Kills its lock holder when dropped, whatever the test's outcome.
struct Holder(Child);

impl Drop for Holder {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// A private directory, as bashtool makes them.
fn private_dir(path: &Path) {
    std::fs::create_dir_all(path).expect("mkdir");
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .expect("chmod");
}

struct Outcome {
    background: CommandResult,
    call: CommandResult,
    prune: String,
}

#[test]
fn calls_and_background_starts_do_not_wait_for_locks_a_command_holds() {
    let dir = temp_dir();
    let records = dir.path().join("state");
    let logs = dir.path().join("logs");
    private_dir(&records);
    private_dir(&logs);
    let _holders = [hold(&records.join("jobs.lock")), hold(&logs.join(".lock"))];
    // The calls run on a runtime of their own, on one thread: a call that
    // blocked its thread in the kernel would stall that runtime whole (as
    // it stalled a server's workers), and the deadline below, in real
    // time, would pass.
    let (sender, receiver) = mpsc::channel();
    let config = LocalConfig {
        job_records: Some(records.clone()),
        ..test_config(dir.path())
    };
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let exec = LocalExec::new(config);
            let background = exec
                // A job that ends at once: what is under test is its start.
                .spawn("true", SpawnOptions::default().mode(ExecMode::Background))
                .await
                .expect("the job starts");
            let call = exec
                .spawn(
                    "echo hi",
                    SpawnOptions::default().timeout(Duration::from_secs(10)),
                )
                .await
                .expect("the call runs");
            let prune = RecordedJobs::new(JobStore::new(records), Duration::from_secs(1))
                .prune()
                .map_or_else(|error| error.to_string(), |count| format!("pruned {count}"));
            exec.shutdown().await;
            let _ = sender.send(Outcome {
                background,
                call,
                prune,
            });
        });
    });
    let outcome = receiver
        .recv_timeout(DEADLINE)
        .expect("the calls returned while the locks were held");
    let lock = dir.path().join("state/jobs.lock");
    let refused = format!(
        "could not read or write `{}`: another process has held this lock for more than 2s, so nothing was changed",
        lock.display()
    );
    assert!(outcome.background.background.is_some());
    assert_eq!(
        outcome.background.notes,
        [format!(
            "the job runs, but other bashtool processes (`bashtool jobs`) will not see it: {refused}"
        )]
    );
    assert_eq!(text(&outcome.call), "hi");
    assert_eq!(outcome.prune, refused);
}
