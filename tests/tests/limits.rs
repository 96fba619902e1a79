//! Resource limits per command with real cgroups and real processes, in
//! the default sandbox: 300 sleepers under `pids=64` and a 600 MB
//! allocation under `memory=256M`, for stateless, session and background
//! calls; the note the model gets; `details.limits`.
//!
//! Every load waits, before it starts, until the test has read the limit
//! back from the kernel (the command writes its `/proc/self/cgroup` to a
//! file and blocks on a FIFO the test then writes), and runs under a
//! watchdog that kills its cgroup if the test runs over. What is left and
//! what the kernel counted is read by the test from `/proc` and the
//! cgroup files, not through bashtool.
//!
//! Where this process cannot have the cgroups (no root, no delegated v2
//! subtree), each test prints why and passes without running.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bashtool_core::{
    CommandExec as _, CommandResult, Jobs as _, LimitSettings, ReadFrom, SpawnOptions,
};
use bashtool_env_local::{LocalConfig, LocalExec, Session, SessionConfig};
use bashtool_tests::cgroups::{Watchdog, counter, dir_with, dirs_of, members, read};
use bashtool_tests::{pid_alive, temp_dir, wait_until};

const WATCHDOG: Duration = Duration::from_secs(90);

fn limits(items: &[&str]) -> LimitSettings {
    LimitSettings::parse_items(items.iter().copied()).expect("valid limits")
}

fn config(dir: &Path, items: &[&str]) -> LocalConfig {
    LocalConfig {
        working_directory: dir.to_path_buf(),
        log_dir: Some(dir.join("logs")),
        kill_grace: Duration::from_millis(500),
        limits: limits(items),
        ..LocalConfig::default()
    }
}

fn skip() -> bool {
    bashtool_tests::cgroups::skip_here()
}

/// The command's side of the handshake: it writes its cgroup and waits
/// until the test has checked the limit.
struct Handshake {
    dir: PathBuf,
}

impl Handshake {
    fn new(dir: &Path) -> Self {
        for name in ["go.fifo", "end.fifo"] {
            nix::unistd::mkfifo(&dir.join(name), nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        }
        Self {
            dir: dir.to_path_buf(),
        }
    }

    /// What the command runs before its load.
    fn prefix(&self) -> String {
        format!(
            "cat /proc/self/cgroup > '{0}/cgroup.txt'; read -r _ < '{0}/go.fifo'; ",
            self.dir.display()
        )
    }

    /// The command's cgroup directories, once it wrote them.
    async fn cgroup_dirs(&self) -> Vec<PathBuf> {
        let file = self.dir.join("cgroup.txt");
        assert!(
            wait_until(Duration::from_secs(20), || {
                std::fs::read_to_string(&file).is_ok_and(|text| text.ends_with('\n'))
            })
            .await,
            "the command did not report its cgroup"
        );
        let dirs = dirs_of(&std::fs::read_to_string(&file).expect("read"));
        assert!(!dirs.is_empty(), "the command is in no cgroup of its own");
        dirs
    }

    /// What the command runs to wait for [`Self::end`].
    fn wait_for_end(&self) -> String {
        format!("; read -r _ < '{}/end.fifo'", self.dir.display())
    }

    /// Lets the command go on.
    async fn go(&self) {
        self.release("go.fifo").await;
    }

    /// Lets the command end ([`Self::wait_for_end`]).
    async fn end(&self) {
        self.release("end.fifo").await;
    }

    /// Writes FIFO `name` once the command has it open (a non-blocking
    /// open finds no reader until then).
    async fn release(&self, name: &str) {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let fifo = self.dir.join(name);
        let mut opened = None;
        wait_until(Duration::from_secs(20), || {
            opened = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo)
                .ok();
            opened.is_some()
        })
        .await;
        opened
            .expect("the command opens the fifo")
            .write_all(b"go\n")
            .expect("write the fifo");
    }
}

/// The 300 sleepers, each `&` refused past the limit (bash retries a
/// refused fork for a while, so the timeout ends the call).
const SLEEPERS: &str = "for i in $(seq 300); do sleep 1000 & done; wait";
/// 600 MB, written.
const ALLOCATION: &str = "python3 -c 'x = b\"x\" * (600 << 20); print(len(x))'";

