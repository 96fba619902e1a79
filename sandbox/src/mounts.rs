//! The realm's view of the mounts, made by its init in a new mount
//! namespace and kept up to date in place:
//!
//! - protected paths bound read-only onto themselves; the workspace and its
//!   git directories bound onto themselves so they cannot be renamed away;
//! - covers: a private tmpfs over `/dev/shm` (and `/tmp` in read-only
//!   mode) and over bashtool's state directory, with the few paths that
//!   must stay visible (a session's own directory, the logs, the editor
//!   stand-ins, a workspace that lies below) put back at their own paths;
//! - a new `devpts` instance on `/dev/pts` (with `/dev/ptmx` its `ptmx`),
//!   so no terminal of the host can be opened;
//! - `/proc` of the realm's pid namespace.
//!
//! A bind shows the inode it was made on, and a rename over the bound path
//! on the host (git replaces `.git/config` so on every config change)
//! detaches it in every other namespace: the realm would then see the new,
//! writable file. A path created after the realm (`git init`) is not
//! protected either. So before each launch, and before each call of a
//! session, [`RealmMounts::refresh`] compares the paths' identities
//! (device, inode, or absence: a few `lstat`s) with those it protected, and
//! a helper that joins the realm's mount namespace binds the changed ones
//! again, in place, for every process of the realm at once.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::namespaces::{check, in_namespaces};
use crate::error::Error;

/// What a protected path gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// Bound onto itself, writable: a mount point cannot be renamed or
    /// removed (`EBUSY`), so the workspace and a git directory cannot be
    /// swapped for a copy whose hooks are writable.
    Anchor,
    /// Bound onto itself, then made read-only.
    ReadOnly,
    /// Created (a directory) if missing, then as [`Protection::ReadOnly`]:
    /// an empty `.git/hooks` is protected before anything can be put in it.
    CreatedReadOnly,
}

/// One protected path.
#[derive(Debug)]
pub struct Entry {
    pub path: PathBuf,
    pub c_path: CString,
    pub protection: Protection,
}

/// A private tmpfs over `path`, with `keep` put back at their own paths.
#[derive(Debug)]
pub struct Cover {
    pub path: CString,
    /// The tmpfs options (`mode=1777`).
    pub options: CString,
    /// Made read-only once the kept paths are back (bashtool's state).
    pub read_only: bool,
    pub keep: Vec<Kept>,
}

/// A path put back inside a cover.
#[derive(Debug)]
pub struct Kept {
    pub path: CString,
    pub read_only: bool,
}

/// The mounts of a realm, as NUL-terminated paths prepared in the parent.
#[derive(Debug, Default)]
pub struct MountPlan {
    /// In order: anchors come before what lies inside them.
    pub entries: Vec<Entry>,
    pub covers: Vec<Cover>,
    /// A new devpts instance on `/dev/pts`.
    pub devpts: bool,
    /// `/proc` of the realm's pid namespace.
    pub proc: bool,
}

/// Which step failed (the init reports it).
#[derive(Debug, Clone, Copy)]
pub enum Step {
    Binds,
    Covers,
    Devpts,
    Proc,
}

/// Kept paths per realm at most (the child keeps their descriptors in an
/// array on its stack).
pub const MAX_KEPT: usize = 16;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttributes {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 1;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;

pub fn c_path(path: &Path) -> Result<CString, Error> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::Setting {
        setting: "writable",
        message: format!("`{}` contains a NUL byte", path.display()),
    })
}

