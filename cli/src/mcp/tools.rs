//! The MCP tool definitions and the mapping of a [`ToolResult`] onto an MCP
//! `CallToolResult`.
//!
//! The `bash` tool's name, description and input schema come from core's spec
//! unchanged, so `tools/list` shows the model exactly what it can use. The
//! output schema describes [`bashtool_core::Details`], which becomes
//! `structuredContent`; clients such as the TypeScript SDK validate one
//! against the other, so every field the details may carry is listed, with
//! `null` wherever the value is optional. Optional values are written as
//! `anyOf: [{type: X}, {type: "null"}]`, not `type: [X, "null"]`, which
//! some clients' schema converters reject.

use std::sync::Arc;

use bashtool_core::{ToolConfig, ToolResult, tool_spec};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

/// The bash tool as `tools/list` shows it.
pub fn bash_tool(config: &ToolConfig) -> Tool {
    bash_tool_from(tool_spec(config))
}

/// The human title of the bash tool (clients show it instead of the name).
pub const BASH_TITLE: &str = "Run a shell command";
/// The human title of the `bash_jobs` tool.
pub const JOBS_TITLE: &str = "Background and interactive jobs";

/// The bash tool from a spec (the environment's: see `BashTool::spec`).
///
/// Annotations: a command can do anything the user can (write, delete,
/// reach the network), so the tool is neither read-only nor idempotent, is
/// destructive and open-world; the sandbox narrows what it can do, but a
/// client deciding whether to ask the user must assume the worst.
pub fn bash_tool_from(spec: bashtool_core::ToolSpec) -> Tool {
    let mut tool = Tool::new(spec.name, spec.description, object(spec.input_schema))
        .with_title(BASH_TITLE)
        .with_raw_output_schema(Arc::new(object(details_schema())));
    tool.annotations = Some(
        ToolAnnotations::with_title(BASH_TITLE)
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(true),
    );
    tool
}

/// The `bash_jobs` tool as `tools/list` shows it. It reads the jobs this
/// server started, writes input to them and stops them: not read-only (a
/// stop ends a job, which `destructive` says), and not open-world, since it
/// reaches nothing but those jobs (what a job itself does was announced by
/// the `bash` call that started it).
pub fn jobs_tool(spec: &bashtool_core::ToolSpec) -> Tool {
    let mut tool = Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        object(spec.input_schema.clone()),
    )
    .with_title(JOBS_TITLE)
    .with_raw_output_schema(Arc::new(object(details_schema())));
    tool.annotations = Some(
        ToolAnnotations::with_title(JOBS_TITLE)
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(false),
    );
    tool
}

/// The MCP-format definition printed by `bashtool schema --format mcp`.
pub fn bash_tool_json(config: &ToolConfig) -> Value {
    serde_json::to_value(bash_tool(config)).unwrap_or(Value::Null)
}

/// A core result as an MCP result: text content, `isError`, and the details
/// as `structuredContent`.
pub fn call_result(result: &ToolResult) -> CallToolResult {
    let content = result
        .content
        .iter()
        .map(|content| ContentBlock::text(content.as_text()))
        .collect();
    let mut call = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    call.structured_content = serde_json::to_value(&result.details).ok();
    call
}

pub fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn nullable(kind: &str, description: &str) -> Value {
    json!({"anyOf": [{"type": kind}, {"type": "null"}], "description": description})
}

