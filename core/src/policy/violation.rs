//! What the policy answers when it refuses a command: the [`Rule`] that
//! matched and a [`Violation`] carrying the message for the model. Every
//! check returns these, so they live apart from the check that runs them.

use serde::{Deserialize, Serialize};

/// The refusal for a blind `git add`, worded as the original specification
/// words it.
pub const GIT_ADD_MESSAGE: &str = "permission denied: blind git add commands (git add -A, git add ., git add --all, git add *) are not allowed, specify files explicitly";

/// The refusal for a forced `git push`, in the original wording.
pub const GIT_PUSH_FORCE_MESSAGE: &str = "permission denied: git push --force is not allowed. Use --force-with-lease for safer force pushes, or push without force";

/// The refusal for a recursive `rm` of critical data, in the original
/// wording.
pub const RM_CRITICAL_MESSAGE: &str = "permission denied: this rm command could delete critical data (.git, home directory, or root). Specify the full path explicitly (no wildcards, ~, or $HOME)";

/// Which rule blocked a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Blind `git add` (`-A`, `.`, `--all`, `*`).
    GitAdd,
    /// `git push --force` without a lease.
    GitPushForce,
    /// Recursive forced `rm` of `/`, `~`, `$HOME`, `.git`, `*`.
    RmCritical,
    /// A script that cannot be parsed.
    ParseError,
    /// A configured deny pattern.
    DenyPattern,
}

/// A blocked command: the rule and the message for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Violation {
    /// The rule that matched.
    pub rule: Rule,
    /// Why, and what to do instead.
    pub message: String,
}

impl Violation {
    pub(crate) fn new(rule: Rule) -> Self {
        let message = match rule {
            Rule::GitAdd => GIT_ADD_MESSAGE,
            Rule::GitPushForce => GIT_PUSH_FORCE_MESSAGE,
            Rule::RmCritical => RM_CRITICAL_MESSAGE,
            Rule::ParseError => "could not parse the command; check the quoting",
            Rule::DenyPattern => "Command blocked by safety policy",
        };
        Self {
            rule,
            message: message.to_owned(),
        }
    }

    /// A script that cannot be checked; `detail` says why.
    pub(crate) fn parse_error(detail: &str) -> Self {
        Self {
            rule: Rule::ParseError,
            message: format!("could not parse the command: {detail}; check the quoting"),
        }
    }

    pub(super) fn deny_pattern(pattern: &str) -> Self {
        Self {
            rule: Rule::DenyPattern,
            message: format!("Command blocked by safety policy: contains '{pattern}'"),
        }
    }
}
