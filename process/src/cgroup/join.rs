//! The step that puts a launched process into its command's cgroup: in
//! the child, before exec, so that everything it ever forks starts inside
//! (a move after the spawn would leave out what it forked meanwhile).

use std::os::fd::RawFd;
use std::sync::Arc;

use super::group::CommandCgroup;
use crate::wrapper::Wrapper;

/// A [`Wrapper`] whose step in the child writes `0` (the writer itself)
/// into each `cgroup.procs` of a [`CommandCgroup`], opened beforehand by
/// this process: the kernel checks the permission of the opener, so the
/// step works in a sandbox's user namespace too, and the child opens no
/// file (a sandbox's mounts and Landlock do not see it).
#[derive(Debug)]
pub struct JoinCgroup {
    /// Keeps the descriptors open.
    cgroup: Arc<CommandCgroup>,
    descriptors: Vec<RawFd>,
}

impl JoinCgroup {
    /// The step that moves a launched process into `cgroup`.
    pub fn new(cgroup: Arc<CommandCgroup>) -> Self {
        let descriptors = cgroup.procs_descriptors();
        Self {
            cgroup,
            descriptors,
        }
    }

    /// The cgroup it moves processes into.
    pub fn cgroup(&self) -> &Arc<CommandCgroup> {
        &self.cgroup
    }
}

// SAFETY: `pre_exec` makes one `write` system call per descriptor, from a
// static buffer, on descriptors kept open by `self.cgroup`; it allocates
// nothing, takes no lock and writes no memory but its stack.
unsafe impl Wrapper for JoinCgroup {
    fn needs_pre_exec(&self) -> bool {
        true
    }

    fn pre_exec(&self) -> std::io::Result<()> {
        for &descriptor in &self.descriptors {
            // SAFETY: write(2) is async-signal-safe; the buffer is static.
            let written = unsafe { libc::write(descriptor, b"0".as_ptr().cast(), 1) };
            if written != 1 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// `wrappers` with the step into `cgroup` first (before a sandbox's steps,
/// whose seccomp filter and Landlock come last).
pub fn join_first(
    cgroup: &Arc<CommandCgroup>,
    wrappers: &[Arc<dyn Wrapper>],
) -> Vec<Arc<dyn Wrapper>> {
    let mut joined: Vec<Arc<dyn Wrapper>> = Vec::with_capacity(wrappers.len() + 1);
    joined.push(Arc::new(JoinCgroup::new(Arc::clone(cgroup))));
    joined.extend(wrappers.iter().cloned());
    joined
}
