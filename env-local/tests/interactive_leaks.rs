//! Fifty interactive jobs at once, then stopped, leave no fd and no thread
//! behind. Alone in its binary: other tests running in parallel would open
//! fds and threads of their own.

mod common;

use std::path::Path;
use std::time::Duration;

use bashtool_env_local::{InteractiveJob, InteractiveOptions, InteractiveState};
use tokio::time::Instant;

const JOBS: usize = 50;
const PATIENCE: Duration = Duration::from_secs(60);

fn count_entries(path: &str) -> usize {
    std::fs::read_dir(path).map_or(0, Iterator::count)
}

#[tokio::test]
async fn fifty_jobs_at_once_leak_no_fd_and_no_thread() {
    // Warm up what is created once per process (the runtime's drivers,
    // lazily opened files), so the counts compare like with like.
    let mut warm_up = start("true");
    warm_up.stop().await;
    drop(warm_up);
    let fds_before = count_entries("/proc/self/fd");
    let threads_before = count_entries("/proc/self/task");

    let mut jobs: Vec<InteractiveJob> = (0..JOBS).map(|_| start("read line")).collect();
    let deadline = Instant::now() + PATIENCE;
    let mut pids = Vec::new();
    for job in &mut jobs {
        let snapshot = job.wait_until(deadline).await;
        assert_eq!(
            snapshot.state,
            InteractiveState::AwaitingInput,
            "{snapshot:?}"
        );
        pids.push(job.pid());
    }
    assert!(count_entries("/proc/self/fd") >= fds_before + JOBS * 2);
    for job in &mut jobs {
        let snapshot = job.stop().await;
        assert!(
            matches!(snapshot.state, InteractiveState::Exited(_)),
            "{snapshot:?}"
        );
    }
    drop(jobs);
    tokio::task::yield_now().await;

    assert_eq!(count_entries("/proc/self/fd"), fds_before, "fds leaked");
    assert_eq!(
        count_entries("/proc/self/task"),
        threads_before,
        "threads leaked"
    );
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "job root {pid} still exists (unreaped or alive)"
        );
    }
}

fn start(command: &str) -> InteractiveJob {
    common::start_job(command, &[], InteractiveOptions::default())
}
