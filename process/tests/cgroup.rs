//! Limits per command through real cgroups (v1 controllers, v2's
//! `cgroup.kill`, whatever this machine has), with real processes
//! launched through the one launch path.
//!
//! Load (300 sleepers, a 600 MB allocation, a busy loop) runs only inside
//! a cgroup whose limit the test has read back from the kernel first, and
//! under a watchdog that kills everything in the test's cgroups if the
//! test takes too long. What is left, what was killed and what the kernel
//! counted is read by the test from `/proc` and the cgroup files itself.
//!
//! Where this process cannot have the cgroups (no root, no delegated v2
//! subtree), each test prints why and passes without running.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bashtool_process::{
    CgroupContainment, CgroupHost, CgroupLimits, Cgroups, ChildIo, CommandCgroup, Containment,
    Controller, ExitStatus, Launch, ProcessTree, RunMarker, Sink, join_first, launch,
};
use bashtool_testkit::{Watchdog, members as pids_in};
use tokio::io::AsyncReadExt as _;

/// The cgroups for `limits`, all required, or `None` (printed) when this
/// machine cannot give them to this process; never in CI, which has them
/// (a missing cgroup fails the test there instead of letting it pass
/// unrun).
fn cgroups_or_skip(limits: CgroupLimits) -> Option<Cgroups> {
    let host = CgroupHost::probe();
    let reason = match Cgroups::prepare(&host, limits, &limits.controllers()) {
        Ok(cgroups) if cgroups.is_active() => return Some(cgroups),
        Ok(_) => format!("no cgroup is usable here ({host})"),
        Err(error) => error.to_string(),
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "{reason}: the cgroup tests must run in CI"
    );
    eprintln!("skipped: {reason}");
    None
}

/// The directory of `cgroup` in the hierarchy that has `file`.
fn dir_with(cgroup: &CommandCgroup, file: &str) -> PathBuf {
    cgroup
        .dirs()
        .into_iter()
        .find(|dir| dir.join(file).exists())
        .unwrap_or_else(|| panic!("no directory of the cgroup has {file}"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()))
        .trim()
        .to_owned()
}

fn key(path: &Path, key: &str) -> u64 {
    read(path)
        .lines()
        .find_map(|line| line.strip_prefix(key)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {}", path.display()))
}

/// A live process (not a zombie) with this pid, as `/proc` says.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rfind(')')
            .and_then(|end| stat.get(end + 2..end + 3))
            .unwrap_or("");
        state != "Z" && state != "X"
    })
}

/// Waits until `done` holds or `limit` passes; true if it held.
async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}

fn sh(script: &str) -> Launch {
    Launch {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())],
        cwd: "/".into(),
    }
}

#[tokio::test]
async fn a_launched_process_starts_in_its_cgroup_under_its_limit() {
    let limits = CgroupLimits {
        pids: Some(64),
        ..CgroupLimits::default()
    };
    let Some(cgroups) = cgroups_or_skip(limits) else {
        return;
    };
    let cgroup = cgroups.take().expect("a cgroup");
    let launched = launch(
        sh("cat /proc/self/cgroup"),
        &join_first(&cgroup, &[]),
        ChildIo {
            stdout: Sink::Pipe,
            ..ChildIo::null()
        },
        None,
    )
    .expect("launched");
    let mut output = String::new();
    launched
        .stdout
        .expect("stdout")
        .read_to_string(&mut output)
        .await
        .expect("read");
    launched.root.exited().await;
    // Every hierarchy the cgroup is made in shows it, from the start.
    let lines: Vec<&str> = output
        .lines()
        .filter(|line| line.ends_with(&format!("/{}", cgroup.name())))
        .collect();
    assert_eq!(lines.len(), cgroup.dirs().len(), "{output}");
    assert!(
        output
            .lines()
            .any(|line| line.contains("pids") && line.ends_with(cgroup.name())),
        "{output}"
    );
    assert_eq!(read(&dir_with(&cgroup, "pids.max").join("pids.max")), "64");
    let dirs = cgroup.dirs();
    cgroups.give_back(cgroup);
    drop(cgroups);
    // Dropped: nothing of it is left.
    for dir in dirs {
        assert!(!dir.exists(), "{} is left", dir.display());
    }
}

