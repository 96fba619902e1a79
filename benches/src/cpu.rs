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

/// CPU time of a running process, from `/proc/<pid>/stat` (clock ticks).
pub fn of_process(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Duration::ZERO;
    };
    // Fields after the command name, which may contain spaces: utime and
    // stime are the 12th and 13th.
    let ticks: u64 = stat.rsplit_once(") ").map_or(0, |(_, rest)| {
        rest.split(' ')
            .skip(11)
            .take(2)
            .filter_map(|field| field.parse::<u64>().ok())
            .sum()
    });
    // SAFETY: sysconf only reads a configuration value.
    #[allow(unsafe_code)]
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_micros(ticks * 1_000_000 / per_second)
}
