//! The MCP tool definitions and the mapping of a [`ToolResult`] onto an MCP
//! `CallToolResult`.
//!
//! The `bash` tool's name, description and input schema come from core's spec
//! unchanged, so `tools/list` shows the model exactly what it can use. The
//! output schema describes [`bashtool_core::Details`], which becomes
//! `structuredContent`.
//!
//! By default it is compact: an object, with the fields named in its
//! description. The official Python SDK (`mcp` 1.x) checks the output schema
//! against the JSON Schema metaschema on every call, and that check costs
//! about 0.15 ms per property (measured: 8 ms per call for the full schema,
//! 0.17 ms for the compact one). `--output-schema full` lists every field
//! with its type, `null` wherever the value is optional, written as
//! `anyOf: [{type: X}, {type: "null"}]`, not `type: [X, "null"]`, which
//! some clients' schema converters reject.
//!
//! Both declare their dialect, draft-07 (the MCP specification lets a schema
//! name one with `$schema`; without it, 2020-12 is meant). Neither uses a
//! keyword whose meaning differs between the two, and a client that checks
//! the schema on every call checks it against draft-07's metaschema, one
//! document, instead of 2020-12's, seven joined by dynamic references:
//! measured with the Python SDK 1.x's own call (`jsonschema` 4.26), 157 µs
//! → 42 µs per call for the compact schema, 8.3 ms → 1.5 ms for the full
//! one. Draft-07 is also the dialect the TypeScript SDK's validator (Ajv's
//! default) and the MCP schema itself used before 2020-12.

use std::sync::Arc;

use bashtool_core::{ToolConfig, ToolResult, tool_spec};
use clap::ValueEnum;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

/// How much of the details the tools' output schema spells out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputSchema {
    /// An object; its description names the fields (cheap for clients
    /// that check the schema on every call).
    #[default]
    Compact,
    /// Every field with its type.
    Full,
}

/// The JSON Schema dialect the output schemas declare (see the module's
/// documentation for why not 2020-12).
pub const OUTPUT_SCHEMA_DIALECT: &str = "http://json-schema.org/draft-07/schema#";

impl OutputSchema {
    fn schema(self) -> Value {
        let mut schema = match self {
            Self::Compact => json!({
                "type": "object",
                "description": COMPACT_DESCRIPTION,
            }),
            Self::Full => details_schema(),
        };
        schema["$schema"] = Value::from(OUTPUT_SCHEMA_DIALECT);
        schema
    }
}

/// The compact output schema's description: the fields a client most often
/// reads (`--output-schema full` lists them all, with their types).
const COMPACT_DESCRIPTION: &str = "The call's details: command, success, exit_code (null if \
     killed), signal, timed_out, timeout_seconds, cancelled, execution_time_ms, \
     working_directory, log_file (the full output, when saved), truncated, total_lines, \
     total_bytes, shell (cwd and git branch after a session call), pid and output_file \
     (background jobs), notes, batch (one entry per command of `commands`), error_kind, \
     rule and field (why nothing ran), approvals (the questions put to the user and their \
     answers).";

/// The bash tool as `tools/list` shows it.
pub fn bash_tool(config: &ToolConfig, output: OutputSchema) -> Tool {
    bash_tool_from(tool_spec(config), output)
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
pub fn bash_tool_from(spec: bashtool_core::ToolSpec, output: OutputSchema) -> Tool {
    let mut tool = Tool::new(spec.name, spec.description, object(spec.input_schema))
        .with_title(BASH_TITLE)
        .with_raw_output_schema(Arc::new(object(output.schema())));
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
pub fn jobs_tool(spec: &bashtool_core::ToolSpec, output: OutputSchema) -> Tool {
    let mut tool = Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        object(spec.input_schema.clone()),
    )
    .with_title(JOBS_TITLE)
    .with_raw_output_schema(Arc::new(object(output.schema())));
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
pub fn bash_tool_json(config: &ToolConfig, output: OutputSchema) -> Value {
    serde_json::to_value(bash_tool(config, output)).unwrap_or(Value::Null)
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
            "approvals": {
                "type": "array",
                "description": "The questions put to the user for this call and their answers",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "description": "sandbox or policy"},
                        "rule": {"type": "string", "description": "The policy rule"},
                        "command": {"type": "string"},
                        "answer": {
                            "type": "string",
                            "description": "allow_once, allow_session, session_grant, denied, cancelled, no_answer or not_asked",
                        },
                        "by": {"type": "string", "description": "Who answered"},
                    },
                    "required": ["kind", "command", "answer", "by"],
                },
            },
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
            approvals: vec![bashtool_core::ApprovalDetails::default()],
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
        let tool = bash_tool(&config, OutputSchema::Full);
        let spec = tool_spec(&config);
        assert_eq!(tool.name, spec.name);
        assert_eq!(tool.description.as_deref(), Some(spec.description.as_str()));
        assert_eq!(
            Value::Object((*tool.input_schema).clone()),
            spec.input_schema
        );
        let output = tool.output_schema.expect("output schema");
        let mut expected = details_schema();
        expected["$schema"] = Value::from(OUTPUT_SCHEMA_DIALECT);
        assert_eq!(Value::Object((*output).clone()), expected);
    }

    /// The compact schema is one keyword besides its dialect and its
    /// description, and its description names every top-level field the
    /// full one lists.
    #[test]
    fn the_compact_output_schema_names_every_field_in_its_description() {
        let tool = bash_tool(&ToolConfig::default(), OutputSchema::Compact);
        let output = Value::Object((*tool.output_schema.expect("output schema")).clone());
        assert_eq!(
            output,
            json!({
                "$schema": OUTPUT_SCHEMA_DIALECT,
                "type": "object",
                "description": COMPACT_DESCRIPTION,
            })
        );
        let full = details_schema();
        for field in full["properties"].as_object().expect("object").keys() {
            assert!(COMPACT_DESCRIPTION.contains(field.as_str()), "{field}");
        }
    }
}