impl MountPlan {
    /// The whole plan, in the init's new mount namespace. Async-signal-safe
    /// (system calls on prepared data and stack buffers only).
    pub fn apply_in_new_namespace(&self) -> Result<(), Step> {
        // Slave: mounts the host makes later still appear inside; ours
        // never propagate to the host (systemd makes `/` shared).
        // SAFETY: NUL-terminated literals; no data argument.
        check(unsafe {
            libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_SLAVE,
                std::ptr::null(),
            )
        })
        .map_err(|_| Step::Binds)?;
        for entry in &self.entries {
            protect(entry).map_err(|_| Step::Binds)?;
        }
        self.apply_covers().map_err(|_| Step::Covers)?;
        if self.devpts {
            private_devpts().map_err(|_| Step::Devpts)?;
        }
        if self.proc {
            // SAFETY: NUL-terminated literals; no data argument.
            check(unsafe {
                libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                )
            })
            .map_err(|_| Step::Proc)?;
        }
        Ok(())
    }

    /// Each cover: the kept paths taken (detached copies of their mounts,
    /// protected binds inside included), the tmpfs mounted, the kept paths
    /// put back at their paths.
    fn apply_covers(&self) -> std::io::Result<()> {
        for cover in &self.covers {
            let mut trees = [-1 as libc::c_int; MAX_KEPT];
            for (slot, kept) in trees.iter_mut().zip(&cover.keep) {
                // SAFETY: NUL-terminated path; returns a new descriptor.
                let fd = unsafe {
                    libc::syscall(
                        libc::SYS_open_tree,
                        libc::AT_FDCWD,
                        kept.path.as_ptr(),
                        OPEN_TREE_CLONE
                            | libc::O_CLOEXEC as libc::c_uint
                            | libc::AT_RECURSIVE as libc::c_uint,
                    )
                };
                // A kept path that does not exist is not put back.
                *slot = if fd < 0 { -1 } else { fd as libc::c_int };
            }
            // SAFETY: NUL-terminated strings prepared in the parent.
            check(unsafe {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    cover.path.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    cover.options.as_ptr().cast(),
                )
            })?;
            for (&tree, kept) in trees.iter().zip(&cover.keep) {
                if tree < 0 {
                    continue;
                }
                make_directories(&kept.path)?;
                // SAFETY: a descriptor from open_tree and a NUL-terminated
                // path; the empty source path names the descriptor itself.
                check(unsafe {
                    libc::syscall(
                        libc::SYS_move_mount,
                        tree,
                        c"".as_ptr(),
                        libc::AT_FDCWD,
                        kept.path.as_ptr(),
                        MOVE_MOUNT_F_EMPTY_PATH,
                    ) as libc::c_int
                })?;
                // SAFETY: our own descriptor.
                unsafe { libc::close(tree) };
                if kept.read_only {
                    read_only(&kept.path, true)?;
                }
            }
            if cover.read_only {
                read_only(&cover.path, false)?;
            }
        }
        Ok(())
    }
}

/// Applies `entry`'s protection in the current mount namespace.
fn protect(entry: &Entry) -> std::io::Result<()> {
    let path = &entry.c_path;
    match entry.protection {
        Protection::Anchor => {
            bind(path)?;
        }
        Protection::ReadOnly | Protection::CreatedReadOnly => {
            if entry.protection == Protection::CreatedReadOnly {
                // SAFETY: NUL-terminated path.
                let result = unsafe { libc::mkdir(path.as_ptr(), 0o755) };
                let error = std::io::Error::last_os_error();
                if result != 0
                    && !matches!(
                        error.raw_os_error(),
                        Some(libc::EEXIST | libc::ENOENT | libc::ENOTDIR)
                    )
                {
                    return Err(error);
                }
            }
            if bind(path)? {
                read_only(path, true)?;
            }
        }
    }
    Ok(())
}

