//! The log of approvals: every question put to a person, when, and the
//! answer, one JSON object a line in `approvals.jsonl` of the per-user state
//! directory (0700; the file 0600), beside the sessions' state.
//!
//! An answer that cannot be logged is not acted on: a *yes* nobody could
//! audit later becomes a refusal, said so in the server's log.

use std::io::Write as _;
#[cfg(unix)]
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use bashtool_core::{Approval, ApprovalAnswer, ApprovalKind, ApprovalRequest, Refusal};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The file of the approvals log, for one session of a front end.
#[derive(Debug, Clone)]
pub struct ApprovalLog {
    path: PathBuf,
    /// Which front end and session asked (`mcp stdio, pid 42`).
    session: String,
    /// One write at a time, so lines never interleave within this process
    /// (each line is one `write` to an `O_APPEND` file across processes).
    lock: Arc<Mutex<()>>,
}

/// The file name in the state directory.
pub const LOG_FILE: &str = "approvals.jsonl";

impl ApprovalLog {
    /// The log in the per-user state directory, checked private (created
    /// 0700 if needed); `session` names who asks.
    pub fn open(session: impl Into<String>) -> anyhow::Result<Self> {
        #[cfg(target_os = "linux")]
        let directory = bashtool_env_local::default_state_dir()?;
        #[cfg(target_os = "linux")]
        bashtool_env_local::ensure_private_dir(&directory)?;
        #[cfg(not(target_os = "linux"))]
        let directory = crate::relay::default_state_dir()?;
        #[cfg(not(target_os = "linux"))]
        crate::relay::ensure_private_dir(&directory)?;
        Ok(Self {
            path: directory.join(LOG_FILE),
            session: session.into(),
            lock: Arc::default(),
        })
    }

    /// Appends one answer.
    pub fn record(&self, request: &ApprovalRequest, answer: ApprovalAnswer) -> std::io::Result<()> {
        let line = json!({
            "time": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "session": self.session,
            "kind": request.kind.as_str(),
            "rule": match request.kind {
                ApprovalKind::Policy(rule) => Some(super::question::rule_name(rule)),
                ApprovalKind::Sandbox => None,
            },
            "command": request.command,
            "cwd": request.cwd,
            "reason": request.reason,
            "answer": answer.as_str(),
        });
        let mut bytes = serde_json::to_vec(&line)?;
        bytes.push(b'\n');
        let _one_at_a_time = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        // On Windows the file is private by its directory's ACL
        // (`%LOCALAPPDATA%`).
        #[cfg(unix)]
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        let mut file = options.open(&self.path)?;
        // A file created by an older version, or copied in, is narrowed.
        #[cfg(unix)]
        if file.metadata()?.permissions().mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        file.write_all(&bytes)
    }
}

/// An approval whose every answer goes to the log first.
pub struct Logged<A> {
    pub inner: A,
    pub log: ApprovalLog,
}

#[async_trait::async_trait]
impl<A: Approval> Approval for Logged<A> {
    async fn approve(
        &self,
        request: &ApprovalRequest,
        cancel: CancellationToken,
    ) -> ApprovalAnswer {
        let answer = self.inner.approve(request, cancel).await;
        match self.log.record(request, answer) {
            Ok(()) => answer,
            Err(error) => {
                tracing::error!(%error, path = %self.log.path.display(), "the approvals log could not be written: the answer is not acted on");
                if matches!(answer, ApprovalAnswer::Deny(_)) {
                    answer
                } else {
                    ApprovalAnswer::Deny(Refusal::NotAsked)
                }
            }
        }
    }

    fn approver(&self) -> String {
        self.inner.approver()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_one_private_line_per_answer() {
        let directory = tempfile::tempdir().expect("temp dir");
        let log = ApprovalLog {
            path: directory.path().join(LOG_FILE),
            session: "test".to_owned(),
            lock: Arc::default(),
        };
        let request = ApprovalRequest {
            command: "git push --force".to_owned(),
            cwd: Some("/work".into()),
            reason: "the rule".to_owned(),
            kind: ApprovalKind::Policy(bashtool_core::Rule::GitPushForce),
        };
        log.record(&request, ApprovalAnswer::AllowOnce)
            .expect("written");
        log.record(&request, ApprovalAnswer::Deny(Refusal::NoAnswer))
            .expect("written");
        let text = std::fs::read_to_string(&log.path).expect("read");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("json"))
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["answer"], "allow_once");
        assert_eq!(lines[1]["answer"], "no_answer");
        assert_eq!(lines[0]["rule"], "git_push_force");
        assert_eq!(lines[0]["kind"], "policy");
        assert_eq!(lines[0]["command"], "git push --force");
        assert_eq!(lines[0]["cwd"], "/work");
        assert_eq!(lines[0]["session"], "test");
        assert!(lines[0]["time"].as_str().expect("time").ends_with('Z'));
        let mode = std::fs::metadata(&log.path)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