/// JSON schema of [`bashtool_core::Details`] (the `structuredContent`).
pub fn details_schema() -> Value {
    let batch_item = json!({
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "exit_code": nullable("integer", "Exit code"),
            "signal": nullable("string", "Signal that ended it"),
            "success": {"type": "boolean"},
            "timed_out": {"type": "boolean"},
            "cancelled": {"type": "boolean"},
            "skipped": {"type": "boolean"},
            "execution_time_ms": {"type": "integer", "minimum": 0},
            "log_file": nullable("string", "Full log"),
            "truncated": {"type": "boolean"},
            "total_lines": {"type": "integer", "minimum": 0},
            "total_bytes": {"type": "integer", "minimum": 0},
        },
        "required": ["command", "success"],
    });
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command as run"},
            "exit_code": nullable("integer", "Exit code, if it exited"),
            "signal": nullable("string", "Name of the signal that ended it (SIGKILL), if any"),
            "success": {"type": "boolean", "description": "Exit code 0, no signal, timeout or cancel"},
            "timed_out": {"type": "boolean"},
            "cancelled": {"type": "boolean"},
            "execution_time_ms": {"type": "integer", "minimum": 0},
            "working_directory": nullable("string", "Where it ran"),
            "log_file": nullable("string", "The full output, when it was saved"),
            "truncated": {"type": "boolean", "description": "The text shows a shortened output"},
            "total_lines": {"type": "integer", "minimum": 0},
            "total_bytes": {"type": "integer", "minimum": 0},
            "timeout_seconds": {"type": "integer", "minimum": 0},
            "pid": {"type": "integer", "minimum": 0, "description": "Background job's pid"},
            "output_file": {"type": "string", "description": "Background job's output file"},
            "error_kind": {
                "type": "string",
                "description": "Why nothing ran: invalid_input, blocked, not_approved, spawn_failed",
            },
            "rule": {"type": "string", "description": "The policy rule that blocked it"},
            "field": {"type": "string", "description": "The invalid input field"},
            "shell": {
                "type": "object",
                "description": "Where the persistent shell stands now",
                "properties": {
                    "cwd": {"type": "string"},
                    "git_branch": nullable("string", "Current git branch"),
                    "restarted": {"type": "boolean"},
                },
            },
            "notes": {"type": "array", "items": {"type": "string"}},
            "batch": {"type": "array", "items": batch_item},
        },
        "required": ["command", "success", "timed_out", "cancelled"],
    })
}

#[cfg(test)]
mod tests {
    use bashtool_core::{BatchItemDetails, Details, ShellState};

    use super::*;

    /// Every key details can carry is described, so a client that validates
    /// `structuredContent` against the output schema accepts it.
    #[test]
    fn output_schema_lists_every_details_field() {
        let details = Details {
            timeout_seconds: Some(1),
            pid: Some(1),
            output_file: Some("f".into()),
            error_kind: Some("blocked".into()),
            rule: Some(bashtool_core::Rule::GitAdd),
            field: Some("command".into()),
            shell: Some(ShellState::default()),
            notes: vec!["n".into()],
            batch: Some(vec![BatchItemDetails {
                command: "c".into(),
                exit_code: None,
                signal: None,
                success: true,
                timed_out: false,
                cancelled: false,
                skipped: false,
                execution_time_ms: 0,
                log_file: None,
                truncated: false,
                total_lines: 0,
                total_bytes: 0,
            }]),
            ..Details::default()
        };
        let value = serde_json::to_value(&details).expect("serializes");
        let schema = details_schema();
        let mut keys: Vec<&String> = value.as_object().expect("object").keys().collect();
        let mut described: Vec<&String> = schema["properties"]
            .as_object()
            .expect("object")
            .keys()
            .collect();
        keys.sort();
        described.sort();
        assert_eq!(keys, described);
        let item = &value["batch"][0];
        let mut item_keys: Vec<&String> = item.as_object().expect("object").keys().collect();
        let mut item_described: Vec<&String> = schema["properties"]["batch"]["items"]["properties"]
            .as_object()
            .expect("object")
            .keys()
            .collect();
        item_keys.sort();
        item_described.sort();
        assert_eq!(item_keys, item_described);
    }

    #[test]
    fn bash_tool_carries_the_core_spec() {
        let config = ToolConfig::default();
        let tool = bash_tool(&config);
        let spec = tool_spec(&config);
        assert_eq!(tool.name, spec.name);
        assert_eq!(tool.description.as_deref(), Some(spec.description.as_str()));
        assert_eq!(
            Value::Object((*tool.input_schema).clone()),
            spec.input_schema
        );
        assert!(tool.output_schema.is_some());
    }
}