/// Makes the mount at `path` read-only (with what lies below it when
/// `recursive`), changing only that flag: a plain remount would need the
/// original `nosuid`/`nodev` flags repeated, which fails inside a user
/// namespace.
fn read_only(path: &CString, recursive: bool) -> std::io::Result<()> {
    let attributes = MountAttributes {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { libc::AT_RECURSIVE } else { 0 };
    // SAFETY: NUL-terminated path; the kernel reads `attributes` (its
    // size is passed) during the call.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &raw const attributes,
            std::mem::size_of::<MountAttributes>(),
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Creates `path` and its missing parents (mode 0755). Async-signal-safe:
/// the path is copied into a stack buffer and cut at each `/` in turn.
fn make_directories(path: &CString) -> std::io::Result<()> {
    let bytes = path.as_bytes();
    let mut buffer = [0u8; libc::PATH_MAX as usize];
    if bytes.len() >= buffer.len() {
        return Err(std::io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    buffer[..bytes.len()].copy_from_slice(bytes);
    for end in (1..=bytes.len()).filter(|&end| end == bytes.len() || bytes[end] == b'/') {
        let saved = buffer[end];
        buffer[end] = 0;
        // SAFETY: `buffer` is NUL-terminated at `end`.
        let result = unsafe { libc::mkdir(buffer.as_ptr().cast(), 0o755) };
        let error = std::io::Error::last_os_error();
        buffer[end] = saved;
        if result != 0 && error.raw_os_error() != Some(libc::EEXIST) {
            return Err(error);
        }
    }
    Ok(())
}

/// A new devpts instance on `/dev/pts`, and `/dev/ptmx` its multiplexer:
/// terminals opened inside are of this instance, and no terminal of the
/// host (another person's shell, bashtool's own) can be opened by path.
fn private_devpts() -> std::io::Result<()> {
    // SAFETY: NUL-terminated literals.
    check(unsafe {
        libc::mount(
            c"devpts".as_ptr(),
            c"/dev/pts".as_ptr(),
            c"devpts".as_ptr(),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            c"newinstance,ptmxmode=0666,mode=0620".as_ptr().cast(),
        )
    })?;
    // SAFETY: as above; a bind has no data argument.
    check(unsafe {
        libc::mount(
            c"/dev/pts/ptmx".as_ptr(),
            c"/dev/ptmx".as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        )
    })
}

/// Binds `path` onto itself; false when it does not exist.
fn bind(path: &CString) -> std::io::Result<bool> {
    // SAFETY: NUL-terminated path twice; no data argument.
    let result = unsafe {
        libc::mount(
            path.as_ptr(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    };
    if result == 0 {
        return Ok(true);
    }
    let error = std::io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR) => Ok(false),
        _ => Err(error),
    }
}

/// Identity of a path: `(device, inode)`, or `None` when absent.
type Identity = Option<(u64, u64)>;

fn identity(path: &Path) -> Identity {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|metadata| (metadata.dev(), metadata.ino()))
}

/// The protected paths of a realm and the identities they were protected
/// with.
pub struct RealmMounts {
    /// What to protect now: called at each refresh (a repository's
    /// worktrees, submodules and checkouts come and go).
    paths: Box<dyn Fn() -> Vec<(PathBuf, Protection)> + Send + Sync>,
    protected: Mutex<Protected>,
}

impl std::fmt::Debug for RealmMounts {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("RealmMounts")
            .finish_non_exhaustive()
    }
}

/// Each protected path and its identity when it was last protected.
#[derive(Debug, Default)]
struct Protected {
    entries: Vec<(Entry, Identity)>,
}

impl RealmMounts {
    /// `entries` as the init protected them when the realm was made;
    /// `paths` lists what to protect at each refresh.
    pub fn new(
        entries: Vec<Entry>,
        paths: Box<dyn Fn() -> Vec<(PathBuf, Protection)> + Send + Sync>,
    ) -> Self {
        let entries = entries
            .into_iter()
            .map(|entry| {
                let identity = identity(&entry.path);
                (entry, identity)
            })
            .collect();
        Self {
            paths,
            protected: Mutex::new(Protected { entries }),
        }
    }

    /// True when `path` is protected in the realm now: then no command
    /// wrote it, and a change comes from outside (the user's own git).
    pub fn is_protected(&self, path: &Path) -> bool {
        self.protected.lock().is_ok_and(|protected| {
            protected
                .entries
                .iter()
                .any(|(entry, identity)| entry.path == path && identity.is_some())
        })
    }

    /// Protects again, in the realm, every path that was replaced, created
    /// or removed on the host since it was protected, and every path newly
    /// listed (see the module documentation). Cheap when nothing changed:
    /// one `lstat` per path.
    pub fn refresh(&self, user: Option<&OwnedFd>, mount: &OwnedFd) -> Result<(), Error> {
        let listed = (self.paths)();
        let mut protected = self.protected.lock().map_err(|_| Error::Setup {
            step: "refreshing the sandbox's protected paths".to_owned(),
            source: std::io::Error::other("a launch panicked while holding the lock"),
        })?;
        let unchanged = listed.len() == protected.entries.len()
            && listed.iter().zip(&protected.entries).all(
                |((path, protection), (entry, before))| {
                    *path == entry.path
                        && *protection == entry.protection
                        && identity(path) == *before
                },
            );
        if unchanged {
            return Ok(());
        }
        let mut entries = Vec::with_capacity(listed.len());
        for (path, protection) in listed {
            let before = protected
                .entries
                .iter()
                .find(|(entry, _)| entry.path == path)
                .map(|(_, identity)| *identity);
            entries.push((
                Entry {
                    c_path: c_path(&path)?,
                    path,
                    protection,
                },
                before.flatten(),
            ));
        }
        // The changed entries (and new ones), and everything inside an
        // anchor made again (a `.git` replaced: what was bound inside the
        // old one is gone).
        let now: Vec<Identity> = entries
            .iter()
            .map(|(entry, _)| identity(&entry.path))
            .collect();
        let renewed: Vec<PathBuf> = entries
            .iter()
            .zip(&now)
            .filter(|((entry, before), after)| {
                entry.protection == Protection::Anchor && before != *after
            })
            .map(|((entry, _), _)| entry.path.clone())
            .collect();
        let changed: Vec<&Entry> = entries
            .iter()
            .zip(&now)
            .filter(|((entry, before), after)| {
                after.is_some()
                    && (before != *after
                        || renewed.iter().any(|anchor| entry.path.starts_with(anchor)))
            })
            .map(|((entry, _), _)| entry)
            .collect();
        if !changed.is_empty() {
            // SAFETY: `protect` makes mount system calls on the paths
            // each entry prepared as C strings; nothing allocates.
            unsafe {
                in_namespaces(user, mount, || {
                    for entry in &changed {
                        protect(entry)?;
                    }
                    Ok(())
                })
            }
            .map_err(|source| Error::Setup {
                step: "protecting paths that changed in the sandbox".to_owned(),
                source,
            })?;
        }
        protected.entries = entries
            .into_iter()
            .map(|(entry, _)| {
                let identity = identity(&entry.path);
                (entry, identity)
            })
            .collect();
        Ok(())
    }
}
