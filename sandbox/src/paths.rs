//! Which paths a sandbox makes writable, protects, covers and keeps
//! visible, from the settings, the workspace and the user's environment.

use std::path::{Path, PathBuf};

use super::config::{SandboxConfig, SandboxMode};
use super::git;
use super::mounts::Protection;

/// Devices every program expects to open for writing (on the host's
/// `/dev`; `/dev/pts`, `/dev/ptmx` and `/dev/shm` are the realm's own, see
/// [`REALM_DEVICES`]).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Writable devices and directories that exist only in the realm: its
/// terminals and its POSIX shared memory (Python multiprocessing,
/// browsers). Landlock's rules for them are made on the realm's inodes.
pub const REALM_DEVICES: &[&str] = &["/dev/pts", "/dev/ptmx", "/dev/shm"];

/// What bashtool itself keeps on the host, as the sandbox must treat it.
#[derive(Debug, Clone, Default)]
pub struct StatePaths {
    /// Hidden from commands whole (bashtool's state directory, job
    /// records): a private empty directory covers each.
    pub hidden: Vec<PathBuf>,
    /// Visible, read-only, even inside a hidden directory: the log
    /// directory (the model reads its logs), the editors' stand-ins (first
    /// in `PATH`).
    pub shown: Vec<PathBuf>,
    /// Writable and visible to this sandbox alone, even inside a covered
    /// directory: a session's own directory (its FIFOs and snapshots).
    pub private: Vec<PathBuf>,
}

/// A private tmpfs over `path`, and what is put back inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoverLayout {
    pub path: PathBuf,
    pub options: &'static str,
    pub read_only: bool,
    /// `(path, read-only)`.
    pub keep: Vec<(PathBuf, bool)>,
}

/// The writable, protected, covered and kept paths of one sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The roots shown to the model and the user (workspace, temp, caches,
    /// configured roots), without the devices.
    pub roots: Vec<PathBuf>,
    /// What Landlock makes writable, by their paths on the host: the
    /// roots that are not private to the realm, the devices and single
    /// cache files.
    pub landlock: Vec<PathBuf>,
    /// What Landlock makes writable by their paths inside the realm.
    pub landlock_inside: Vec<PathBuf>,
    /// Protected paths, in order (anchors before what lies inside).
    pub protected: Vec<(PathBuf, Protection)>,
    /// The configured extra protected paths (part of `protected`).
    pub extra_protected: Vec<(PathBuf, Protection)>,
    /// Private tmpfs covers, outermost first.
    pub covers: Vec<CoverLayout>,
    /// `/tmp` is the realm's own (read-only mode).
    pub private_tmp: bool,
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

impl Layout {
    pub fn new(
        config: &SandboxConfig,
        workspace: &Path,
        state: &StatePaths,
        home: Option<&Path>,
    ) -> Self {
        let workspace = canonical(workspace);
        let write = config.mode == SandboxMode::WorkspaceWrite;
        let private_tmp = config.mode == SandboxMode::ReadOnly;
        let mut roots = Vec::new();
        let mut landlock = Vec::new();
        let mut landlock_inside: Vec<PathBuf> = REALM_DEVICES.iter().map(PathBuf::from).collect();
        let mut protected = Vec::new();
        if write {
            push_unique(&mut roots, workspace.clone());
        }
        if private_tmp {
            // Read-only: the realm's own empty /tmp is the only temp space
            // (a workspace below /tmp stays read-only; see the covers).
            roots.push(PathBuf::from("/tmp"));
            landlock_inside.push(PathBuf::from("/tmp"));
        } else {
            for temp in temp_dirs() {
                push_unique(&mut roots, temp);
            }
        }
        let mut cache_files = Vec::new();
        let mut cache_protected = Vec::new();
        if write {
            let var = |name: &str| std::env::var_os(name);
            let caches = super::caches::caches(&super::caches::Place {
                home,
                workspace: &workspace,
                var: &var,
            });
            for path in caches.directories {
                push_unique(&mut roots, path);
            }
            cache_files = caches.files;
            cache_protected = caches.protected;
            for path in &config.writable {
                push_unique(&mut roots, canonical(path));
            }
            // The repositories' code-execution vectors. Listed even when the
            // workspace is not a repository yet: a refresh protects a `.git`
            // made later.
            protected.push((workspace.clone(), Protection::Anchor));
            protected.extend(git::protected_paths(&workspace));
        }
        for root in &roots {
            if !(private_tmp && root == Path::new("/tmp")) {
                push_unique(&mut landlock, root.clone());
            }
        }
        for path in cache_files {
            push_unique(&mut landlock, path);
        }
        for device in DEVICES {
            let path = PathBuf::from(device);
            if path.exists() {
                push_unique(&mut landlock, path);
            }
        }
        // The extra protected paths matter only where something is
        // writable; elsewhere Landlock already refuses.
        let mut extra_protected = Vec::new();
        // Configuration inside a cache (`ccache.conf`), like them.
        for path in config
            .protected
            .iter()
            .map(|path| canonical(path))
            .chain(cache_protected)
        {
            if roots.iter().any(|root| path.starts_with(root))
                && !protected.iter().any(|(known, _)| *known == path)
            {
                protected.push((path.clone(), Protection::ReadOnly));
                extra_protected.push((path, Protection::ReadOnly));
            }
        }
        let covers = covers(&workspace, &roots, state, private_tmp);
        Self {
            roots,
            landlock,
            landlock_inside,
            protected,
            extra_protected,
            covers,
            private_tmp,
        }
    }
}

