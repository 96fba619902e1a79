//! What the environment asks of the realm its commands run in (a sandbox's
//! namespaces), through its wrappers: who adopts a command's orphans, the
//! pids commands see, and the realm's say at a call's boundaries.

use std::sync::Arc;

use bashtool_core::ExecError;
use bashtool_process::{Realm, Wrapper, realm_of};

/// The process that adopts a command's orphans inside the realm.
pub(crate) fn adopter(wrappers: &[Arc<dyn Wrapper>]) -> Option<u32> {
    realm_of(wrappers).and_then(Realm::adopter)
}

/// The pid the host process `host_pid` has for the commands, when it
/// differs.
pub(crate) fn inner_pid(wrappers: &[Arc<dyn Wrapper>], host_pid: u32) -> Option<u32> {
    realm_of(wrappers).and_then(|realm| realm.inner_pid(host_pid))
}

/// Before a call of a long-lived process inside (a session's shell).
pub(crate) fn before_call(wrappers: &[Arc<dyn Wrapper>]) -> Result<(), ExecError> {
    realm_of(wrappers).map_or(Ok(()), |realm| {
        realm.before_call().map_err(crate::error::exec_error)
    })
}

/// After a call: the realm's notes for its result.
pub(crate) fn after_call(wrappers: &[Arc<dyn Wrapper>]) -> Vec<String> {
    realm_of(wrappers).map_or_else(Vec::new, Realm::after_call)
}
