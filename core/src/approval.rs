//! The approval port: a person asked, during a call, to let one command
//! past the sandbox or the policy.
//!
//! The tool asks only when it must: the model set `outside_sandbox`, or the
//! policy blocked a command. Without an [`Approval`] nothing is asked, the
//! policy's refusals stand and `outside_sandbox` is not offered.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::policy::Rule;

/// What the person is asked to let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "rule")]
pub enum ApprovalKind {
    /// Run the command without the sandbox (the model set `outside_sandbox`).
    Sandbox,
    /// Run the command although this policy rule blocks it.
    Policy(Rule),
}

impl ApprovalKind {
    /// `sandbox`, or `policy` (the rule is named apart).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sandbox => "sandbox",
            Self::Policy(_) => "policy",
        }
    }
}

/// One question for the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// The command, as it would run (a batch: its commands, one per line).
    pub command: String,
    /// Where it would run; `None`: the environment's default directory.
    pub cwd: Option<PathBuf>,
    /// Why it is asked: the model's justification (sandbox), or the
    /// policy's message, then the model's justification when it gave one.
    pub reason: String,
    /// Past what the command would go.
    pub kind: ApprovalKind,
}

/// The person's answer: the three choices, and why a "no" was a "no".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Run it this once.
    AllowOnce,
    /// Run it, and let the same command (sandbox) or the same rule
    /// (policy) through without asking for the rest of the session.
    AllowForSession,
    /// Nothing runs.
    Deny(Refusal),
}

/// Why nothing was allowed. Every case runs nothing: an approval is never
/// assumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The person chose *deny*.
    Denied,
    /// The person (or the client) cancelled the question.
    Cancelled,
    /// No answer came within the time allowed.
    NoAnswer,
    /// The question could not be asked (the client failed, or the call
    /// was cancelled while it waited).
    NotAsked,
}

impl Refusal {
    /// How the model is told what happened.
    pub fn text(self) -> &'static str {
        match self {
            Self::Denied => "the user refused",
            Self::Cancelled => "the user cancelled the question",
            Self::NoAnswer => "the user did not answer in time",
            Self::NotAsked => "the user could not be asked",
        }
    }

    /// One word for logs: `denied`, `cancelled`, `no_answer`, `not_asked`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Denied => "denied",
            Self::Cancelled => "cancelled",
            Self::NoAnswer => "no_answer",
            Self::NotAsked => "not_asked",
        }
    }
}

impl ApprovalAnswer {
    /// One word for logs: `allow_once`, `allow_session`, or the refusal's.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AllowOnce => "allow_once",
            Self::AllowForSession => "allow_session",
            Self::Deny(refusal) => refusal.as_str(),
        }
    }
}

/// Asks a person whether a command may run past the sandbox or the policy.
///
/// The contract: `approve` returns only the person's answer; anything
/// else (a timeout, a failed client, `cancel` firing while it waits) is a
/// [`ApprovalAnswer::Deny`], never an approval. It is called once per
/// question, possibly concurrently for calls running side by side. The
/// tool remembers *allow for this session* itself, for as long as the
/// tool (and its clones) lives, so an implementation need not.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait Approval: Send + Sync {
    /// The person's answer to `request`. `cancel` fires when the call is
    /// cancelled: stop asking and answer `Deny(Refusal::NotAsked)`.
    async fn approve(&self, request: &ApprovalRequest, cancel: CancellationToken)
    -> ApprovalAnswer;

    /// Who answers, as the result tells the model (`the user, asked through
    /// the MCP client`).
    fn approver(&self) -> String {
        "the user".to_owned()
    }
}
