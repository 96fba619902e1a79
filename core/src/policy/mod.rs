//! The safety policy (placeholder until the policy module lands).

use serde::{Deserialize, Serialize};

/// Which rule blocked a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    GitAdd,
    GitPushForce,
    RmCritical,
    ParseError,
    DenyPattern,
}

/// A blocked command: the rule and the message for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Violation {
    pub rule: Rule,
    pub message: String,
}

/// Which rules are on. Guards against accidents; it is not a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfig {
    pub enabled: bool,
    pub git_add: bool,
    pub git_push_force: bool,
    pub rm_critical: bool,
    /// Seed 000's substring deny list (empty by default).
    pub deny_patterns: Vec<String>,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            git_add: true,
            git_push_force: true,
            rm_critical: true,
            deny_patterns: Vec::new(),
        }
    }
}

/// Checks a script against the policy.
pub fn check(_script: &str, _config: &PolicyConfig) -> Result<(), Violation> {
    Ok(())
}
