//! The relay build (macOS, Windows, any system but Linux): no local
//! environment, no sandbox, no `serve`; commands run only in a Linux
//! environment reached with `--remote-shell` or `--remote`. This file holds
//! what that build uses where the Linux build uses `bashtool-env-local`:
//! the state directory, and the one line that says what to pass. (The
//! sandbox's settings, sent to the `serve` over there in `initialize`, are
//! `bashtool-sandbox`'s, which builds everywhere.)

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// What a command that would run here says on this build.
pub fn needs_remote() -> anyhow::Error {
    anyhow::anyhow!(
        "this bashtool is the {} relay build: commands run only in a Linux environment; pass --remote-shell 'docker exec -i CONTAINER sh' (or 'ssh HOST'), or --remote 'ssh HOST bashtool serve'",
        std::env::consts::OS
    )
}

/// Where bashtool keeps its files here (the HTTP token):
/// `$BASHTOOL_STATE_DIR`, else `$XDG_STATE_HOME/bashtool`, else
/// `~/.local/state/bashtool`; on Windows `%LOCALAPPDATA%\bashtool`.
pub fn default_state_dir() -> anyhow::Result<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(dir) = non_empty("BASHTOOL_STATE_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(state) = non_empty("XDG_STATE_HOME") {
        return Ok(PathBuf::from(state).join("bashtool"));
    }
    if cfg!(windows)
        && let Some(local) = non_empty("LOCALAPPDATA")
    {
        return Ok(PathBuf::from(local).join("bashtool"));
    }
    if let Some(home) = non_empty("HOME") {
        return Ok(PathBuf::from(home).join(".local/state/bashtool"));
    }
    anyhow::bail!("no state directory: set BASHTOOL_STATE_DIR (or HOME)")
}

/// Makes `dir` if needed; on Unix it must be ours, not a link, and is made
/// 0700 (as `bashtool-env-local` does on Linux). On Windows a directory
/// under `%LOCALAPPDATA%` is the user's own by its ACL.
pub fn ensure_private_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let metadata = std::fs::symlink_metadata(dir)?;
        anyhow::ensure!(
            metadata.is_dir() && !metadata.file_type().is_symlink(),
            "refusing to use {}: it is not a directory",
            dir.display()
        );
        anyhow::ensure!(
            metadata.uid() == nix::unistd::geteuid().as_raw(),
            "refusing to use {}: it belongs to another user",
            dir.display()
        );
        if metadata.mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}
