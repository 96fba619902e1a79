//! Before a call runs: the questions the tool puts to a person through the
//! [`Approval`] port (a command the policy blocks, a call the model wants
//! outside the sandbox), and the session's standing answers.
//!
//! Nothing is ever allowed without an answer: no approval port, a refusal,
//! a cancelled question or no answer in time all leave the call unrun.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::approval::{Approval, ApprovalAnswer, ApprovalKind, ApprovalRequest, Refusal};
use crate::config::ToolConfig;
use crate::input::ToolInput;
use crate::policy::{self, Rule};
use crate::result::{ApprovalDetails, ToolResult};

/// What *allow for this session* covers: the same command in the same
/// directory outside the sandbox; past a policy rule, the same rule, except
/// for the rules that are not one mistake but many (a configured pattern,
/// an unparsable script), where only the same command is covered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Grant {
    Sandbox {
        command: String,
        cwd: Option<PathBuf>,
    },
    Rule(Rule),
    RuleForCommand {
        rule: Rule,
        command: String,
    },
}

/// The standing answers of one session (one tool and its clones: one MCP
/// session). They live in memory only, so they end with it.
#[derive(Debug, Default)]
pub(crate) struct Grants(Mutex<HashSet<Grant>>);

impl Grants {
    fn has(&self, grant: &Grant) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(grant)
    }

    fn add(&self, grant: Grant) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(grant);
    }
}

/// Who may be asked, and what to say when nobody can be.
pub(crate) struct Asker<'a> {
    pub approval: Option<&'a dyn Approval>,
    pub grants: &'a Grants,
    /// Why nobody is asked and what the user could do, appended to a
    /// policy refusal when there is no approval port.
    pub no_approval_hint: Option<&'a str>,
    pub cancel: &'a CancellationToken,
}

/// The name of a rule in results (`git_push_force`).
pub(crate) fn rule_name(rule: Rule) -> String {
    serde_json::to_value(rule)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl Asker<'_> {
    /// The questions `input` needs, asked in order (each blocked command,
    /// then the sandbox); the answers that let it run, or the refusal to
    /// return instead of running anything.
    pub async fn clear(
        &self,
        input: &ToolInput,
        config: &ToolConfig,
    ) -> Result<Vec<ApprovalDetails>, ToolResult> {
        let display = input.display_command();
        let mut answers = Vec::new();
        for command in input.commands.as_slice() {
            let Err(violation) = policy::check(command, &config.policy) else {
                continue;
            };
            let rule = violation.rule;
            let grant = match rule {
                Rule::DenyPattern | Rule::ParseError => Grant::RuleForCommand {
                    rule,
                    command: command.clone(),
                },
                _ => Grant::Rule(rule),
            };
            let Some(approval) = self.approval else {
                let mut text = violation.message.clone();
                if let Some(hint) = self.no_approval_hint {
                    text.push_str(&format!(" ({hint})"));
                }
                let mut result = ToolResult::refused(&display, "blocked", text);
                result.details.rule = Some(rule);
                return Err(result);
            };
            let mut reason = format!("the safety policy blocks it: {}", violation.message);
            if let Some(justification) = &input.justification {
                reason.push_str(&format!(". The model says: {justification}"));
            }
            let request = ApprovalRequest {
                command: command.clone(),
                cwd: policy_cwd(input, config),
                reason,
                kind: ApprovalKind::Policy(rule),
            };
            answers.push(self.ask(approval, request, grant, &display).await?);
        }
        if input.outside_sandbox {
            let Some(approval) = self.approval else {
                return Err(ToolResult::refused(
                    &display,
                    "not_approved",
                    "Not run: nobody can be asked to approve outside_sandbox here.",
                ));
            };
            let cwd = effective_cwd(input, config);
            let reason = input.justification.clone().unwrap_or_else(|| {
                "the model asks to run it without the sandbox and gave no justification".to_owned()
            });
            let grant = Grant::Sandbox {
                command: display.clone(),
                cwd: cwd.clone(),
            };
            let request = ApprovalRequest {
                command: display.clone(),
                cwd,
                reason,
                kind: ApprovalKind::Sandbox,
            };
            answers.push(self.ask(approval, request, grant, &display).await?);
        }
        Ok(answers)
    }

    async fn ask(
        &self,
        approval: &dyn Approval,
        request: ApprovalRequest,
        grant: Grant,
        display: &str,
    ) -> Result<ApprovalDetails, ToolResult> {
        let details = |answer: &str| ApprovalDetails {
            kind: request.kind.as_str().to_owned(),
            rule: match request.kind {
                ApprovalKind::Policy(rule) => Some(rule),
                ApprovalKind::Sandbox => None,
            },
            command: request.command.clone(),
            answer: answer.to_owned(),
            by: approval.approver(),
        };
        if self.grants.has(&grant) {
            return Ok(details("session_grant"));
        }
        let answer = if self.cancel.is_cancelled() {
            ApprovalAnswer::Deny(Refusal::NotAsked)
        } else {
            approval.approve(&request, self.cancel.clone()).await
        };
        let details = details(answer.as_str());
        match answer {
            ApprovalAnswer::AllowOnce => Ok(details),
            ApprovalAnswer::AllowForSession => {
                self.grants.add(grant);
                Ok(details)
            }
            ApprovalAnswer::Deny(refusal) => {
                let mut result =
                    ToolResult::refused(display, "not_approved", refusal_text(&request, refusal));
                result.details.rule = details.rule;
                result.details.cancelled = self.cancel.is_cancelled();
                result.details.approvals.push(details);
                Err(result)
            }
        }
    }
}

/// What the model reads when the person did not allow the call.
fn refusal_text(request: &ApprovalRequest, refusal: Refusal) -> String {
    let what = match request.kind {
        ApprovalKind::Sandbox => "to run this command outside the sandbox".to_owned(),
        ApprovalKind::Policy(rule) => format!(
            "to run this command past the safety policy (rule {})",
            rule_name(rule)
        ),
    };
    format!(
        "Not run: {} {what}, so nothing ran. Do not retry the same command or a way around it; \
         change the approach, or ask the user what they want.",
        refusal.text()
    )
}

/// The line the text of an approved call ends with: what was let through,
/// by whom.
pub(crate) fn approved_line(details: &ApprovalDetails) -> String {
    let what = match details.rule {
        Some(rule) => format!("past the safety policy rule {}", rule_name(rule)),
        None => "outside the sandbox, in a fresh shell".to_owned(),
    };
    let how = match details.answer.as_str() {
        "allow_once" => "approved once",
        "allow_session" => "approved for this session",
        _ => "approved earlier for this session",
    };
    format!("[ran {what}: {how} by {}]", details.by)
}

/// Where a call outside the sandbox runs: its `working_directory`, taken
/// from the configured one when relative, else the configured one.
fn effective_cwd(input: &ToolInput, config: &ToolConfig) -> Option<PathBuf> {
    match (&input.working_directory, &config.working_directory) {
        (Some(directory), Some(base)) => Some(base.join(directory)),
        (Some(directory), None) => Some(directory.clone()),
        (None, base) => base.clone(),
    }
}

/// Where a blocked command runs: as [`effective_cwd`], except that a
/// persistent shell runs it where it stands, which the tool does not know
/// (`None`: the question says so).
fn policy_cwd(input: &ToolInput, config: &ToolConfig) -> Option<PathBuf> {
    if config.persistent_session && input.working_directory.is_none() {
        return None;
    }
    effective_cwd(input, config)
}
