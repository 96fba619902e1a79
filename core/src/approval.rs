//! The approval port (seed 000's `confirm_fn`).

/// Asked before a command runs (seed 000's `confirm_fn`). `false` refuses it
/// and nothing runs.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait Approval: Send + Sync {
    /// True to let `command` run; false refuses it and nothing runs.
    async fn approve(&self, command: &str) -> bool;
}

/// The default approval: every command is approved.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

#[async_trait::async_trait]
impl Approval for ApproveAll {
    async fn approve(&self, _command: &str) -> bool {
        true
    }
}
