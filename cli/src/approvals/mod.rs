//! Asking the person at the other end before a call runs outside the
//! sandbox or past the policy: the flags (`--approvals`,
//! `--approval-timeout`), the environment that runs approved calls without
//! the sandbox, the log of every answer, and the question on a terminal
//! (`bashtool run`). The MCP front end asks through elicitation
//! (`mcp/elicitation.rs`); `bashtool call` has nobody to ask.

mod log;
mod question;
mod terminal;

use std::sync::Arc;
use std::time::Duration;

use bashtool_core::{Approval, BashTool};
#[cfg(target_os = "linux")]
use bashtool_env_local::{LocalConfig, LocalExec};
use clap::{Args, ValueEnum};

use crate::options::{RemoteArgs, ToolArgs};

pub use log::{ApprovalLog, Logged};
pub use question::question;
pub use terminal::TerminalApproval;

/// How long a question waits for its answer, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest `--approval-timeout`.
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// Whether the person is asked at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Asking {
    /// Ask when a call needs it (and the front end can reach a person).
    #[default]
    On,
    /// Never ask: `outside_sandbox` and `justification` are not offered and
    /// the policy's refusals stand.
    Off,
}

/// `--approvals` and `--approval-timeout`.
#[derive(Debug, Clone, Args)]
pub struct ApprovalArgs {
    /// Ask the person before a call runs outside the sandbox (the model's `outside_sandbox`) or past the safety policy: `on` (through MCP elicitation when the client supports it; `run`: on its terminal) or `off` (never ask; the fields are not offered) [default: on]
    #[arg(long = "approvals", value_enum, value_name = "on|off")]
    pub approvals: Option<Asking>,
    /// How long a question waits for the person's answer, in seconds; no answer runs nothing [default: 120]
    #[arg(long, value_name = "SECONDS")]
    pub approval_timeout: Option<f64>,
}

/// What the flags decided.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalSettings {
    pub asking: Asking,
    pub timeout: Duration,
}

impl ApprovalArgs {
    pub fn settings(&self) -> anyhow::Result<ApprovalSettings> {
        let timeout = match self.approval_timeout {
            None => DEFAULT_TIMEOUT,
            Some(seconds) => {
                crate::config::seconds("--approval-timeout", seconds, MAX_TIMEOUT_SECS)?
            }
        };
        anyhow::ensure!(
            !timeout.is_zero(),
            "--approval-timeout must be more than 0 seconds: no time to answer denies every question"
        );
        Ok(ApprovalSettings {
            asking: self.approvals.unwrap_or_default(),
            timeout,
        })
    }
}

/// Where approved `outside_sandbox` calls run: the same local settings
/// (variables withheld, non-interactive, logs, the owner's tie) without
/// the sandbox, a fresh shell per call and none started ahead. `None` when
/// the sandbox is already off: there is nothing to step outside of.
/// Linux only: the relay build has no local environment, so it does not
/// offer `outside_sandbox` at all.
#[cfg(target_os = "linux")]
pub fn unsandboxed_exec(local: &LocalConfig) -> Option<LocalExec> {
    local.confinement.as_ref()?;
    let config = LocalConfig {
        confinement: None,
        warm_shells: 0,
        ..local.clone()
    };
    Some(LocalExec::new(config))
}

/// Why `bashtool call` never asks, for its errors.
pub const CALL_HINT: &str = "bashtool call never asks for approval: it has no person to ask; \
    run the command with `bashtool run` on a terminal, which asks, or restart with --no-policy \
    or --sandbox off";

/// How one `bashtool run` asks: on its terminal, when stdin is one.
pub struct RunAsking {
    approval: Option<Arc<dyn Approval>>,
    #[cfg(target_os = "linux")]
    unsandboxed: Option<LocalExec>,
    hint: String,
}

