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

impl SnapshotLock {
    /// Takes the lock of `snapshot`, waiting up to `wait` (forever with
    /// `None`) while another session holds it.
    pub(crate) async fn acquire(
        snapshot: &Path,
        wait: Option<Duration>,
    ) -> Result<Self, ExecError> {
        let path = lock_path(snapshot);
        let file = open(&path).map_err(|source| ExecError::Other {
            message: format!(
                "could not open the session lock {}: {source}",
                path.display()
            ),
        })?;
        let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(Self { _lock: lock }),
            Err((file, nix::errno::Errno::EWOULDBLOCK)) => file,
            Err((_, errno)) => {
                return Err(ExecError::Other {
                    message: format!("could not lock the session {}: {errno}", path.display()),
                });
            }
        };
        // Held: wait in a blocking thread (flock has no async form). If we
        // give up, that thread takes the lock later and drops it at once.
        let blocking =
            tokio::task::spawn_blocking(move || Flock::lock(file, FlockArg::LockExclusive));
        let locked = match wait {
            Some(wait) => tokio::time::timeout(wait, blocking).await.map_err(|_| {
                ExecError::Other {
                    message: format!(
                        "the session is in use by another bashtool process (lock {}, held until that call ends); try again when it is done",
                        path.display()
                    ),
                }
            })?,
            None => blocking.await,
        };
        match locked {
            Ok(Ok(lock)) => Ok(Self { _lock: lock }),
            Ok(Err((_, errno))) => Err(ExecError::Other {
                message: format!("could not lock the session {}: {errno}", path.display()),
            }),
            Err(join) => Err(ExecError::Other {
                message: format!("could not lock the session {}: {join}", path.display()),
            }),
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
