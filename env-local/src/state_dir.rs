//! Where bashtool keeps its files (logs, job output and records, session
//! snapshots): one per-user directory, private and verified before use.
//!
//! The order: `$BASHTOOL_STATE_DIR`, `$XDG_STATE_HOME/bashtool`,
//! `$HOME/.local/state/bashtool`. There is no fallback to a shared place
//! (`/tmp`): a directory there can be created first by another user, who
//! would then read the output and replace the log the model is told to read.

use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The per-user state directory, or why there is none.
pub fn default_state_dir() -> Result<PathBuf, Error> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(dir) = non_empty("BASHTOOL_STATE_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(state) = non_empty("XDG_STATE_HOME") {
        return Ok(PathBuf::from(state).join("bashtool"));
    }
    if let Some(home) = non_empty("HOME") {
        return Ok(PathBuf::from(home).join(".local/state/bashtool"));
    }
    Err(Error::NoStateDir)
}

/// Creates `dir` (mode 0700) if needed and checks that it is safe to use:
/// a real directory (not a symlink), owned by us, with no access for group
/// or others. A directory of ours that is too open is narrowed; one owned by
/// someone else is refused.
pub fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    verify_private(dir)
}

/// Checks an existing directory as [`ensure_private_dir`] does.
pub fn verify_private(dir: &Path) -> std::io::Result<()> {
    let metadata = std::fs::symlink_metadata(dir)?;
    let refuse = |why: &str| {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("refusing to use {}: {why}", dir.display()),
        ))
    };
    if metadata.file_type().is_symlink() {
        return refuse("it is a symbolic link");
    }
    if !metadata.is_dir() {
        return refuse("it is not a directory");
    }
    if metadata.uid() != nix::unistd::geteuid().as_raw() {
        return refuse("it belongs to another user");
    }
    if metadata.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_a_private_directory_and_narrows_an_open_one() {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path().join("a/b/state");
        ensure_private_dir(&dir).expect("created");
        let mode = |path: &Path| std::fs::metadata(path).expect("stat").mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        ensure_private_dir(&dir).expect("verified");
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn refuses_a_symlink() {
        let temp = tempfile::tempdir().expect("temp dir");
        let target = temp.path().join("elsewhere");
        std::fs::create_dir(&target).expect("mkdir");
        let link = temp.path().join("state");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let error = ensure_private_dir(&link).expect_err("refused");
        assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn refuses_a_directory_of_another_user() {
        // Root owns `/`; as another user this is refused by ownership, and as
        // root by its mode not being ours to narrow is not asked: use a
        // directory owned by nobody when we are root.
        if nix::unistd::geteuid().is_root() {
            let temp = tempfile::tempdir().expect("temp dir");
            let dir = temp.path().join("planted");
            std::fs::create_dir(&dir).expect("mkdir");
            nix::unistd::chown(&dir, Some(nix::unistd::Uid::from_raw(65534)), None).expect("chown");
            let error = ensure_private_dir(&dir).expect_err("refused");
            assert!(error.to_string().contains("another user"), "{error}");
        } else {
            let error = verify_private(Path::new("/")).expect_err("refused");
            assert!(error.to_string().contains("another user"), "{error}");
        }
    }
}
