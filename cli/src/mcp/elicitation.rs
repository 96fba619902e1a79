//! The MCP front end of the approval port: the question goes to the
//! person through the client, as an elicitation (`elicitation/create`, MCP
//! 2025-06-18), a form with one required choice: allow once, allow for this
//! session, or deny.
//!
//! Only a client that declared the capability (form mode) is asked; the
//! server offers `outside_sandbox` and `justification` to that client
//! alone. *Decline* is a refusal, *cancel* is a cancelled question; no
//! answer within `--approval-timeout` is a refusal (and rmcp tells the
//! client the request is cancelled); a failed request is a refusal too.
//! Nothing is allowed but an accepted form that names an allowing choice.

use std::time::Duration;

use bashtool_core::{Approval, ApprovalAnswer, ApprovalRequest, Refusal};
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, ProtocolVersion};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{Peer, RoleServer, ServiceError};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The form's one field.
pub const CHOICE: &str = "decision";
/// Its values.
pub const ALLOW_ONCE: &str = "allow_once";
pub const ALLOW_SESSION: &str = "allow_session";
pub const DENY: &str = "deny";

/// Asks the person behind one MCP client.
pub struct ElicitationApproval {
    pub peer: Peer<RoleServer>,
    pub timeout: Duration,
}

/// Whether the client behind `context` can be asked: it declared
/// elicitation in form mode (a bare `elicitation: {}` means form), on a
/// protocol before 2026-07-28, which forbids a server's requests to the
/// client (rmcp refuses to send them there; such a client is not offered
/// the fields).
pub fn can_ask(context: &RequestContext<RoleServer>) -> bool {
    context
        .peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
        && context
            .protocol_version()
            .is_none_or(|version| version < ProtocolVersion::V_2026_07_28)
}

/// The form: one required choice, no default (a client that fills in
/// defaults must never answer *allow* on the person's behalf).
fn schema() -> Option<ElicitationSchema> {
    let schema = json!({
        "type": "object",
        "properties": {
            CHOICE: {
                "type": "string",
                "title": "Your decision",
                "oneOf": [
                    {"const": ALLOW_ONCE, "title": "Allow once"},
                    {"const": ALLOW_SESSION, "title": "Allow for this session"},
                    {"const": DENY, "title": "Deny"},
                ],
            },
        },
        "required": [CHOICE],
    });
    let Value::Object(object) = schema else {
        return None;
    };
    ElicitationSchema::from_json_schema(object).ok()
}

/// What an accepted form answers.
fn choice(content: Option<&Value>) -> ApprovalAnswer {
    match content
        .and_then(|content| content.get(CHOICE))
        .and_then(Value::as_str)
    {
        Some(ALLOW_ONCE) => ApprovalAnswer::AllowOnce,
        Some(ALLOW_SESSION) => ApprovalAnswer::AllowForSession,
        Some(DENY) => ApprovalAnswer::Deny(Refusal::Denied),
        // Accepted but unreadable: not an answer to act on.
        _ => ApprovalAnswer::Deny(Refusal::NotAsked),
    }
}

#[async_trait::async_trait]
impl Approval for ElicitationApproval {
    async fn approve(
        &self,
        request: &ApprovalRequest,
        cancel: CancellationToken,
    ) -> ApprovalAnswer {
        let Some(requested_schema) = schema() else {
            return ApprovalAnswer::Deny(Refusal::NotAsked);
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: crate::approvals::question(request),
            requested_schema,
        };
        let asked = self
            .peer
            .create_elicitation_with_timeout(params, Some(self.timeout));
        tokio::select! {
            answer = asked => match answer {
                Ok(result) => match result.action {
                    ElicitationAction::Accept => choice(result.content.as_ref()),
                    ElicitationAction::Decline => ApprovalAnswer::Deny(Refusal::Denied),
                    ElicitationAction::Cancel => ApprovalAnswer::Deny(Refusal::Cancelled),
                    // A later protocol's action: not an allowing answer.
                    _ => ApprovalAnswer::Deny(Refusal::NotAsked),
                },
                Err(ServiceError::Timeout { .. }) => ApprovalAnswer::Deny(Refusal::NoAnswer),
                Err(error) => {
                    tracing::warn!(%error, "the approval question failed");
                    ApprovalAnswer::Deny(Refusal::NotAsked)
                }
            },
            () = cancel.cancelled() => ApprovalAnswer::Deny(Refusal::NotAsked),
        }
    }

    fn approver(&self) -> String {
        "the user, asked through the MCP client".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_allowing_choice_allows() {
        assert_eq!(
            choice(Some(&json!({CHOICE: ALLOW_ONCE}))),
            ApprovalAnswer::AllowOnce
        );
        assert_eq!(
            choice(Some(&json!({CHOICE: ALLOW_SESSION}))),
            ApprovalAnswer::AllowForSession
        );
        assert_eq!(
            choice(Some(&json!({CHOICE: DENY}))),
            ApprovalAnswer::Deny(Refusal::Denied)
        );
        for content in [
            None,
            Some(json!({})),
            Some(json!({CHOICE: "yes"})),
            Some(json!({CHOICE: true})),
        ] {
            assert_eq!(
                choice(content.as_ref()),
                ApprovalAnswer::Deny(Refusal::NotAsked)
            );
        }
    }

    #[test]
    fn the_form_has_one_required_choice_without_a_default() {
        let schema = serde_json::to_value(schema().expect("valid schema")).expect("serializes");
        assert_eq!(schema["required"], json!([CHOICE]));
        assert!(schema["properties"][CHOICE].get("default").is_none());
        assert_eq!(
            schema["properties"][CHOICE]["oneOf"]
                .as_array()
                .map(Vec::len),
            Some(3)
        );
    }
}
