//! No fd leaks and no zombies after many calls. In its own test binary so
//! that no other test opens fds meanwhile.

use std::time::Duration;

use bashtool_tests::{local_exec, open_fds, run, temp_dir, wait_until, zombie_children};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_calls_leak_no_fds_and_leave_no_zombies() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    // Warm up: the runtime's own fds (signal pipes, threads) settle first.
    run(&exec, "true").await;
    let before = open_fds();
    for round in 0..100 {
        let calls = (0..10).map(|index| {
            let exec = exec.clone();
            tokio::spawn(async move {
                let command = match index {
                    0 => format!("sleep 5 & echo {round}"),
                    1..5 => "echo oops >&2; exit 3".to_owned(),
                    _ => "echo hi".to_owned(),
                };
                run(&exec, &command).await
            })
        });
        for call in calls {
            call.await.expect("the task finishes");
        }
    }
    assert!(
        wait_until(Duration::from_secs(5), || open_fds() == before).await,
        "fds before {before}, after {}",
        open_fds()
    );
    assert!(
        wait_until(Duration::from_secs(5), || zombie_children().is_empty()).await,
        "zombies: {:?}",
        zombie_children()
    );
}
