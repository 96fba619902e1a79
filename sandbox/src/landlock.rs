//! The Landlock ruleset: read and execute everywhere, write only beneath
//! the writable roots. Built once in the parent; the child only calls
//! `landlock_restrict_self` on the ruleset's file descriptor.
//!
//! Signals are not scoped by Landlock: every launch makes a domain of its
//! own, and a scope would stop a call from signalling the background job
//! an earlier call started (`kill -TERM -- -PID`, what the model is told).
//! The realm's pid namespace is what keeps signals in: no process outside
//! it has a pid a command can name, and its init ignores what it has no
//! handler for.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    path_beneath_rules,
};

use crate::error::Error;

/// The newest ABI whose rights this crate knows. The crate's best-effort
/// mode drops the rights an older kernel lacks; [`abi_version`] tells which
/// ones are enforced.
const TARGET_ABI: ABI = ABI::V10;

/// ABI of the kernel's Landlock, 0 when absent or disabled at boot.
pub fn abi_version() -> i32 {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute and
    // size 0 only asks for the version; no memory is passed.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    i32::try_from(version).unwrap_or(0).max(0)
}

/// Rights on a writable root: everything except creating device nodes (a
/// block device made inside the workspace would open the raw disk).
fn write_access() -> BitFlags<AccessFs> {
    AccessFs::from_all(TARGET_ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock)
}

/// Rights everywhere: read, list, execute, and ioctls on devices already
/// opened (terminals, GPUs): opening a device for writing stays controlled.
fn read_access() -> BitFlags<AccessFs> {
    AccessFs::from_read(TARGET_ABI) | AccessFs::IoctlDev
}

/// Creates the ruleset with its rules and returns its file descriptor
/// (close-on-exec, so the command never holds it).
pub fn build(writable: &[PathBuf]) -> Result<OwnedFd, Error> {
    let abi = abi_version();
    if abi < 1 {
        return Err(Error::Unsupported {
            mode: "file system".to_owned(),
            feature: "Landlock",
            reason:
                "the kernel has no Landlock (Linux 5.13+ with `landlock` in the lsm= boot list)"
                    .to_owned(),
        });
    }
    let setup = |source: &dyn std::fmt::Display| Error::Setup {
        step: "building the Landlock ruleset".to_owned(),
        source: std::io::Error::other(source.to_string()),
    };
    let root = PathFd::new("/").map_err(|error| setup(&error))?;
    let created = Ruleset::default()
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .and_then(Ruleset::create)
        .and_then(|ruleset| ruleset.add_rule(PathBeneath::new(root, read_access())))
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(writable, write_access())))
        .map_err(|error| setup(&error))?;
    let descriptor: Option<OwnedFd> = created.into();
    let descriptor = descriptor.ok_or_else(|| Error::Unsupported {
        mode: "file system".to_owned(),
        feature: "Landlock",
        reason: "the kernel refused to create a ruleset".to_owned(),
    })?;
    debug_assert!(descriptor.as_raw_fd() >= 0);
    Ok(descriptor)
}

/// Enforces the ruleset on the calling process and everything it starts.
/// Async-signal-safe: one system call. `no_new_privs` must be set before.
pub fn restrict_self(ruleset: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: a plain system call on a file descriptor we own; no memory.
    let result =
        unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