#[tokio::test]
async fn three_hundred_sleepers_stop_at_the_pids_limit_and_nothing_is_left() {
    let limits = CgroupLimits {
        pids: Some(64),
        ..CgroupLimits::default()
    };
    let Some(cgroups) = cgroups_or_skip(limits) else {
        return;
    };
    let cgroup = cgroups.take().expect("a cgroup");
    let pids_dir = dir_with(&cgroup, "pids.max");
    // The limit is in force before any load starts.
    assert_eq!(read(&pids_dir.join("pids.max")), "64");
    let _watchdog = Watchdog::start(cgroup.dirs(), Duration::from_secs(60)).removing_dirs();
    let marker = RunMarker::new();
    let mut launch_spec = sh("for i in $(seq 300); do sleep 1000 & done 2>/dev/null; wait");
    launch_spec.env.push((
        bashtool_process::MARKER_VARIABLE.into(),
        marker.value().into(),
    ));
    let launched = launch(
        launch_spec,
        &join_first(&cgroup, &[]),
        ChildIo::null(),
        None,
    )
    .expect("launched");
    let root = launched.root.pid();
    // The kernel refuses forks past 64: it counts them, and the cgroup
    // holds 64 processes (the shell and 63 sleepers).
    let refused = wait_until(Duration::from_secs(20), || {
        key(&pids_dir.join("pids.events"), "max") > 0
            && read(&pids_dir.join("pids.current")) == "64"
    })
    .await;
    assert!(
        refused,
        "pids.current {}",
        read(&pids_dir.join("pids.current"))
    );
    // The kernel counts a process until it is reaped; `cgroup.procs` lists
    // only those not yet exited.
    let members = pids_in(&pids_dir);
    // (dash gives up at its first refused fork: its sleepers stay.)
    assert!(members.len() <= 64, "{} members", members.len());
    assert!(cgroup.events().pids_refused > 0);
    let containment = CgroupContainment::new(
        Arc::new(ProcessTree::new(root, Some(marker))),
        Arc::clone(&cgroup),
        root,
    );
    containment.terminate(Duration::from_millis(200)).await;
    launched.root.exited().await;
    // Nothing is left: every member seen is gone, the cgroup is empty.
    let left: Vec<u32> = members.into_iter().filter(|pid| alive(*pid)).collect();
    assert_eq!(left, Vec::<u32>::new());
    assert_eq!(pids_in(&pids_dir), Vec::<u32>::new());
    drop(containment);
    let dirs = cgroup.dirs();
    cgroups.release(cgroup);
    for dir in dirs {
        assert!(!dir.exists(), "{} is left", dir.display());
    }
}

#[tokio::test]
async fn a_600_mb_allocation_is_killed_at_a_256_mib_limit() {
    let limits = CgroupLimits {
        memory: Some(256 << 20),
        ..CgroupLimits::default()
    };
    if which("python3").is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "no python3 in CI: the allocation test must run there"
        );
        eprintln!("skipped: no python3 to allocate with");
        return;
    }
    let Some(cgroups) = cgroups_or_skip(limits) else {
        return;
    };
    let cgroup = cgroups.take().expect("a cgroup");
    let memory_dir = cgroup
        .dirs()
        .into_iter()
        .find(|dir| dir.join("memory.max").exists() || dir.join("memory.limit_in_bytes").exists())
        .expect("a memory directory");
    let limit_file = if memory_dir.join("memory.max").exists() {
        "memory.max"
    } else {
        "memory.limit_in_bytes"
    };
    assert_eq!(
        read(&memory_dir.join(limit_file)),
        (256u64 << 20).to_string()
    );
    let _watchdog = Watchdog::start(cgroup.dirs(), Duration::from_secs(60)).removing_dirs();
    let launched = launch(
        sh("exec python3 -c 'x = b\"x\" * (600 << 20); print(len(x))'"),
        &join_first(&cgroup, &[]),
        ChildIo::null(),
        None,
    )
    .expect("launched");
    launched.root.exited().await;
    assert!(launched.root.reap_now());
    assert_eq!(
        launched.root.status(),
        ExitStatus::Signal(nix::sys::signal::Signal::SIGKILL)
    );
    let oom_file = if memory_dir.join("memory.events").exists() {
        "memory.events"
    } else {
        "memory.oom_control"
    };
    assert!(key(&memory_dir.join(oom_file), "oom_kill") >= 1);
    assert!(cgroup.events().oom_kills >= 1);
    cgroups.give_back(cgroup);
}

