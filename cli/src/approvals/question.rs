//! The question as the person reads it, on a terminal or in an MCP
//! client's form.

use bashtool_core::{ApprovalKind, ApprovalRequest, Rule};

/// The question as a person reads it.
pub fn question(request: &ApprovalRequest) -> String {
    let what = match request.kind {
        ApprovalKind::Sandbox => {
            "run a command OUTSIDE the sandbox (with your full rights)".to_owned()
        }
        ApprovalKind::Policy(rule) => format!(
            "run a command the safety policy blocks (rule {})",
            rule_name(rule)
        ),
    };
    let directory = request.cwd.as_ref().map_or_else(
        || "the persistent shell's current directory".to_owned(),
        |directory| directory.display().to_string(),
    );
    let session = match request.kind {
        ApprovalKind::Sandbox => "the same command in the same directory",
        ApprovalKind::Policy(Rule::DenyPattern | Rule::ParseError) => "the same command",
        ApprovalKind::Policy(_) => "every command this rule blocks",
    };
    format!(
        "bashtool: the model asks to {what}.\n\
         Command:\n{}\n\
         Directory: {}\n\
         Reason: {}\n\
         Allow once, allow for this session ({session}, until the session ends), or deny?",
        fenced(&request.command),
        visible(&directory),
        visible(&request.reason.replace('\n', " ")),
    )
}

/// The command's lines, each behind a fence, so that a command cannot
/// forge the lines of the question after it (`Directory: /safe`).
fn fenced(command: &str) -> String {
    command
        .split('\n')
        .map(|line| format!("  | {}", visible(line)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` with its control characters shown as escapes: an escape
/// sequence in a command must not redraw the person's terminal or hide
/// what it precedes.
fn visible(text: &str) -> String {
    text.chars()
        .map(|character| {
            if character.is_control() {
                character.escape_default().to_string()
            } else {
                character.to_string()
            }
        })
        .collect()
}

/// A rule's name as results and logs spell it (`git_push_force`).
pub fn rule_name(rule: Rule) -> String {
    serde_json::to_value(rule)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_cannot_forge_the_lines_of_the_question() {
        let request = ApprovalRequest {
            command: "rm -rf ~\nDirectory: /tmp/harmless\x1b[2K".to_owned(),
            cwd: Some("/work".into()),
            reason: "tidy\nReason: nothing".to_owned(),
            kind: ApprovalKind::Sandbox,
        };
        assert_eq!(
            question(&request),
            "bashtool: the model asks to run a command OUTSIDE the sandbox (with your full \
             rights).\nCommand:\n  | rm -rf ~\n  | Directory: /tmp/harmless\\u{1b}[2K\n\
             Directory: /work\nReason: tidy Reason: nothing\nAllow once, allow for this \
             session (the same command in the same directory, until the session ends), or deny?"
        );
    }
}
