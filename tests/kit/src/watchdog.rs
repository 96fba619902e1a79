//! A watchdog over the cgroups a test put load in.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Kills everything in `dirs` if the test still runs at `after`, so that
/// the host stays responsive whatever the code under test does; dropped
/// (the test ended, or failed), it kills what is left there too, so that a
/// failing test leaves nothing behind. Only directories named
/// `bashtool-*` are touched: a test's own cgroup, or its caller's, is
/// never the watchdog's to kill.
pub struct Watchdog {
    dirs: Vec<PathBuf>,
    remove_dirs: bool,
    done: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Starts watching `dirs`.
    pub fn start(dirs: Vec<PathBuf>, after: Duration) -> Self {
        let (done, finished) = mpsc::channel::<()>();
        let watched = dirs.clone();
        let thread = std::thread::spawn(move || {
            if finished.recv_timeout(after) == Err(mpsc::RecvTimeoutError::Timeout) {
                eprintln!("watchdog: the test ran over {after:?}; killing its cgroups");
                kill_all_in(&watched);
            }
        });
        Self {
            dirs,
            remove_dirs: false,
            done: Some(done),
            thread: Some(thread),
        }
    }

    /// Also removes the (emptied) directories when dropped: for cgroups
    /// the test made itself.
    #[must_use]
    pub fn removing_dirs(mut self) -> Self {
        self.remove_dirs = true;
        self
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        kill_all_in(&self.dirs);
        if self.remove_dirs {
            for dir in self.dirs.iter().filter(|dir| made_by_bashtool(dir)) {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

/// SIGKILL to everything in `dirs` (`cgroup.kill` too where there is
/// one), until they are empty or a second has passed. Only directories
/// named `bashtool-*`.
fn kill_all_in(dirs: &[PathBuf]) {
    let dirs: Vec<&PathBuf> = dirs.iter().filter(|dir| made_by_bashtool(dir)).collect();
    for _ in 0..50 {
        let mut left = false;
        for dir in &dirs {
            let _ = std::fs::write(dir.join("cgroup.kill"), "1");
            for pid in members(dir) {
                left = true;
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        if !left {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The processes in the cgroup `dir` (none when it is gone).
pub fn members(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|pid| pid.parse().ok())
        .collect()
}

fn made_by_bashtool(dir: &Path) -> bool {
    dir.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with("bashtool-"))
}