#[tokio::test]
async fn a_busy_loop_is_throttled_at_its_cpu_limit() {
    let limits = CgroupLimits {
        cpu_millis: Some(100),
        ..CgroupLimits::default()
    };
    let Some(cgroups) = cgroups_or_skip(limits) else {
        return;
    };
    let cgroup = cgroups.take().expect("a cgroup");
    let cpu_dir = dir_with(&cgroup, "cpu.stat");
    let quota = if cpu_dir.join("cpu.max").exists() {
        read(&cpu_dir.join("cpu.max"))
    } else {
        read(&cpu_dir.join("cpu.cfs_quota_us"))
    };
    assert!(quota == "10000" || quota == "10000 100000", "{quota}");
    let _watchdog = Watchdog::start(cgroup.dirs(), Duration::from_secs(60)).removing_dirs();
    let launched = launch(
        sh("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"),
        &join_first(&cgroup, &[]),
        ChildIo::null(),
        None,
    )
    .expect("launched");
    launched.root.exited().await;
    assert!(launched.root.reap_now());
    assert_eq!(launched.root.status(), ExitStatus::Code(0));
    assert!(key(&cpu_dir.join("cpu.stat"), "nr_throttled") > 0);
    let events = cgroup.events();
    assert!(events.throttled_periods > 0);
    assert!(events.throttled > Duration::ZERO);
    cgroups.give_back(cgroup);
}

#[tokio::test]
async fn cgroup_kill_stops_escapees_that_left_the_session_and_the_marker() {
    let limits = CgroupLimits {
        pids: Some(64),
        ..CgroupLimits::default()
    };
    let Some(cgroups) = cgroups_or_skip(limits) else {
        return;
    };
    if !cgroups.kills_at_once() {
        eprintln!("skipped: no cgroup v2 with cgroup.kill here");
        return;
    }
    let cgroup = cgroups.take().expect("a cgroup");
    let _watchdog = Watchdog::start(cgroup.dirs(), Duration::from_secs(60)).removing_dirs();
    // A double fork out of the session with an empty environment: the
    // tracker cannot find it; the cgroup holds it.
    let launched = launch(
        sh("setsid -f env -i sleep 1000; sleep 1000 & echo $! > /dev/null; sleep 1000"),
        &join_first(&cgroup, &[]),
        ChildIo::null(),
        None,
    )
    .expect("launched");
    let root = launched.root.pid();
    let v2_dir = dir_with(&cgroup, "cgroup.kill");
    let empty_environment =
        |pid: &u32| std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| env.is_empty());
    // Four processes, one of them the escapee once `env -i` exec'd sleep.
    assert!(
        wait_until(Duration::from_secs(10), || {
            let members = pids_in(&v2_dir);
            members.len() == 4 && members.iter().any(empty_environment)
        })
        .await
    );
    let members = pids_in(&v2_dir);
    let escapee = members
        .iter()
        .copied()
        .find(|pid| empty_environment(pid))
        .expect("the escapee");
    assert!(alive(escapee));
    let containment = CgroupContainment::new(
        Arc::new(ProcessTree::new(root, None)),
        Arc::clone(&cgroup),
        root,
    );
    containment.kill_now();
    launched.root.exited().await;
    assert!(
        wait_until(Duration::from_secs(5), || members
            .iter()
            .all(|pid| !alive(*pid)))
        .await
    );
    assert_eq!(pids_in(&v2_dir), Vec::<u32>::new());
    drop(containment);
    cgroups.give_back(cgroup);
}

#[test]
fn what_a_dead_process_left_is_removed_and_a_live_ones_kept() {
    let limits = CgroupLimits {
        pids: Some(64),
        ..CgroupLimits::default()
    };
    let Some(cgroups) = cgroups_or_skip(limits) else {
        return;
    };
    let (_, base, _) = cgroups.places().into_iter().next().expect("a place");
    // pid 1 is alive with another start time; a pid past pid_max is not.
    let dead = base.join("bashtool-4194304.1-1");
    let live_start = std::fs::read_to_string(format!("/proc/{}/stat", std::process::id()))
        .expect("stat")
        .rsplit(')')
        .next()
        .and_then(|fields| fields.split_whitespace().nth(19).map(str::to_owned))
        .expect("start time");
    let live = base.join(format!(
        "bashtool-{}.{live_start}-999999",
        std::process::id()
    ));
    std::fs::create_dir(&dead).expect("mkdir");
    std::fs::create_dir(&live).expect("mkdir");
    let again =
        Cgroups::prepare(&CgroupHost::probe(), limits, &[Controller::Pids]).expect("prepared");
    assert!(!dead.exists());
    assert!(live.exists());
    std::fs::remove_dir(&live).expect("rmdir");
    drop(again);
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}
