//! CPU time, which a loaded machine disturbs much less than wall time: a
//! process waiting for a core costs wall time but no CPU time.

use std::time::Duration;

fn timeval(time: libc::timeval) -> Duration {
    Duration::from_secs(time.tv_sec.max(0) as u64)
        + Duration::from_micros(time.tv_usec.max(0) as u64)
}

fn rusage(who: libc::c_int) -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    #[allow(unsafe_code)]
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(who, &raw mut usage) != 0 {
            return Duration::ZERO;
        }
        usage
    };
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

/// CPU time of this process, all threads.
pub fn this_process() -> Duration {
    rusage(libc::RUSAGE_SELF)
}

/// CPU time of this process's children that have been waited for.
pub fn reaped_children() -> Duration {
    rusage(libc::RUSAGE_CHILDREN)
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
    tasks: Vec<(libc::pid_t, libc::cpu_set_t)>,
}

fn affinity(task: libc::pid_t) -> Option<libc::cpu_set_t> {
    let mut set = cpu_set([]);
    // SAFETY: sched_getaffinity writes at most the size it is given into
    // the set.
    #[allow(unsafe_code)]
    let done = unsafe {
        libc::sched_getaffinity(task, std::mem::size_of::<libc::cpu_set_t>(), &raw mut set)
    };
    (done == 0).then_some(set)
}

fn set_affinity(task: libc::pid_t, set: &libc::cpu_set_t) -> bool {
    // SAFETY: sched_setaffinity only reads the set it is given, whose size
    // is passed with it.
    #[allow(unsafe_code)]
    let done =
        unsafe { libc::sched_setaffinity(task, std::mem::size_of::<libc::cpu_set_t>(), set) };
    done == 0
}

fn cpu_set(cpus: impl IntoIterator<Item = usize>) -> libc::cpu_set_t {
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET writes one
    // bit inside it (CPU numbers beyond its size are ignored by libc).
    #[allow(unsafe_code)]
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        set
    }
}

impl Pinned {
    /// Pins this process's threads and `pids` to `cpu`; `None` if any of
    /// them could not be pinned (then none stays pinned).
    pub fn to_cpu(cpu: usize, pids: &[u32]) -> Option<Self> {
        let mut tasks: Vec<libc::pid_t> = std::fs::read_dir("/proc/self/task")
            .ok()?
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        tasks.extend(
            pids.iter()
                .filter_map(|&pid| libc::pid_t::try_from(pid).ok()),
        );
        let mut pinned = Self { tasks: Vec::new() };
        let one = cpu_set([cpu]);
        for task in tasks {
            let before = affinity(task)?;
            if !set_affinity(task, &one) {
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
            set_affinity(*task, before);
        }
    }
}
