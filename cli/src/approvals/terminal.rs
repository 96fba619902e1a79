//! `bashtool run` asks on its terminal: the question on stderr, the answer
//! a line typed on stdin. Only when stdin is a terminal: a pipe or a file
//! is not a person, and its next line is never taken for a *yes*.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::time::Duration;

use bashtool_core::{Approval, ApprovalAnswer, ApprovalRequest, Refusal};
use tokio_util::sync::CancellationToken;

/// The person at the terminal of `bashtool run`.
#[derive(Debug, Clone)]
pub struct TerminalApproval {
    pub timeout: Duration,
}

impl TerminalApproval {
    /// The approval when stdin is a terminal; `None` otherwise.
    pub fn if_terminal(timeout: Duration) -> Option<Self> {
        std::io::stdin().is_terminal().then_some(Self { timeout })
    }
}

/// What a typed line answers: `o`/`once`, `s`/`session`; anything else
/// (`d`, `deny`, an empty line, a typo) is a refusal.
fn parse(line: &str) -> ApprovalAnswer {
    match line.trim().to_ascii_lowercase().as_str() {
        "o" | "once" | "allow once" => ApprovalAnswer::AllowOnce,
        "s" | "session" | "allow for this session" => ApprovalAnswer::AllowForSession,
        _ => ApprovalAnswer::Deny(Refusal::Denied),
    }
}

#[async_trait::async_trait]
impl Approval for TerminalApproval {
    async fn approve(
        &self,
        request: &ApprovalRequest,
        cancel: CancellationToken,
    ) -> ApprovalAnswer {
        let asked = writeln!(
            std::io::stderr().lock(),
            "{}\n[o] allow once  [s] allow for this session (this run)  [d] deny  (no answer in {} s denies): ",
            super::question::question(request),
            self.timeout.as_secs()
        );
        if asked.is_err() {
            return ApprovalAnswer::Deny(Refusal::NotAsked);
        }
        // A read of stdin cannot be interrupted; on a timeout or Ctrl-C the
        // thread is left behind, and `run` exits without running anything.
        let read = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map(|read| (read, line))
        });
        tokio::select! {
            read = tokio::time::timeout(self.timeout, read) => match read {
                Err(_) => ApprovalAnswer::Deny(Refusal::NoAnswer),
                Ok(Ok(Ok((0, _)))) => ApprovalAnswer::Deny(Refusal::Cancelled),
                Ok(Ok(Ok((_, line)))) => parse(&line),
                Ok(_) => ApprovalAnswer::Deny(Refusal::NotAsked),
            },
            () = cancel.cancelled() => ApprovalAnswer::Deny(Refusal::NotAsked),
        }
    }

    fn approver(&self) -> String {
        "the user at the terminal of bashtool run".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_two_allowing_choices_allow() {
        assert_eq!(parse("o\n"), ApprovalAnswer::AllowOnce);
        assert_eq!(parse(" Once "), ApprovalAnswer::AllowOnce);
        assert_eq!(parse("s"), ApprovalAnswer::AllowForSession);
        for line in ["d", "deny", "", "\n", "yes", "y", "oo"] {
            assert_eq!(
                parse(line),
                ApprovalAnswer::Deny(Refusal::Denied),
                "{line:?}"
            );
        }
    }
}
