//! The tree kill converges on a command that keeps forking while it is
//! being stopped: every process it started is gone afterwards. (A real
//! fork bomb is not run here: as root `ulimit -u` does not hold and it
//! would fill the process table; this is a bounded storm of a few thousand
//! detached children, forked as fast as bash can.)

use std::time::Duration;

use bashtool_core::SpawnOptions;
use bashtool_tests::{kill_all, local_exec, pid_alive, run_with, temp_dir, wait_until};

/// The processes whose environment carries `tag`, read from /proc by the
/// test itself.
fn tagged(tag: &str) -> Vec<u32> {
    let needle = format!("BT_STORM_TAG={tag}");
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|&byte| byte == 0)
                    .any(|entry| entry == needle.as_bytes())
            }) && pid_alive(*pid)
        })
        .collect()
}

#[tokio::test]
async fn a_forking_storm_is_stopped_whole() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let tag = format!("{}-{}", std::process::id(), line!());
    // Each `( sleep & )` leaves a sleep whose parent is gone; the loop goes
    // on forking while the timeout's SIGTERM and SIGKILL sweep the tree.
    let result = run_with(
        &exec,
        "for i in $(seq 1 3000); do ( sleep 300 & ); done; sleep 300",
        SpawnOptions::default()
            .timeout(Duration::from_secs(2))
            .env("BT_STORM_TAG", &tag),
    )
    .await
    .expect("runs");
    assert!(result.timed_out);
    let mut left = tagged(&tag);
    wait_until(Duration::from_secs(20), || {
        left = tagged(&tag);
        left.is_empty()
    })
    .await;
    kill_all(&left);
    assert_eq!(
        left.len(),
        0,
        "{} processes survived the tree kill",
        left.len()
    );
}
