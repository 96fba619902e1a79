//! CPU time, which a loaded machine disturbs much less than wall time: a
//! process waiting for a core costs wall time but no CPU time.

use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};
use rustix::process::Pid;
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

fn rusage(who: UsageWho) -> Duration {
    getrusage(who).map_or(Duration::ZERO, |usage| {
        let time = |time: nix::sys::time::TimeVal| {
            Duration::from_secs(time.tv_sec().max(0) as u64)
                + Duration::from_micros(time.tv_usec().max(0) as u64)
        };
        time(usage.user_time()) + time(usage.system_time())
    })
}

/// CPU time of this process, all threads.
pub fn this_process() -> Duration {
    rusage(UsageWho::RUSAGE_SELF)
}

/// CPU time of this process's children that have been waited for.
pub fn reaped_children() -> Duration {
    rusage(UsageWho::RUSAGE_CHILDREN)
}

/// CPU time of a single-threaded running process (its main thread), in
/// nanoseconds, from `/proc/<pid>/schedstat`: precise where ticks are 10 ms.
pub fn of_single_thread(pid: u32) -> Duration {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|stat| stat.split(' ').next()?.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// Every thread of this process and the processes `pids` (single-threaded)
/// kept to CPU `cpu` until the guard is dropped, which gives each back the
/// CPUs it had. For measuring what placement decides as much as the
/// code: the scheduler puts a woken shell on whichever CPU is idle, and on
/// a 2-core VM that choice alone moves a session call's time by ~40%.
pub struct Pinned {
    /// Each pinned task with the CPUs it had before.
    tasks: Vec<(Pid, CpuSet)>,
}

fn cpu_set(cpus: impl IntoIterator<Item = usize>) -> CpuSet {
    let mut set = CpuSet::new();
    for cpu in cpus {
        set.set(cpu);
    }
    set
}

impl Pinned {
    /// Pins this process's threads and `pids` to `cpu`; `None` if any of
    /// them could not be pinned (then none stays pinned).
    pub fn to_cpu(cpu: usize, pids: &[u32]) -> Option<Self> {
        let mut tasks: Vec<Pid> = std::fs::read_dir("/proc/self/task")
            .ok()?
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .filter_map(Pid::from_raw)
            .collect();
        tasks.extend(
            pids.iter()
                .filter_map(|&pid| Pid::from_raw(i32::try_from(pid).ok()?)),
        );
        let mut pinned = Self { tasks: Vec::new() };
        let one = cpu_set([cpu]);
        for task in tasks {
            let before = sched_getaffinity(Some(task)).ok()?;
            if sched_setaffinity(Some(task), &one).is_err() {
                return None;
            }
            pinned.tasks.push((task, before));
        }
        Some(pinned)
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        for (task, before) in &self.tasks {
            let _ = sched_setaffinity(Some(*task), before);
        }
    }
}
