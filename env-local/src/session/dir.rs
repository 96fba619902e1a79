//! The session's private directory: the driver script, its FIFOs, the
//! command file and call script, the output FIFOs and the snapshot slots.

use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

use super::driver;

/// On tmpfs when available: truncating a file on ext4 costs a flush (~4 ms
/// measured), which would dominate every call. Removed when dropped.
pub(crate) struct SessionDir {
    pub path: PathBuf,
    /// The key every request to the session's shell carries (see
    /// `driver::KEY_DIGITS`).
    pub key: String,
}

impl SessionDir {
    pub(crate) fn create(id: u64) -> std::io::Result<Self> {
        let name = format!("bashtool-session-{}-{id}", std::process::id());
        Self::create_in(Path::new("/dev/shm"), &name)
            .or_else(|_| Self::create_in(&std::env::temp_dir(), &name))
    }

    fn create_in(base: &Path, name: &str) -> std::io::Result<Self> {
        let path = base.join(name);
        // Left over by an earlier process with our pid.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        let dir = Self {
            path,
            key: driver::new_key()?,
        };
        std::fs::write(
            dir.path.join(driver::INIT_NAME),
            driver::init_script(&dir.path, &dir.key),
        )?;
        Ok(dir)
    }

    pub(crate) fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.path.join(name)
    }
}

/// Removes the session directories of processes that are gone (a server
/// killed with SIGKILL cannot remove its own). Only directories owned by us
/// are touched. Returns how many were removed.
pub(crate) fn remove_stale_session_dirs() -> usize {
    use std::os::unix::fs::MetadataExt as _;
    let own = nix::unistd::geteuid().as_raw();
    let mut removed = 0;
    for base in [PathBuf::from("/dev/shm"), std::env::temp_dir()] {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|name| name.strip_prefix("bashtool-session-"))
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            let ours = std::fs::symlink_metadata(entry.path())
                .is_ok_and(|metadata| metadata.is_dir() && metadata.uid() == own);
            if ours
                && bashtool_process::process_info(pid).is_none()
                && std::fs::remove_dir_all(entry.path()).is_ok()
            {
                removed += 1;
            }
        }
    }
    removed
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