/// The private tmpfs covers, outermost first, and what each puts back:
/// `/dev/shm` always (POSIX shared memory of other sandboxes and
/// bashtool's session directories stay out of reach), `/tmp` in read-only
/// mode, and bashtool's hidden state. A path to keep (the workspace, the
/// writable roots, a session's directory, the logs) is put back in the
/// outermost cover it lies under; a hidden directory inside another cover
/// is hidden already.
fn covers(
    workspace: &Path,
    roots: &[PathBuf],
    state: &StatePaths,
    private_tmp: bool,
) -> Vec<CoverLayout> {
    let mut candidates: Vec<(PathBuf, &'static str, bool)> =
        vec![(PathBuf::from("/dev/shm"), "mode=1777", false)];
    if private_tmp {
        candidates.push((PathBuf::from("/tmp"), "mode=1777", false));
    }
    for hidden in &state.hidden {
        let hidden = canonical(hidden);
        if hidden.is_dir() {
            candidates.push((hidden, "mode=0700", true));
        }
    }
    // Outermost first; a cover inside another is dropped.
    candidates.sort_by_key(|(path, _, _)| path.components().count());
    let mut chosen: Vec<CoverLayout> = Vec::new();
    for (path, options, read_only) in candidates {
        if chosen.iter().any(|cover| path.starts_with(&cover.path)) {
            continue;
        }
        chosen.push(CoverLayout {
            path,
            options,
            read_only,
            keep: Vec::new(),
        });
    }
    let mut keep: Vec<(PathBuf, bool)> = Vec::new();
    keep.push((workspace.to_path_buf(), private_tmp));
    for root in roots {
        if !(private_tmp && root == Path::new("/tmp")) {
            keep.push((root.clone(), false));
        }
    }
    keep.extend(state.private.iter().map(|path| (canonical(path), false)));
    keep.extend(state.shown.iter().map(|path| (canonical(path), true)));
    for (path, read_only) in keep {
        let Some(cover) = chosen
            .iter_mut()
            .find(|cover| path.starts_with(&cover.path) && path != cover.path)
        else {
            continue;
        };
        if !cover.keep.iter().any(|(kept, _)| path.starts_with(kept)) {
            cover.keep.push((path, read_only));
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::NetworkMode;

    fn protected_paths(layout: &Layout) -> Vec<PathBuf> {
        layout
            .protected
            .iter()
            .map(|(path, _)| path.clone())
            .collect()
    }

    #[test]
    fn workspace_write_protects_git_inside_writable_roots() {
        let workspace = tempfile::tempdir().expect("temp dir");
        let workspace = workspace.path().canonicalize().expect("canonical");
        let config = SandboxConfig::default();
        let layout = Layout::new(&config, &workspace, &StatePaths::default(), None);
        assert_eq!(layout.roots[0], workspace);
        assert!(layout.roots.contains(&PathBuf::from("/tmp")));
        let git = workspace.join(".git");
        assert_eq!(
            protected_paths(&layout),
            [
                workspace.clone(),
                git.clone(),
                git.join("hooks"),
                git.join("config"),
                git.join("config.worktree"),
                git.join("commondir"),
            ]
        );
        assert!(layout.landlock.contains(&PathBuf::from("/dev/null")));
        assert!(!layout.private_tmp);
        assert_eq!(layout.covers[0].path, PathBuf::from("/dev/shm"));
    }

    #[test]
    fn read_only_gets_a_private_tmp_that_keeps_a_workspace_below_it() {
        let workspace = tempfile::tempdir_in("/tmp").expect("temp dir");
        let workspace = workspace.path().canonicalize().expect("canonical");
        let config = SandboxConfig {
            mode: SandboxMode::ReadOnly,
            network: NetworkMode::Off,
            ..SandboxConfig::default()
        };
        let layout = Layout::new(&config, &workspace, &StatePaths::default(), None);
        assert_eq!(layout.roots, [PathBuf::from("/tmp")]);
        assert!(layout.private_tmp);
        assert!(layout.protected.is_empty());
        assert!(!layout.landlock.contains(&PathBuf::from("/tmp")));
        assert!(layout.landlock_inside.contains(&PathBuf::from("/tmp")));
        let tmp = layout
            .covers
            .iter()
            .find(|cover| cover.path == Path::new("/tmp"))
            .expect("a /tmp cover");
        assert_eq!(tmp.keep, [(workspace, true)]);
    }

    #[test]
    fn the_state_is_covered_with_the_logs_put_back_read_only() {
        let state = tempfile::tempdir().expect("temp dir");
        let state = state.path().canonicalize().expect("canonical");
        let logs = state.join("logs");
        std::fs::create_dir(&logs).expect("logs");
        let workspace = tempfile::tempdir().expect("temp dir");
        let paths = StatePaths {
            hidden: vec![state.clone()],
            shown: vec![logs.clone()],
            private: Vec::new(),
        };
        let layout = Layout::new(&SandboxConfig::default(), workspace.path(), &paths, None);
        let cover = layout
            .covers
            .iter()
            .find(|cover| cover.path == state)
            .expect("a cover of the state");
        assert!(cover.read_only);
        assert_eq!(cover.keep, [(logs, true)]);
    }
}
