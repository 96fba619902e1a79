//! The relay build (macOS, Windows, any system but Linux): no local
//! environment, no sandbox, no `serve`; commands run only in a Linux
//! environment reached with `--remote-shell` or `--remote`. This file holds
//! what that build uses where the Linux build uses `bashtool-env-local`
//! and `bashtool-sandbox`: the sandbox modes and the config file's
//! `[sandbox]` (sent to the `serve` over there in `initialize`), the state
//! directory, and the one line that says what to pass.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::Context as _;
use serde::Deserialize;

/// What a command that would run here says on this build.
pub fn needs_remote() -> anyhow::Error {
    anyhow::anyhow!(
        "this bashtool is the {} relay build: commands run only in a Linux environment; pass --remote-shell 'docker exec -i CONTAINER sh' (or 'ssh HOST'), or --remote 'ssh HOST bashtool serve'",
        std::env::consts::OS
    )
}

/// `--sandbox`: how much a command over there may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    Off,
    ReadOnly,
    #[default]
    WorkspaceWrite,
}

/// `--network`: whether a command over there reaches the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    #[default]
    On,
    Off,
}

/// The config file's `[sandbox]`, read here (a file shared with a Linux
/// machine stays valid) to go to the `serve` over there in `initialize`,
/// which checks the paths and domains where they are.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    pub writable: Vec<PathBuf>,
    pub network: NetworkMode,
    pub protected: Vec<PathBuf>,
    pub allowed_domains: Vec<String>,
}

impl SandboxMode {
    /// The name in flags and in the remote protocol.
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
        }
    }
}

impl NetworkMode {
    /// The name in flags and in the remote protocol.
    pub fn name(self) -> &'static str {
        match self {
            Self::On => "on",
            Self::Off => "off",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl fmt::Display for NetworkMode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl FromStr for SandboxMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "off" => Ok(Self::Off),
            "read-only" => Ok(Self::ReadOnly),
            "workspace-write" => Ok(Self::WorkspaceWrite),
            _ => Err(format!(
                "`{text}` is not a mode; use off, read-only or workspace-write"
            )),
        }
    }
}

impl FromStr for NetworkMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "on" => Ok(Self::On),
            "off" => Ok(Self::Off),
            _ => Err(format!("`{text}` is not a network setting; use on or off")),
        }
    }
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
