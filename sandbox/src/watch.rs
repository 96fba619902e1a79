//! Watching the workspace for what a sandboxed command writes that the
//! read-only mounts cannot cover in advance (see `git_audit.rs`): new
//! repositories, new git control files, and writes to files with several
//! hard links.
//!
//! One inotify instance per sandbox watches every directory of the
//! workspace (but the big generated ones: `node_modules`, `target`,
//! virtual environments, caches; and inside a git directory only the
//! directory itself, `hooks/`, `worktrees/` and `modules/`). A thread of
//! its own handles events as they come, so a dangerous file is moved aside
//! within milliseconds, also when a background job writes it; a call takes
//! what was found meanwhile into its notes ([`Watcher::take_notes`]), after
//! handling whatever is still queued. When the kernel's queue overflows, or
//! no inotify instance can be had, the whole tree is checked instead.

use std::collections::HashMap;
use std::os::fd::{AsFd as _, AsRawFd as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

use super::git::looks_like_git_dir;
use super::git_audit::{Finding, QUARANTINE_SUFFIX, audit, control_files};

/// Directories not descended into: generated trees, often huge, that no
/// one runs git in (a repository planted there is not checked).
const SKIPPED: &[&str] = &[
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".gradle",
];

/// Inside a git directory, only these are watched.
const GIT_DIR_PARTS: &[&str] = &["hooks", "worktrees", "modules"];

/// Directories watched per workspace at most; beyond, the rest of the tree
/// is checked only when the queue overflows.
const MAX_WATCHES: usize = 50_000;

/// Whether a path is one the sandbox protects already (then changes to it
/// come from outside, the user's own git, and are not audited).
pub type Protected = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

/// The watcher of one workspace.
pub struct Watcher {
    workspace: PathBuf,
    inotify: Option<Inotify>,
    state: Mutex<State>,
    protected: Protected,
    stop: Arc<AtomicBool>,
    /// Something the protected set depends on changed (a `.git`, a file in
    /// one, `.gitmodules`), or events may have been lost: the realm's
    /// mounts must be refreshed. Starts set.
    changed: AtomicBool,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Watcher")
            .field("workspace", &self.workspace)
            .field("inotify", &self.inotify.is_some())
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    dirs: HashMap<WatchDescriptor, PathBuf>,
    /// What the audit found about git files since the last call took it.
    findings: Vec<Finding>,
    /// Other notes (writes through hard links).
    notes: Vec<String>,
    /// Control files created since the last call ended, to check again
    /// then.
    opened: Vec<PathBuf>,
    /// Some directory was left unwatched (the cap): check the tree at each
    /// call's end.
    incomplete: bool,
}

impl Watcher {
    /// Starts watching `workspace`; `protected` tells which paths the
    /// sandbox keeps read-only already.
    pub fn start(workspace: &Path, protected: Protected) -> Arc<Self> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok();
        let watcher = Arc::new(Self {
            workspace: workspace.to_path_buf(),
            inotify,
            state: Mutex::new(State::default()),
            protected,
            stop: Arc::new(AtomicBool::new(false)),
            changed: AtomicBool::new(true),
        });
        {
            let mut state = watcher.lock();
            if watcher.inotify.is_some() {
                watcher.add_tree(&mut state, workspace, false);
            } else {
                state.incomplete = true;
            }
        }
        if watcher.inotify.is_some() {
            let weak = Arc::downgrade(&watcher);
            let stop = Arc::clone(&watcher.stop);
            let _ = std::thread::Builder::new()
                .name("bashtool-watch".to_owned())
                .stack_size(256 * 1024)
                .spawn(move || watch_loop(&weak, &stop));
        }
        watcher
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Handles what is queued, then tells (and clears) whether something the
    /// protected paths depend on changed since the last time: the realm's
    /// mounts need a refresh only then. Always true when the watcher cannot
    /// see every change (no inotify, a directory left unwatched).
    pub fn take_changed(&self) -> bool {
        let mut state = self.lock();
        self.drain(&mut state);
        self.changed.swap(false, Ordering::AcqRel) || state.incomplete || self.inotify.is_none()
    }

    /// Makes the next [`Watcher::take_changed`] true (a refresh failed).
    pub fn mark_changed(&self) {
        self.changed.store(true, Ordering::Release);
    }

    /// Handles what is queued, then returns the notes found since the last
    /// call took them (and clears them).
    pub fn take_notes(&self) -> Vec<String> {
        let mut state = self.lock();
        self.drain(&mut state);
        for path in std::mem::take(&mut state.opened) {
            if !(self.protected)(&path)
                && let Some(finding) = audit(&path, &self.workspace)
                && !matches!(finding, Finding::Harmless { .. })
            {
                state.findings.push(finding);
            }
        }
        if state.incomplete {
            self.check_tree(&mut state);
        }
        let findings = std::mem::take(&mut state.findings);
        let mut notes = notes_of(&findings, &self.workspace);
        notes.append(&mut state.notes);
        // A file can be found by more than one route in one call (the scan
        // of a tree that arrived whole, its create and close events, the
        // end-of-call check of what was still open): one note each.
        let mut seen = std::collections::HashSet::new();
        notes.retain(|note| seen.insert(note.clone()));
        notes
    }

    /// Reads and handles every queued event (non-blocking).
    fn drain(&self, state: &mut State) {
        let Some(inotify) = &self.inotify else {
            return;
        };
        loop {
            let events = match inotify.read_events() {
                Ok(events) if !events.is_empty() => events,
                _ => return,
            };
            for event in events {
                if event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    self.changed.store(true, Ordering::Release);
                    self.check_tree(state);
                    continue;
                }
                if event.mask.contains(AddWatchFlags::IN_IGNORED) {
                    state.dirs.remove(&event.wd);
                    continue;
                }
                let (Some(dir), Some(name)) = (state.dirs.get(&event.wd).cloned(), event.name)
                else {
                    continue;
                };
                let path = dir.join(&name);
                self.handle(state, &dir, &path, event.mask);
            }
        }
    }

    fn handle(&self, state: &mut State, dir: &Path, path: &Path, mask: AddWatchFlags) {
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("");
        if name == ".git" || name == ".gitmodules" || path.starts_with(self.workspace.join(".git"))
        {
            self.changed.store(true, Ordering::Release);
        }
        if name.ends_with(QUARANTINE_SUFFIX) {
            return;
        }
        let arrived = mask.intersects(AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO);
        // A file is read once it is written and closed (when it is
        // created it is still empty); a symbolic link is whole at once.
        let written = mask.intersects(AddWatchFlags::IN_CLOSE_WRITE | AddWatchFlags::IN_MOVED_TO)
            || (mask.contains(AddWatchFlags::IN_CREATE)
                && std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink()));
        if mask.contains(AddWatchFlags::IN_ISDIR) {
            let watched =
                !SKIPPED.contains(&name) && (!is_git_dir(dir) || GIT_DIR_PARTS.contains(&name));
            if arrived && watched {
                // A directory made or moved in: watch it, and check what
                // it brought (a repository moved in whole).
                self.add_tree(state, path, true);
            }
            return;
        }
        let in_hooks = dir.file_name().and_then(|name| name.to_str()) == Some("hooks")
            && dir.parent().is_some_and(is_git_dir);
        let control = is_control_file(dir, name) || in_hooks || name == ".git";
        if control {
            if written {
                self.audit_one(state, path);
            } else if arrived {
                // Created and still open: checked again when the call ends
                // (a writer that never closes it is not seen otherwise).
                state.opened.push(path.to_path_buf());
            }
            return;
        }
        if mask.contains(AddWatchFlags::IN_CLOSE_WRITE) {
            note_hard_links(state, path);
        }
    }

    fn audit_one(&self, state: &mut State, path: &Path) {
        if (self.protected)(path) {
            return;
        }
        match audit(path, &self.workspace) {
            // git's own sample hooks, which it never runs: not worth a note.
            Some(Finding::Harmless { path })
                if path.extension().and_then(|extension| extension.to_str()) == Some("sample") => {}
            Some(finding) => state.findings.push(finding),
            None => {}
        }
    }

    /// Watches `root` and the directories below it; with `check`, also
    /// audits the git files found there (a tree that arrived whole).
    fn add_tree(&self, state: &mut State, root: &Path, check: bool) {
        let Some(inotify) = &self.inotify else {
            return;
        };
        let flags = AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_CLOSE_WRITE
            | AddWatchFlags::IN_ONLYDIR
            | AddWatchFlags::IN_DONT_FOLLOW;
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            if state.dirs.len() >= MAX_WATCHES {
                state.incomplete = true;
                return;
            }
            // Watch first, then list: what arrives in between is seen
            // twice at worst, never missed.
            if let Ok(descriptor) = inotify.add_watch(&dir, flags) {
                state.dirs.insert(descriptor, dir.clone());
            }
            let git_dir = is_git_dir(&dir);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let path = entry.path();
                if check
                    && (name == ".git"
                        || is_control_file(&dir, &name)
                        || dir.file_name().and_then(|name| name.to_str()) == Some("hooks"))
                {
                    if name == ".git" && kind.is_dir() {
                        for file in control_files(&path) {
                            self.audit_one(state, &file);
                        }
                    } else if !kind.is_dir() {
                        self.audit_one(state, &path);
                    }
                }
                if !kind.is_dir() || SKIPPED.contains(&&*name) {
                    continue;
                }
                if git_dir && !GIT_DIR_PARTS.contains(&&*name) {
                    continue;
                }
                pending.push(path);
            }
        }
    }

    /// Checks every git file of the tree (the queue overflowed, or not
    /// every directory could be watched): what is dangerous is moved aside.
    fn check_tree(&self, state: &mut State) {
        let mut pending = vec![self.workspace.clone()];
        let mut seen = 0usize;
        while let Some(dir) = pending.pop() {
            seen += 1;
            if seen > MAX_WATCHES * 4 {
                break;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let path = entry.path();
                if name == ".git" {
                    let files = if kind.is_dir() {
                        control_files(&path)
                    } else {
                        vec![path.clone()]
                    };
                    for file in files {
                        if (self.protected)(&file) {
                            continue;
                        }
                        // Harmless files are not named: this is not one
                        // call's doing.
                        if let Some(finding) = audit(&file, &self.workspace)
                            && !matches!(finding, Finding::Harmless { .. })
                        {
                            state.findings.push(finding);
                        }
                    }
                    continue;
                }
                if kind.is_dir() && !SKIPPED.contains(&&*name) {
                    pending.push(path);
                }
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// The notes for what the audit found, in the order found. A file read
/// while it was still being written can look harmless (a scan of a new
/// repository reads its `config` before the writer is done); the finding
/// made when it was closed is the one that counts, so a harmless finding
/// is not named when the same file was also found dangerous.
fn notes_of(findings: &[Finding], workspace: &Path) -> Vec<String> {
    let dangerous: Vec<&Path> = findings
        .iter()
        .filter_map(|finding| match finding {
            Finding::Harmless { .. } => None,
            Finding::Quarantined { path, .. } | Finding::Dangerous { path, .. } => {
                Some(path.as_path())
            }
        })
        .collect();
    findings
        .iter()
        .filter(|finding| {
            !matches!(finding, Finding::Harmless { path } if dangerous.contains(&path.as_path()))
        })
        .map(|finding| finding.note(workspace))
        .collect()
}

/// A git directory: named `.git`, one git accepts (HEAD and objects), or
/// a linked worktree's (`worktrees/<name>` of one).
fn is_git_dir(dir: &Path) -> bool {
    let name_of = |path: &Path| {
        path.file_name()
            .and_then(|name| name.to_str())
            .map(str::to_owned)
    };
    name_of(dir).as_deref() == Some(".git")
        || looks_like_git_dir(dir)
        || dir.parent().is_some_and(|parent| {
            name_of(parent).as_deref() == Some("worktrees")
                && parent.parent().is_some_and(is_git_dir)
        })
}

/// A file that can redirect git or set what it runs: a `config`,
/// `config.worktree` or `commondir` in a git directory, or below a `.git`
/// (a submodule's git directory under `modules/` before its `HEAD` exists).
fn is_control_file(dir: &Path, name: &str) -> bool {
    matches!(name, "config" | "config.worktree" | "commondir")
        && (is_git_dir(dir)
            || dir.ancestors().any(|ancestor| {
                ancestor.file_name().and_then(|name| name.to_str()) == Some(".git")
            }))
}

/// A file written through one of several names: the write changed the file
/// under every name, which may lie outside the writable roots.
fn note_hard_links(state: &mut State, path: &Path) {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return;
    };
    if metadata.is_file() && metadata.nlink() > 1 {
        state.notes.push(format!(
            "sandbox: the command wrote {}, a file with {} hard links: the same file under its \
             other names changed too, and they may lie outside the writable directories (package \
             stores such as pnpm's and uv's link files so)",
            path.display(),
            metadata.nlink()
        ));
    }
}

/// The watcher's thread: waits for events, then handles them under the
/// lock; ends when the watcher is dropped.
fn watch_loop(watcher: &std::sync::Weak<Watcher>, stop: &AtomicBool) {
    loop {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Some(strong) = watcher.upgrade() else {
            return;
        };
        let Some(inotify) = &strong.inotify else {
            return;
        };
        let mut poll = libc::pollfd {
            fd: inotify.as_fd().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        drop(strong);
        // A timeout so that a dropped watcher is noticed.
        // SAFETY: poll on one pollfd on the stack; the descriptor stays
        // open while the watcher lives, and a closed one makes poll return.
        let ready = unsafe { libc::poll(&raw mut poll, 1, 500) };
        if ready > 0
            && let Some(strong) = watcher.upgrade()
        {
            let mut state = strong.lock();
            strong.drain(&mut state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never_protected() -> Protected {
        Arc::new(|_: &Path| false)
    }

    #[test]
    fn a_repository_made_after_the_start_has_its_dangerous_config_moved_aside() {
        let root = tempfile::tempdir().expect("temp dir");
        let workspace = root.path().canonicalize().expect("canonical");
        let watcher = Watcher::start(&workspace, never_protected());
        let git = workspace.join("deep/er/sub/.git");
        std::fs::create_dir_all(git.join("hooks")).expect("hooks");
        std::fs::create_dir_all(git.join("objects")).expect("objects");
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").expect("HEAD");
        std::fs::write(git.join("config"), "[core]\n\tfsmonitor = evil\n").expect("config");
        let notes = watcher.take_notes();
        assert!(!git.join("config").exists(), "{notes:?}");
        assert!(git.join("config.bashtool-quarantine").exists());
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("deep/er/sub/.git/config (it sets core.fsmonitor)"),
            "{notes:?}"
        );
        assert!(watcher.take_notes().is_empty());
    }

    #[test]
    fn a_file_read_half_written_is_named_once_by_what_it_became() {
        let workspace = Path::new("/w");
        let config = workspace.join("sub/.git/config");
        let other = workspace.join("other/.git/config");
        let findings = [
            Finding::Harmless {
                path: config.clone(),
            },
            Finding::Harmless {
                path: other.clone(),
            },
            Finding::Quarantined {
                path: config.clone(),
                reason: "it sets core.fsmonitor".to_owned(),
                moved_to: workspace.join("sub/.git/config.bashtool-quarantine"),
            },
        ];
        let notes = notes_of(&findings, workspace);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("other/.git/config (nothing in it runs a program)"),
            "{notes:?}"
        );
        assert!(
            notes[1].contains("sub/.git/config (it sets core.fsmonitor)"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_write_to_a_file_with_two_names_is_noted() {
        let root = tempfile::tempdir().expect("temp dir");
        let workspace = root.path().canonicalize().expect("canonical");
        let other = root.path().join("other-name");
        std::fs::write(&other, "a").expect("file");
        let inside = workspace.join("inside");
        std::fs::create_dir(&inside).expect("dir");
        std::fs::hard_link(&other, inside.join("linked")).expect("link");
        let watcher = Watcher::start(&inside, never_protected());
        std::fs::write(inside.join("linked"), "b").expect("write");
        std::fs::write(inside.join("single"), "c").expect("write");
        let notes = watcher.take_notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("linked, a file with 2 hard links"),
            "{notes:?}"
        );
    }
}
