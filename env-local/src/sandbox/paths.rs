//! Which paths a sandbox makes writable and which it protects, from the
//! settings, the workspace and the user's environment.

use std::path::{Path, PathBuf};

use super::config::{SandboxConfig, SandboxMode};

/// Devices every program expects to open for writing.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    // POSIX shared memory and semaphores (Python multiprocessing, browsers).
    "/dev/shm",
];

/// The writable and protected paths of one sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The roots shown to the model and the user (workspace, temp, caches,
    /// configured roots), without the devices.
    pub roots: Vec<PathBuf>,
    /// Everything Landlock makes writable: `roots` plus the devices and
    /// single cache files.
    pub landlock: Vec<PathBuf>,
    /// Bound onto themselves so they cannot be renamed away (see
    /// `MountPlan::anchors`).
    pub anchors: Vec<PathBuf>,
    /// Made read-only inside the writable roots.
    pub protected: Vec<PathBuf>,
    /// Created if missing before being protected.
    pub directories: Vec<PathBuf>,
}

/// Canonical form when the path exists, else as given.
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn push_unique(list: &mut Vec<PathBuf>, path: PathBuf) {
    if !list.contains(&path) {
        list.push(path);
    }
}

/// The temp space: `/tmp` and `$TMPDIR`.
fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![canonical(Path::new("/tmp"))];
    if let Some(tmpdir) = std::env::var_os("TMPDIR").filter(|value| !value.is_empty()) {
        let tmpdir = PathBuf::from(tmpdir);
        if tmpdir.is_absolute() && tmpdir.is_dir() {
            push_unique(&mut dirs, canonical(&tmpdir));
        }
    }
    dirs
}

/// The package caches that stay shared and writable (see docs/sandbox.md
/// for why): directories, then single files cargo locks.
pub fn cache_paths(home: Option<&Path>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.map(|home| home.join(".cargo")));
    let mut directories = Vec::new();
    let mut files = Vec::new();
    if let Some(cargo_home) = cargo_home.filter(|path| path.is_dir()) {
        for name in ["registry", "git"] {
            let path = cargo_home.join(name);
            // Cargo would create them on first use, inside a CARGO_HOME
            // that stays read-only (its config and installed binaries).
            let _ = std::fs::create_dir_all(&path);
            directories.push(path);
        }
        for name in [".package-cache", ".package-cache-mutate", ".global-cache"] {
            files.push(cargo_home.join(name));
        }
    }
    if let Some(home) = home {
        for relative in [".npm", ".cache/pip", ".cache/go-build", "go/pkg/mod"] {
            directories.push(home.join(relative));
        }
    }
    for variable in ["GOMODCACHE", "GOCACHE", "PIP_CACHE_DIR", "npm_config_cache"] {
        if let Some(value) = std::env::var_os(variable).filter(|value| !value.is_empty()) {
            directories.push(PathBuf::from(value));
        }
    }
    let existing = |paths: Vec<PathBuf>| -> Vec<PathBuf> {
        paths
            .into_iter()
            .filter(|path| path.is_absolute() && path.exists())
            .map(|path| canonical(&path))
            .collect()
    };
    (existing(directories), existing(files))
}

impl Layout {
    pub fn new(
        config: &SandboxConfig,
        workspace: &Path,
        state_dir: Option<&Path>,
        home: Option<&Path>,
    ) -> Self {
        let workspace = canonical(workspace);
        let mut roots = Vec::new();
        let mut landlock = Vec::new();
        let mut anchors = Vec::new();
        let mut directories = Vec::new();
        let mut protected = Vec::new();
        if config.mode == SandboxMode::WorkspaceWrite {
            push_unique(&mut roots, workspace.clone());
        }
        for temp in temp_dirs() {
            push_unique(&mut roots, temp);
        }
        if config.mode == SandboxMode::WorkspaceWrite {
            let (cache_dirs, cache_files) = cache_paths(home);
            for path in cache_dirs {
                push_unique(&mut roots, path);
            }
            for path in cache_files {
                push_unique(&mut landlock, path);
            }
            for path in &config.writable {
                push_unique(&mut roots, canonical(path));
            }
            // The repository's code-execution vectors. Listed even when the
            // workspace is not a repository yet: the child skips what does
            // not exist at launch, and protects a `.git` made later.
            let git = workspace.join(".git");
            anchors.push(workspace.clone());
            anchors.push(git.clone());
            directories.push(git.join("hooks"));
            protected.push(git.join("hooks"));
            protected.push(git.join("config"));
        }
        for root in &roots {
            push_unique(&mut landlock, root.clone());
        }
        for device in DEVICES {
            let path = PathBuf::from(device);
            if path.exists() {
                push_unique(&mut landlock, path);
            }
        }
        // bashtool's own state and the extra protected paths matter only
        // where something is writable; elsewhere Landlock already refuses.
        let extra = state_dir
            .into_iter()
            .chain(config.protected.iter().map(PathBuf::as_path))
            .map(canonical);
        for path in extra {
            if roots.iter().any(|root| path.starts_with(root)) {
                push_unique(&mut protected, path);
            }
        }
        Self {
            roots,
            landlock,
            anchors,
            protected,
            directories,
        }
    }

    /// True when a mount namespace is needed.
    pub fn needs_mounts(&self) -> bool {
        !self.protected.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::config::NetworkMode;

    #[test]
    fn workspace_write_protects_git_and_state_inside_writable_roots() {
        let workspace = tempfile::tempdir().expect("temp dir");
        let workspace = workspace.path().canonicalize().expect("canonical");
        let state = workspace.join("state");
        std::fs::create_dir(&state).expect("state dir");
        let config = SandboxConfig::default();
        let layout = Layout::new(&config, &workspace, Some(&state), None);
        assert_eq!(layout.roots[0], workspace);
        assert!(layout.roots.contains(&PathBuf::from("/tmp")));
        assert_eq!(
            layout.protected,
            [
                workspace.join(".git/hooks"),
                workspace.join(".git/config"),
                state
            ]
        );
        assert!(layout.landlock.contains(&PathBuf::from("/dev/null")));
        assert!(layout.needs_mounts());
    }

    #[test]
    fn read_only_writes_only_temp_and_devices() {
        let config = SandboxConfig {
            mode: SandboxMode::ReadOnly,
            network: NetworkMode::Off,
            ..SandboxConfig::default()
        };
        let layout = Layout::new(&config, Path::new("/"), Some(Path::new("/var/lib/x")), None);
        assert!(layout.roots.iter().all(|root| root.starts_with("/tmp")
            || std::env::var_os("TMPDIR").is_some_and(|tmp| root.starts_with(tmp))));
        assert!(layout.protected.is_empty());
        assert!(!layout.needs_mounts());
    }
}
