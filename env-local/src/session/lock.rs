//! One session snapshot file, one user at a time: two processes running
//! `bashtool run --session NAME` at once would both start from the same
//! state and the later save would drop the earlier one's changes. A
//! session that restores from a snapshot path holds an exclusive `flock`
//! on `<path>.lock` from that restore until it saved the state back
//! ([`super::Session::shutdown`]) or was dropped; a second one waits.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bashtool_core::ExecError;
use nix::fcntl::{Flock, FlockArg};

/// An exclusive lock on a snapshot path; released when dropped (closing
/// the file releases the `flock`, also when the process dies).
pub(crate) struct SnapshotLock {
    _lock: Flock<File>,
}

/// The lock file of the snapshot at `snapshot`.
pub(crate) fn lock_path(snapshot: &Path) -> PathBuf {
    let mut path = snapshot.as_os_str().to_owned();
    path.push(".lock");
    PathBuf::from(path)
}

/// How long a session waits for a snapshot lock when its call has no
/// timeout of its own (a background start): a call never waits forever for
/// a lock that a command (or a stuck process) may hold.
pub(crate) const NO_TIMEOUT_LOCK_WAIT: Duration = Duration::from_secs(30);
/// The longest pause between two tries of a held lock.
const RETRY: Duration = Duration::from_millis(50);

impl SnapshotLock {
    /// Takes the lock of `snapshot`, waiting up to `wait` (up to
    /// [`NO_TIMEOUT_LOCK_WAIT`] with `None`) while another session holds
    /// it. The lock is tried again and again on the timer, never waited
    /// for in a blocking call: `flock` has no timed or async form, and a
    /// thread blocked in it could not be stopped when the wait gives up (it
    /// would take the lock whenever the holder let go, and a holder that
    /// never does would leave it blocked for good).
    pub(crate) async fn acquire(
        snapshot: &Path,
        wait: Option<Duration>,
    ) -> Result<Self, ExecError> {
        let path = lock_path(snapshot);
        let mut file = open(&path).map_err(|source| ExecError::Other {
            message: format!(
                "could not open the session lock {}: {source}",
                path.display()
            ),
        })?;
        let deadline = tokio::time::Instant::now() + wait.unwrap_or(NO_TIMEOUT_LOCK_WAIT);
        let mut pause = Duration::from_millis(1);
        loop {
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(lock) => return Ok(Self { _lock: lock }),
                Err((back, nix::errno::Errno::EWOULDBLOCK))
                    if tokio::time::Instant::now() < deadline =>
                {
                    file = back;
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(RETRY);
                }
                Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                    return Err(ExecError::Other {
                        message: format!(
                            "the session is in use by another bashtool process (lock {}, held until that call ends); try again when it is done",
                            path.display()
                        ),
                    });
                }
                Err((_, errno)) => {
                    return Err(ExecError::Other {
                        message: format!("could not lock the session {}: {errno}", path.display()),
                    });
                }
            }
        }
    }
}

/// Opens (or creates, 0600, its directory 0700) the lock file, never
/// through a symlink.
fn open(path: &Path) -> std::io::Result<File> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead as _;
    use std::os::unix::process::CommandExt as _;

    #[tokio::test]
    async fn a_held_lock_is_given_up_at_the_bound_with_a_clear_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let snapshot = dir.path().join("demo.sh");
        // In a group of its own: killing the group ends `flock` and its
        // `sleep`.
        let mut holder = std::process::Command::new("flock")
            // -o: only `flock` holds the lock, not the command it runs, so
            // the lock is free once `flock` is reaped.
            .args(["-x", "-o"])
            .arg(lock_path(&snapshot))
            .args(["-c", "echo held; exec sleep 300"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("flock");
        let mut line = String::new();
        std::io::BufReader::new(holder.stdout.as_mut().expect("stdout"))
            .read_line(&mut line)
            .expect("read");
        assert_eq!(line, "held\n");
        let refused = tokio::time::timeout(
            Duration::from_secs(10),
            SnapshotLock::acquire(&snapshot, Some(Duration::from_millis(200))),
        )
        .await
        .expect("gives up at its bound");
        let group = nix::unistd::Pid::from_raw(holder.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = holder.wait();
        assert_eq!(
            refused.err().map(|error| error.to_string()),
            Some(format!(
                "the session is in use by another bashtool process (lock {}, held until that call ends); try again when it is done",
                lock_path(&snapshot).display()
            ))
        );
        // Free now (its holder is reaped), it is ours.
        assert!(
            SnapshotLock::acquire(&snapshot, Some(Duration::ZERO))
                .await
                .is_ok()
        );
    }
}
