//! The session's private directory: the driver script, its FIFOs, the
//! command file and call script, the output FIFOs and the snapshot slots.

use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

use super::driver;

/// On tmpfs when available: truncating a file on ext4 costs a flush (~4 ms
/// measured), which would dominate every call. Removed when dropped.
pub(crate) struct SessionDir {
    pub path: PathBuf,
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
        let dir = Self { path };
        std::fs::write(
            dir.path.join(driver::INIT_NAME),
            driver::init_script(&dir.path),
        )?;
        Ok(dir)
    }

    pub(crate) fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
