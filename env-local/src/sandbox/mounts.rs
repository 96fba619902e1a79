//! The private view of the mounts: the protected paths bound read-only onto
//! themselves, the workspace and its `.git` bound onto themselves so they
//! cannot be renamed away.
//!
//! Making a mount namespace per launch cost ~0.13 ms (13% of `bash -c
//! true`: the copy of the mount table, then its teardown at exit), so one
//! is made by the namespace helper and every command joins it with `setns`.
//! A namespace made once goes stale when a bound path is replaced on the
//! host: git replaces `.git/config` by renaming a new file over it, and a
//! bind still shows the old inode; a `.git` made after the namespace is not
//! protected at all. So before each launch the parent compares the bound
//! paths' identities (device, inode, or absence: a few `lstat`s) with those
//! the namespace was made from, and makes a new one when they differ.

// System calls the standard library does not wrap; each block says why it
// is sound.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

use super::namespaces::{User, Wanted, check, create_shared};
use crate::error::Error;

/// The mounts, as NUL-terminated paths prepared in the parent.
#[derive(Debug, Default)]
pub struct MountPlan {
    /// Bound onto themselves, writable: a mount point cannot be renamed or
    /// removed (`EBUSY`), so the workspace and its `.git` cannot be swapped
    /// for a copy whose hooks are writable.
    pub anchors: Vec<CString>,
    /// Created if missing (an empty `.git/hooks`), so that it can be
    /// protected before anything can be put in it.
    pub directories: Vec<CString>,
    /// Bound onto themselves, then made read-only.
    pub read_only: Vec<CString>,
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttributes {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 1;

pub fn c_path(path: &Path) -> Result<CString, Error> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::SandboxSetting {
        setting: "writable",
        message: format!("`{}` contains a NUL byte", path.display()),
    })
}

impl MountPlan {
    /// Applies the plan in the calling process's (new) mount namespace.
    /// Async-signal-safe. Paths that do not exist are skipped.
    pub fn apply(&self) -> std::io::Result<()> {
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
        })?;
        for path in &self.anchors {
            bind(path)?;
        }
        for path in &self.directories {
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
        for path in &self.read_only {
            if bind(path)? {
                let attributes = MountAttributes {
                    attr_set: MOUNT_ATTR_RDONLY,
                    attr_clr: 0,
                    propagation: 0,
                    userns_fd: 0,
                };
                // SAFETY: NUL-terminated path; the kernel reads
                // `attributes` (its size is passed) during the call.
                let result = unsafe {
                    libc::syscall(
                        libc::SYS_mount_setattr,
                        libc::AT_FDCWD,
                        path.as_ptr(),
                        libc::AT_RECURSIVE,
                        &raw const attributes,
                        std::mem::size_of::<MountAttributes>(),
                    )
                };
                if result != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
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

/// Identity of the bound paths: `(device, inode)` or absent, in order.
type Signature = Vec<Option<(u64, u64)>>;

fn signature(paths: &[PathBuf]) -> Signature {
    paths
        .iter()
        .map(|path| {
            std::fs::symlink_metadata(path)
                .ok()
                .map(|metadata| (metadata.dev(), metadata.ino()))
        })
        .collect()
}

/// The namespaces made so far; all kept open: a child forked before a
/// rebuild may still be about to join an older one.
#[derive(Debug)]
struct Made {
    signature: Signature,
    namespaces: Vec<OwnedFd>,
}

/// The shared mount namespace of a sandbox, rebuilt when stale.
#[derive(Debug)]
pub struct SharedMounts {
    plan: MountPlan,
    /// The anchors and protected paths, compared before each launch.
    watched: Vec<PathBuf>,
    made: Mutex<Made>,
    /// The descriptor the child joins.
    current: AtomicI32,
}

impl SharedMounts {
    pub fn new(
        plan: MountPlan,
        watched: Vec<PathBuf>,
        user: Option<&OwnedFd>,
    ) -> Result<Self, Error> {
        let signature = signature(&watched);
        let namespace = make(&plan, user)?;
        let current = AtomicI32::new(namespace.as_raw_fd());
        Ok(Self {
            plan,
            watched,
            made: Mutex::new(Made {
                signature,
                namespaces: vec![namespace],
            }),
            current,
        })
    }

    /// Called in the parent before each launch: makes a new namespace when
    /// a bound path was replaced, created or removed since the last one.
    pub fn refresh(&self, user: Option<&OwnedFd>) -> Result<(), Error> {
        let now = signature(&self.watched);
        let mut made = self.made.lock().map_err(|_| Error::SandboxSetup {
            step: "refreshing the mount namespace".to_owned(),
            source: std::io::Error::other("a launch panicked while holding the lock"),
        })?;
        if made.signature == now {
            return Ok(());
        }
        let namespace = make(&self.plan, user)?;
        self.current.store(namespace.as_raw_fd(), Ordering::Release);
        made.namespaces.push(namespace);
        made.signature = now;
        Ok(())
    }

    /// The namespace launches join now (its descriptor, open as long as
    /// `self`): it identifies the namespace's generation.
    pub fn current(&self) -> std::os::fd::RawFd {
        self.current.load(Ordering::Acquire)
    }

    /// Joins the namespace from the child. Async-signal-safe. `setns`
    /// moves the working directory to the namespace's root: the directory
    /// the child had is entered again by path, through the binds. (env-local's
    /// own launch sets the command's directory after the steps anyway; a
    /// caller that set it before, such as a `pre_exec` of std's `Command`,
    /// gets it back here.) Should that directory not be reachable in the
    /// namespace, the child stays at its root: not an error here.
    pub fn enter(&self) -> std::io::Result<()> {
        let mut buffer = [0u8; libc::PATH_MAX as usize];
        // SAFETY: getcwd writes at most `buffer.len()` bytes, NUL included.
        let found = !unsafe { libc::getcwd(buffer.as_mut_ptr().cast(), buffer.len()) }.is_null();
        let namespace = self.current.load(Ordering::Acquire);
        // SAFETY: a descriptor kept open as long as `self`.
        check(unsafe { libc::setns(namespace, libc::CLONE_NEWNS) })?;
        if found {
            // SAFETY: getcwd NUL-terminated the path in `buffer`.
            unsafe { libc::chdir(buffer.as_ptr().cast()) };
        }
        Ok(())
    }
}

fn make(plan: &MountPlan, user: Option<&OwnedFd>) -> Result<OwnedFd, Error> {
    let shared = create_shared(Wanted {
        user: user.map_or(User::Keep, User::Join),
        network: false,
        mounts: Some(plan),
    })?;
    shared.mount.ok_or_else(|| Error::SandboxSetup {
        step: "making the mount namespace".to_owned(),
        source: std::io::Error::other("the helper made none"),
    })
}
