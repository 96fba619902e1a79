//! Changes to this process itself whose safety depends on when they are
//! made, wrapped so that a caller cannot get the timing wrong.

use std::ffi::OsStr;

/// Why [`remove_env_var`] refused.
#[derive(Debug, thiserror::Error)]
#[error("the environment can only be changed while this process has one thread ({threads} now)")]
pub struct NotSingleThreaded {
    /// Threads this process had when asked.
    pub threads: usize,
}

/// Removes `name` from this process's environment, only while this process
/// has a single thread: another thread reading the environment at the same
/// time (a `getenv` inside libc) is undefined behaviour. Only the calling
/// thread can start another, so a count of one cannot change under us.
pub fn remove_env_var(name: impl AsRef<OsStr>) -> Result<(), NotSingleThreaded> {
    let threads = thread_count();
    if threads != 1 {
        return Err(NotSingleThreaded { threads });
    }
    // SAFETY: this process has exactly one thread, the caller's, so nothing
    // reads or writes the environment concurrently.
    unsafe { std::env::remove_var(name) };
    Ok(())
}

/// Threads of this process (0 when `/proc` cannot tell, which refuses).
fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, Iterator::count)
}

/// Gives the allocator's free memory back to the system. After a very
/// large input, a long-lived server otherwise keeps tens of MiB resident
/// that later forks copy page tables for (measured: later sandboxed calls
/// went from 1.9 to 4.4 ms).
pub fn release_free_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only returns memory the allocator holds free; it
    // touches no memory in use and is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_to_change_the_environment_with_other_threads() {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || stopped.recv());
        let error = remove_env_var("BASHTOOL_NOT_SET").expect_err("several threads");
        assert!(error.threads > 1, "{error}");
        drop(stop);
        let _ = other.join();
    }
}
