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