/// The asking of `bashtool run` with these flags.
#[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
pub fn for_run(
    args: &ApprovalArgs,
    tool: &ToolArgs,
    remote: &RemoteArgs,
) -> anyhow::Result<RunAsking> {
    let settings = args.settings()?;
    let off = RunAsking {
        approval: None,
        #[cfg(target_os = "linux")]
        unsandboxed: None,
        hint: format!("asking is off (--approvals off); {RESTART_HINT}"),
    };
    if settings.asking == Asking::Off {
        return Ok(off);
    }
    let Some(terminal) = TerminalApproval::if_terminal(settings.timeout) else {
        return Ok(RunAsking {
            hint: format!(
                "bashtool run asks only when its stdin is a terminal, and it is not one, so \
                 nobody was asked; {RESTART_HINT}"
            ),
            ..off
        });
    };
    let log = match ApprovalLog::open(format!("run pid {}", std::process::id())) {
        Ok(log) => log,
        Err(error) => {
            return Ok(RunAsking {
                hint: format!(
                    "nobody was asked: the approvals log cannot be kept ({error:#}); {RESTART_HINT}"
                ),
                ..off
            });
        }
    };
    // A call outside the sandbox runs here, unsandboxed: never when the
    // commands run elsewhere (--remote or --remote-shell).
    #[cfg(target_os = "linux")]
    let unsandboxed = if remote.is_remote() {
        None
    } else {
        let (_, local) = tool.local_settings(&tool.file()?)?;
        unsandboxed_exec(&local)
    };
    Ok(RunAsking {
        approval: Some(Arc::new(Logged {
            inner: terminal,
            log,
        })),
        #[cfg(target_os = "linux")]
        unsandboxed,
        hint: String::new(),
    })
}

impl RunAsking {
    /// `tool`, asking as decided.
    pub fn tool(&self, tool: BashTool) -> BashTool {
        #[cfg(target_os = "linux")]
        let tool = match &self.unsandboxed {
            Some(unsandboxed) => tool.with_unsandboxed(Arc::new(unsandboxed.clone())),
            None => tool,
        };
        match &self.approval {
            Some(approval) => tool.with_approval(Arc::clone(approval)),
            None => tool.with_no_approval_hint(self.hint.clone()),
        }
    }

    /// Waits for what the call outside the sandbox left to be stopped.
    #[cfg_attr(not(target_os = "linux"), allow(clippy::unused_async))]
    pub async fn finish(&self) {
        #[cfg(target_os = "linux")]
        if let Some(unsandboxed) = &self.unsandboxed {
            unsandboxed.shutdown().await;
        }
    }
}

/// What the user can do when nobody can be asked, for a refusal's text.
pub const RESTART_HINT: &str = "the user could restart bashtool with --no-policy, or turn the \
    rule off in the config file's [policy], to let the policy's refusals through; and with \
    --writable DIR or --sandbox off to widen the sandbox";

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        approvals: ApprovalArgs,
    }

    fn settings(flags: &[&str]) -> anyhow::Result<ApprovalSettings> {
        Command::try_parse_from(std::iter::once("x").chain(flags.iter().copied()))?
            .approvals
            .settings()
    }

    #[test]
    fn asking_is_on_for_two_minutes_unless_the_flags_say_otherwise() {
        let default = settings(&[]).expect("defaults");
        assert_eq!(default.asking, Asking::On);
        assert_eq!(default.timeout, Duration::from_secs(120));
        let set = settings(&["--approvals", "off", "--approval-timeout", "2.5"]).expect("set");
        assert_eq!(set.asking, Asking::Off);
        assert_eq!(set.timeout, Duration::from_millis(2500));
    }

    #[test]
    fn a_timeout_out_of_range_is_refused_naming_the_flag() {
        for (value, message) in [
            ("0", "--approval-timeout must be more than 0 seconds"),
            (
                "-1",
                "--approval-timeout must be between 0 and 86400 seconds, not -1",
            ),
            (
                "NaN",
                "--approval-timeout must be between 0 and 86400 seconds, not NaN",
            ),
        ] {
            let flag = format!("--approval-timeout={value}");
            let error = settings(&[&flag]).expect_err(value).to_string();
            assert!(error.starts_with(message), "{value}: {error}");
        }
        let error = settings(&["--approvals", "maybe"])
            .expect_err("refused")
            .to_string();
        assert!(
            error.contains("invalid value 'maybe' for '--approvals <on|off>'"),
            "{error}"
        );
    }
}
