//! What a server killed with SIGKILL left behind, cleaned up when the next
//! one starts: processes tied to an owner that is gone (see
//! `bashtool_process::StopWithOwner`) and session directories of processes
//! that are gone.

/// What [`reap_orphans`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reaped {
    /// Processes killed (owned by a server that is gone).
    pub processes: usize,
    /// Session directories removed.
    pub directories: usize,
}

/// Kills the processes of owners that are gone and removes the session
/// directories of processes that are gone. Only our own user's are touched.
pub fn reap_orphans() -> Reaped {
    Reaped {
        processes: bashtool_process::reap_orphans().processes,
        directories: crate::session::remove_stale_session_dirs(),
    }
}