/// Checks the pids limit is 64, releases the load, waits until the kernel
/// refused forks with 64 processes in the cgroup; returns the pids dir and
/// the members then.
async fn pids_load(handshake: &Handshake) -> (PathBuf, Vec<u32>, Watchdog) {
    let dirs = handshake.cgroup_dirs().await;
    let pids = dir_with(&dirs, "pids.max");
    assert_eq!(read(&pids.join("pids.max")), "64");
    let watchdog = Watchdog::start(dirs, WATCHDOG);
    handshake.go().await;
    assert!(
        wait_until(Duration::from_secs(30), || {
            counter(&pids.join("pids.events"), "max") > 0
                && read(&pids.join("pids.current")) == "64"
        })
        .await,
        "the cgroup did not fill up to its limit: pids.current {}",
        read(&pids.join("pids.current"))
    );
    let seen = members(&pids);
    assert!(seen.len() <= 64);
    (pids, seen, watchdog)
}

/// Checks the memory limit is 256 MiB and releases the allocation.
async fn memory_load(handshake: &Handshake) -> (PathBuf, Watchdog) {
    let dirs = handshake.cgroup_dirs().await;
    let (memory, file) = dirs
        .iter()
        .find_map(|dir| {
            ["memory.max", "memory.limit_in_bytes"]
                .into_iter()
                .find(|file| dir.join(file).exists())
                .map(|file| (dir.clone(), file))
        })
        .expect("a memory cgroup");
    assert_eq!(read(&memory.join(file)), (256_u64 << 20).to_string());
    let watchdog = Watchdog::start(dirs, WATCHDOG);
    handshake.go().await;
    (memory, watchdog)
}

fn oom_kills(memory: &Path) -> u64 {
    let v2 = memory.join("memory.events");
    if v2.exists() {
        counter(&v2, "oom_kill")
    } else {
        counter(&memory.join("memory.oom_control"), "oom_kill")
    }
}

/// The note of the pids limit is among `notes`, with a count of refused
/// forks of at least `at_least` (the kernel's count when the test last
/// read it; a shell that retries refused forks adds more until it is
/// stopped). Returns the count.
fn assert_pids_note(notes: &[String], prefix: &str, suffix: &str, at_least: u64) -> u64 {
    let counts: Vec<u64> = notes
        .iter()
        .filter_map(|note| {
            note.strip_prefix(prefix)?
                .strip_suffix(suffix)?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(counts.len(), 1, "{notes:?}");
    assert!(counts[0] >= at_least, "{} < {at_least}", counts[0]);
    counts[0]
}

const PIDS_NOTE: (&str, &str) = (
    "the command reached its limit of 64 processes (pids): ",
    " forks failed with 'Resource temporarily unavailable'; run fewer processes at once",
);

const MEMORY_NOTE: &str = "the command reached its memory limit of 256 MiB and was killed";

fn has_python() -> bool {
    let found = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "no python3 in CI: the allocation tests must run there"
        );
        eprintln!("skipped: no python3 to allocate with");
    }
    found
}

/// Nothing of `seen` is alive, and the cgroup holds nothing.
async fn nothing_left(seen: &[u32], dir: &Path) {
    assert!(
        wait_until(Duration::from_secs(10), || seen
            .iter()
            .all(|pid| !pid_alive(*pid)))
        .await,
        "left alive: {:?}",
        seen.iter()
            .filter(|pid| pid_alive(**pid))
            .collect::<Vec<_>>()
    );
    assert_eq!(members(dir), Vec::<u32>::new());
}

async fn foreground(exec: &impl bashtool_core::CommandExec, command: String) -> CommandResult {
    exec.spawn(
        &command,
        SpawnOptions::default().timeout(Duration::from_secs(4)),
    )
    .await
    .expect("the command starts")
}

#[tokio::test]
async fn stateless_300_sleepers_stop_at_pids_64_with_the_note() {
    if skip() {
        return;
    }
    let dir = temp_dir();
    let exec = LocalExec::new(config(dir.path(), &["pids=64"]));
    let handshake = Handshake::new(dir.path());
    let call = tokio::spawn({
        let exec = exec.clone();
        let command = format!("{}{SLEEPERS}", handshake.prefix());
        async move { foreground(&exec, command).await }
    });
    let (pids, seen, _watchdog) = pids_load(&handshake).await;
    let refused = counter(&pids.join("pids.events"), "max");
    let result = call.await.expect("join");
    assert!(result.timed_out);
    assert_pids_note(&result.notes, PIDS_NOTE.0, PIDS_NOTE.1, refused);
    nothing_left(&seen, &pids).await;
    exec.shutdown().await;
}

#[tokio::test]
async fn session_300_sleepers_stop_at_pids_64_with_the_note() {
    if skip() {
        return;
    }
    let dir = temp_dir();
    let session = Session::new(SessionConfig {
        local: config(dir.path(), &["pids=64"]),
        ..SessionConfig::default()
    })
    .expect("session");
    let handshake = Handshake::new(dir.path());
    let call = tokio::spawn({
        let session = session.clone();
        let command = format!("{}{SLEEPERS}", handshake.prefix());
        async move { foreground(&session, command).await }
    });
    let (pids, seen, _watchdog) = pids_load(&handshake).await;
    let refused = counter(&pids.join("pids.events"), "max");
    let result = call.await.expect("join");
    assert!(result.timed_out);
    assert_pids_note(&result.notes, PIDS_NOTE.0, PIDS_NOTE.1, refused);
    // The session's shell was stopped with the command: nothing is left in
    // its cgroup, and the next call gets a new shell there.
    nothing_left(&seen, &pids).await;
    let next = foreground(&session, "cat /proc/self/cgroup".to_owned()).await;
    assert_eq!(next.exit_code, Some(0));
    assert_eq!(next.notes, Vec::<String>::new());
    session.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_background_job_stops_at_pids_64_says_so_and_its_cgroup_goes() {
    if skip() {
        return;
    }
    let dir = temp_dir();
    let exec = LocalExec::new(config(dir.path(), &["pids=64"]));
    let handshake = Handshake::new(dir.path());
    let started = exec
        .spawn(
            &format!("{}{SLEEPERS}", handshake.prefix()),
            SpawnOptions::default().mode(bashtool_core::ExecMode::Background),
        )
        .await
        .expect("started");
    let job = started.background.expect("a job");
    let (pids, seen, _watchdog) = pids_load(&handshake).await;
    let refused = counter(&pids.join("pids.events"), "max");
    let dirs = handshake.cgroup_dirs().await;
    let info = exec.stop(&job.id).await.expect("stopped");
    assert!(!info.state.is_running());
    nothing_left(&seen, &pids).await;
    let output = std::fs::read_to_string(job.output_file.expect("output file")).expect("read");
    // The supervisor's note, just before its status line.
    let lines: Vec<String> = output
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    assert_eq!(
        lines.last().map(String::as_str),
        Some("[background job killed by signal SIGTERM]"),
        "{output}"
    );
    assert_pids_note(
        &lines[lines.len() - 2..lines.len() - 1],
        "[background job reached its limit of 64 processes (pids): ",
        " forks failed with 'Resource temporarily unavailable']",
        refused,
    );
    // The job's cgroup is removed once it ended.
    assert!(
        wait_until(Duration::from_secs(10), || dirs
            .iter()
            .all(|dir| !dir.exists()))
        .await,
        "left: {dirs:?}"
    );
    exec.shutdown().await;
}

#[tokio::test]
async fn stateless_600_mb_is_killed_at_memory_256m_with_the_note() {
    if skip() || !has_python() {
        return;
    }
    let dir = temp_dir();
    let exec = LocalExec::new(config(dir.path(), &["memory=256M"]));
    let handshake = Handshake::new(dir.path());
    let call = tokio::spawn({
        let exec = exec.clone();
        let command = format!("{}{ALLOCATION}", handshake.prefix());
        async move { foreground(&exec, command).await }
    });
    let (memory, _watchdog) = memory_load(&handshake).await;
    let result = call.await.expect("join");
    assert!(!result.timed_out);
    assert!(
        result.signal.as_deref() == Some("SIGKILL") || result.exit_code == Some(137),
        "{result:?}"
    );
    assert_eq!(oom_kills(&memory), 1);
    assert_eq!(result.notes, [MEMORY_NOTE]);
    exec.shutdown().await;
}

#[tokio::test]
async fn session_600_mb_is_killed_at_memory_256m_and_the_session_goes_on() {
    if skip() || !has_python() {
        return;
    }
    let dir = temp_dir();
    let session = Session::new(SessionConfig {
        local: config(dir.path(), &["memory=256M"]),
        ..SessionConfig::default()
    })
    .expect("session");
    foreground(&session, "export KEPT=yes".to_owned()).await;
    let handshake = Handshake::new(dir.path());
    let call = tokio::spawn({
        let session = session.clone();
        let command = format!("{}{ALLOCATION}", handshake.prefix());
        async move { foreground(&session, command).await }
    });
    let (memory, _watchdog) = memory_load(&handshake).await;
    let result = call.await.expect("join");
    assert_eq!(result.exit_code, Some(137), "{result:?}");
    assert_eq!(oom_kills(&memory), 1);
    assert_eq!(result.notes, [MEMORY_NOTE]);
    // The kernel killed the allocation, not the shell: the state is there.
    let next = foreground(&session, "echo $KEPT".to_owned()).await;
    assert_eq!(bashtool_tests::text(&next), "yes");
    assert_eq!(next.notes, Vec::<String>::new());
    session.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_background_600_mb_job_is_killed_at_memory_256m_and_says_so() {
    if skip() || !has_python() {
        return;
    }
    let dir = temp_dir();
    let exec = LocalExec::new(config(dir.path(), &["memory=256M"]));
    let handshake = Handshake::new(dir.path());
    // The job waits after the allocation, so that the test reads the
    // kernel's count before the job ends and its cgroup goes.
    let started = exec
        .spawn(
            &format!(
                "{}{ALLOCATION}{}",
                handshake.prefix(),
                handshake.wait_for_end()
            ),
            SpawnOptions::default().mode(bashtool_core::ExecMode::Background),
        )
        .await
        .expect("started");
    let job = started.background.expect("a job");
    let (memory, _watchdog) = memory_load(&handshake).await;
    assert!(wait_until(Duration::from_secs(30), || oom_kills(&memory) == 1).await);
    handshake.end().await;
    let info = exec
        .wait(
            &job.id,
            Duration::from_secs(30),
            tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect("waited");
    assert!(!info.state.is_running());
    let output = std::fs::read_to_string(job.output_file.expect("output file")).expect("read");
    assert!(
        output.contains(
            "[background job reached its memory limit of 256 MiB: the kernel killed 1 of its processes]"
        ),
        "{output}"
    );
    exec.shutdown().await;
}

#[tokio::test]
async fn an_interactive_600_mb_job_is_killed_at_memory_256m_and_its_transcript_says_so() {
    if skip() || !has_python() {
        return;
    }
    let dir = temp_dir();
    let exec = LocalExec::new(config(dir.path(), &["memory=256M"]));
    let handshake = Handshake::new(dir.path());
    let call = tokio::spawn({
        let exec = exec.clone();
        // `exec`: the allocation is the job's root, as `python3 app.py` is.
        let command = format!("{}exec {ALLOCATION}", handshake.prefix());
        async move {
            exec.spawn(
                &command,
                SpawnOptions::default()
                    .mode(bashtool_core::ExecMode::Interactive)
                    .timeout(Duration::from_secs(60)),
            )
            .await
            .expect("the command starts")
        }
    });
    // A process of the test's in the job's memory cgroup keeps it (and
    // the kernel's count) after the job ended, until the test lets go.
    let dirs = handshake.cgroup_dirs().await;
    let memory_dir = dirs
        .iter()
        .find(|dir| dir.join("memory.max").exists() || dir.join("memory.limit_in_bytes").exists())
        .expect("a memory cgroup")
        .clone();
    let mut holder = std::process::Command::new("sleep")
        .arg("120")
        .spawn()
        .expect("sleep");
    std::fs::write(memory_dir.join("cgroup.procs"), holder.id().to_string())
        .expect("the holder joins the job's cgroup");
    let (memory, _watchdog) = memory_load(&handshake).await;
    let result = call.await.expect("join");
    // Quiet while it waits for the test, the job may have been taken for
    // one that waits for input: then its end is read through the jobs port.
    let text = match &result.interactive {
        None => bashtool_tests::text(&result),
        Some(status) => {
            let info = exec
                .wait(
                    &status.job,
                    Duration::from_secs(30),
                    tokio_util::sync::CancellationToken::new(),
                )
                .await
                .expect("waited");
            assert!(!info.state.is_running());
            exec.read(&status.job, ReadFrom::Cursor(0), 1 << 20)
                .await
                .expect("read")
                .text
        }
    };
    assert_eq!(oom_kills(&memory), 1);
    assert!(
        text.trim_end().ends_with(&format!("[{MEMORY_NOTE}]")),
        "{text:?}"
    );
    // The job's cgroup is removed once it ended and emptied (looked at
    // again when the next command's cgroup is given back).
    holder.kill().expect("kill the holder");
    holder.wait().expect("reap the holder");
    foreground(&exec, "true".to_owned()).await;
    assert!(
        wait_until(Duration::from_secs(10), || dirs
            .iter()
            .all(|dir| !dir.exists()))
        .await,
        "left: {dirs:?}"
    );
    exec.shutdown().await;
}

#[tokio::test]
async fn a_busy_loop_is_slowed_at_cpu_0_1_and_the_note_says_so() {
    if skip() {
        return;
    }
    let dir = temp_dir();
    let exec = LocalExec::new(config(dir.path(), &["cpu=0.1"]));
    // A bounded loop: the test checks the quota (and starts the
    // watchdog) before it runs, through the same handshake.
    let handshake = Handshake::new(dir.path());
    let call = tokio::spawn({
        let exec = exec.clone();
        let command = format!(
            "{}i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
            handshake.prefix()
        );
        async move {
            exec.spawn(
                &command,
                SpawnOptions::default().timeout(Duration::from_secs(60)),
            )
            .await
            .expect("the command starts")
        }
    });
    let dirs = handshake.cgroup_dirs().await;
    let cpu = dir_with(&dirs, "cpu.stat");
    let quota = if cpu.join("cpu.max").exists() {
        read(&cpu.join("cpu.max"))
    } else {
        read(&cpu.join("cpu.cfs_quota_us"))
    };
    assert!(quota == "10000" || quota == "10000 100000", "{quota}");
    let _watchdog = Watchdog::start(dirs, WATCHDOG);
    handshake.go().await;
    let result = call.await.expect("join");
    assert_eq!(result.exit_code, Some(0), "{result:?}");
    // The stateless call's cgroup is kept for the next call: its counter
    // is still there to read.
    assert!(counter(&cpu.join("cpu.stat"), "nr_throttled") > 0);
    assert_eq!(result.notes.len(), 1, "{:?}", result.notes);
    assert!(
        result.notes[0].starts_with(
            "the command was slowed down by its cpu limit of 0.1 CPUs: held back for "
        ),
        "{:?}",
        result.notes
    );
    exec.shutdown().await;
}

#[tokio::test]
async fn details_list_the_limits_in_force() {
    if skip() {
        return;
    }
    let dir = temp_dir();
    let exec = LocalExec::new(config(dir.path(), &["pids=64", "memory=1G", "cpu=1.5"]));
    let tool = bashtool_core::BashTool::new(
        bashtool_core::ToolConfig::default(),
        std::sync::Arc::new(exec.clone()),
    );
    let result = tool.call(serde_json::json!({"command": "true"})).await;
    let limits = serde_json::to_value(&result.details.limits).expect("json");
    assert_eq!(limits["pids"], 64);
    assert_eq!(limits["memory"], 1_u64 << 30);
    assert_eq!(limits["cpu"], 1.5);
    assert!(
        limits["enforced_by"]
            .as_str()
            .is_some_and(|text| text.starts_with("cgroup v")),
        "{limits}"
    );
    // The default: a pids limit of 4096 that says it is the default.
    let default = LocalExec::new(config(dir.path(), &[]));
    let info = default.environment_info().limits.expect("limits");
    assert_eq!(info.pids, Some(bashtool_core::DEFAULT_PIDS_LIMIT));
    assert!(info.pids_is_default);
    assert_eq!(info.memory, None);
    exec.shutdown().await;
    default.shutdown().await;
}

#[tokio::test]
async fn limits_turned_off_give_commands_no_cgroup() {
    if skip() {
        return;
    }
    let dir = temp_dir();
    let exec = LocalExec::new(config(dir.path(), &["pids=off"]));
    let result = foreground(&exec, "cat /proc/self/cgroup".to_owned()).await;
    let own = std::fs::read_to_string("/proc/self/cgroup").expect("own cgroup");
    // Inside the sandbox's namespaces the paths are the host's: the same
    // cgroups as this test process.
    assert_eq!(bashtool_tests::text(&result), own.trim_end());
    assert_eq!(
        exec.environment_info().limits,
        Some(bashtool_core::LimitsInfo::default())
    );
    exec.shutdown().await;
}
