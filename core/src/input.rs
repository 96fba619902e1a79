//! Parsing and validating what the model sends. Invalid input runs nothing
//! and gets an error that names the field and what is allowed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::config::{MAX_BATCH_COMMANDS, ToolConfig};

/// the text for both `command` and `commands`.
pub const BOTH_COMMAND_FIELDS: &str = "Provide either 'command' or 'commands', not both";
/// the text for neither.
pub const NO_COMMAND_FIELD: &str =
    "Either 'command' (string) or 'commands' (array of strings) is required";

/// `mode` as the model sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// The default timeout (30 s).
    #[default]
    Default,
    /// The slow timeout (15 min) for builds and tests.
    Slow,
    /// Detached: returns at once with a job.
    Background,
    /// In a terminal: returns when the program exits, waits for input, or
    /// at the yield time; the jobs tool types into it.
    Interactive,
}

impl Mode {
    /// The name in the input (`default`, `slow`, `background`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Slow => "slow",
            Self::Background => "background",
            Self::Interactive => "interactive",
        }
    }
}

/// One command or a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Commands {
    /// One command.
    Single(String),
    /// Several commands, run in order.
    Batch(Vec<String>),
}

impl Commands {
    /// The commands in order.
    pub fn as_slice(&self) -> &[String] {
        match self {
            Self::Single(command) => std::slice::from_ref(command),
            Self::Batch(commands) => commands,
        }
    }
}

/// A validated tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInput {
    /// What to run.
    pub commands: Commands,
    /// How long it may take, or detached.
    pub mode: Mode,
    /// Seconds, when the model set one.
    pub timeout: Option<u64>,
    /// Where to run; `None`: the environment's default.
    pub working_directory: Option<PathBuf>,
    /// Variables added for this call.
    pub environment: BTreeMap<String, String>,
    /// Run without the sandbox, once a person approves.
    pub outside_sandbox: bool,
    /// What the person reads when asked.
    pub justification: Option<String>,
}

impl ToolInput {
    /// A plain single command with every default.
    pub fn command(command: impl Into<String>) -> Self {
        Self {
            commands: Commands::Single(command.into()),
            mode: Mode::Default,
            timeout: None,
            working_directory: None,
            environment: BTreeMap::new(),
            outside_sandbox: false,
            justification: None,
        }
    }

    /// The deadline for each command: the explicit timeout, or the mode's.
    pub fn effective_timeout(&self, config: &ToolConfig) -> Option<Duration> {
        match (self.timeout, self.mode) {
            (Some(seconds), _) => Some(Duration::from_secs(seconds)),
            (None, Mode::Default) => Some(config.default_timeout),
            // Interactive: the whole life of the job.
            (None, Mode::Slow | Mode::Interactive) => Some(config.slow_timeout),
            (None, Mode::Background) => None,
        }
    }

    /// The command text for reports: the command, or the batch joined.
    pub fn display_command(&self) -> String {
        match &self.commands {
            Commands::Single(command) => command.clone(),
            Commands::Batch(commands) => commands.join("\n"),
        }
    }
}

/// The command text of a raw, maybe invalid input: `command`, or the
/// batch joined by lines (what the details of a valid call would say).
pub(crate) fn raw_command(input: &Value) -> String {
    if let Some(command) = input.get("command").and_then(Value::as_str) {
        return command.to_owned();
    }
    input
        .get("commands")
        .and_then(Value::as_array)
        .map(|commands| {
            commands
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Why an input was rejected: the field and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InputError {
    /// The offending field, or `input` for the whole object.
    pub field: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl InputError {
    fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The fields the config lets the model use, in schema order.
pub fn allowed_fields(config: &ToolConfig) -> Vec<&'static str> {
    let fields = &config.fields;
    let mut names = vec!["command"];
    for (enabled, name) in [
        (fields.commands, "commands"),
        (fields.mode, "mode"),
        (fields.timeout, "timeout"),
        (fields.working_directory, "working_directory"),
        (fields.environment, "environment"),
        (fields.outside_sandbox, "outside_sandbox"),
        (fields.justification, "justification"),
    ] {
        if enabled {
            names.push(name);
        }
    }
    names
}

/// Parses and validates a tool call. Checks everything that can be checked
/// without touching the system; the environment checks that the working
/// directory exists.
pub fn validate_input(input: &Value, config: &ToolConfig) -> Result<ToolInput, InputError> {
    let Value::Object(object) = input else {
        return Err(InputError::new(
            "input",
            format!(
                "the input must be a JSON object such as {{\"command\": \"ls\"}}, got {}",
                type_name(input)
            ),
        ));
    };
    let allowed = allowed_fields(config);
    if let Some(unknown) = object.keys().find(|key| !allowed.contains(&key.as_str())) {
        return Err(InputError::new(
            unknown,
            format!(
                "unknown field '{unknown}'; the allowed fields are: {}",
                allowed.join(", ")
            ),
        ));
    }
    let commands = parse_commands(object.get("command"), object.get("commands"), config)?;
    let mode = parse_mode(object.get("mode"), config)?;
    let timeout = parse_timeout(object.get("timeout"), config)?;
    if mode == Mode::Interactive && matches!(commands, Commands::Batch(_)) {
        return Err(InputError::new(
            "mode",
            "mode 'interactive' runs one 'command'; it cannot be used with 'commands'",
        ));
    }
    if mode == Mode::Background {
        if matches!(commands, Commands::Batch(_)) {
            return Err(InputError::new(
                "mode",
                "mode 'background' runs one 'command'; it cannot be used with 'commands'",
            ));
        }
        if timeout.is_some() {
            return Err(InputError::new(
                "timeout",
                "'timeout' does not apply to mode 'background': a background job runs until it ends or is stopped",
            ));
        }
    }
    let working_directory = parse_working_directory(object.get("working_directory"))?;
    let environment = parse_environment(object.get("environment"))?;
    let outside_sandbox = parse_outside_sandbox(object.get("outside_sandbox"), mode)?;
    let justification = parse_justification(object.get("justification"))?;
    Ok(ToolInput {
        commands,
        mode,
        timeout,
        working_directory,
        environment,
        outside_sandbox,
        justification,
    })
}

/// Longest `justification`: one sentence, not a document.
pub const MAX_JUSTIFICATION_CHARS: usize = 500;

fn parse_outside_sandbox(value: Option<&Value>, mode: Mode) -> Result<bool, InputError> {
    let outside = match value {
        None => return Ok(false),
        Some(Value::Bool(outside)) => *outside,
        Some(other) => {
            return Err(InputError::new(
                "outside_sandbox",
                format!(
                    "'outside_sandbox' must be true or false, got {}",
                    type_name(other)
                ),
            ));
        }
    };
    // A job outlives the call the person approved, and would be reached
    // later through the jobs tool without a question.
    if outside && matches!(mode, Mode::Background | Mode::Interactive) {
        return Err(InputError::new(
            "outside_sandbox",
            format!(
                "'outside_sandbox' runs one call in the foreground (mode default or slow); \
                 it cannot be used with mode '{}'",
                mode.as_str()
            ),
        ));
    }
    Ok(outside)
}

fn parse_justification(value: Option<&Value>) -> Result<Option<String>, InputError> {
    match value {
        None => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Err(InputError::new(
            "justification",
            "'justification' must be one sentence for the user, not blank",
        )),
        Some(Value::String(text)) if text.chars().count() > MAX_JUSTIFICATION_CHARS => {
            Err(InputError::new(
                "justification",
                format!(
                    "'justification' must be one sentence of at most {MAX_JUSTIFICATION_CHARS} \
                     characters, got {}",
                    text.chars().count()
                ),
            ))
        }
        Some(Value::String(text)) => Ok(Some(text.trim().to_owned())),
        Some(other) => Err(InputError::new(
            "justification",
            format!("'justification' must be a string, got {}", type_name(other)),
        )),
    }
}

fn parse_command_text(
    field: &str,
    value: &Value,
    config: &ToolConfig,
) -> Result<String, InputError> {
    let Value::String(text) = value else {
        return Err(InputError::new(
            field,
            format!("'{field}' must be a string, got {}", type_name(value)),
        ));
    };
    if text.trim().is_empty() {
        return Err(InputError::new(
            field,
            format!("'{field}' must not be blank: give the shell command to run"),
        ));
    }
    if text.len() > config.max_command_bytes {
        return Err(InputError::new(
            field,
            format!(
                "'{field}' is {} bytes; the limit is {} bytes. For long scripts, write them to a file first and run the file",
                text.len(),
                config.max_command_bytes
            ),
        ));
    }
    if text.contains('\0') {
        return Err(InputError::new(
            field,
            format!("'{field}' must not contain a NUL character"),
        ));
    }
    Ok(text.clone())
}

fn parse_commands(
    command: Option<&Value>,
    commands: Option<&Value>,
    config: &ToolConfig,
) -> Result<Commands, InputError> {
    match (command, commands) {
        (Some(_), Some(_)) => Err(InputError::new("commands", BOTH_COMMAND_FIELDS)),
        (None, None) => Err(InputError::new(
            "command",
            if config.fields.commands {
                NO_COMMAND_FIELD
            } else {
                "'command' (string) is required"
            },
        )),
        (Some(command), None) => Ok(Commands::Single(parse_command_text(
            "command", command, config,
        )?)),
        (None, Some(commands)) => {
            let Value::Array(items) = commands else {
                return Err(InputError::new(
                    "commands",
                    format!(
                        "'commands' must be an array of strings, got {}",
                        type_name(commands)
                    ),
                ));
            };
            if items.is_empty() {
                return Err(InputError::new(
                    "commands",
                    "'commands' must contain at least one command",
                ));
            }
            if items.len() > MAX_BATCH_COMMANDS {
                return Err(InputError::new(
                    "commands",
                    format!(
                        "'commands' has {} items; at most {MAX_BATCH_COMMANDS} are allowed",
                        items.len()
                    ),
                ));
            }
            let texts = items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    parse_command_text(&format!("commands[{index}]"), item, config)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let total: usize = texts.iter().map(String::len).sum();
            if total > config.max_command_bytes {
                return Err(InputError::new(
                    "commands",
                    format!(
                        "'commands' add up to {total} bytes; the limit is {} bytes",
                        config.max_command_bytes
                    ),
                ));
            }
            Ok(Commands::Batch(texts))
        }
    }
}

fn parse_mode(value: Option<&Value>, config: &ToolConfig) -> Result<Mode, InputError> {
    let allowed = match (config.fields.background, config.fields.interactive) {
        (true, true) => "'default', 'slow', 'background' or 'interactive'",
        (true, false) => "'default', 'slow' or 'background'",
        (false, true) => "'default', 'slow' or 'interactive'",
        (false, false) => "'default' or 'slow'",
    };
    match value {
        None | Some(Value::Null) => Ok(Mode::Default),
        Some(Value::String(text)) => match text.as_str() {
            "default" => Ok(Mode::Default),
            "slow" => Ok(Mode::Slow),
            "background" if config.fields.background => Ok(Mode::Background),
            "interactive" if config.fields.interactive => Ok(Mode::Interactive),
            other => Err(InputError::new(
                "mode",
                format!("unknown mode '{other}'; 'mode' must be {allowed}"),
            )),
        },
        Some(other) => Err(InputError::new(
            "mode",
            format!(
                "'mode' must be a string, {allowed}; got {}",
                type_name(other)
            ),
        )),
    }
}

fn parse_timeout(value: Option<&Value>, config: &ToolConfig) -> Result<Option<u64>, InputError> {
    let max = config.max_timeout_secs;
    let allowed = format!("'timeout' must be a whole number of seconds from 1 to {max}");
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => {
            let seconds = number.as_u64().or_else(|| {
                number
                    .as_f64()
                    .filter(|float| {
                        float.fract() == 0.0 && *float >= 0.0 && *float <= u64::MAX as f64
                    })
                    .map(|float| float as u64)
            });
            match seconds {
                Some(seconds) if (1..=max).contains(&seconds) => Ok(Some(seconds)),
                _ => Err(InputError::new(
                    "timeout",
                    format!("{allowed}; got {number}"),
                )),
            }
        }
        Some(other) => Err(InputError::new(
            "timeout",
            format!("{allowed}; got {}", type_name(other)),
        )),
    }
}

fn parse_working_directory(value: Option<&Value>) -> Result<Option<PathBuf>, InputError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if !text.trim().is_empty() && !text.contains('\0') => {
            Ok(Some(PathBuf::from(text)))
        }
        Some(Value::String(_)) => Err(InputError::new(
            "working_directory",
            "'working_directory' must be a non-empty path to an existing directory",
        )),
        Some(other) => Err(InputError::new(
            "working_directory",
            format!(
                "'working_directory' must be a string path, got {}",
                type_name(other)
            ),
        )),
    }
}

/// A shell variable name: a letter or `_`, then letters, digits or `_`.
pub fn is_valid_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|rest| rest.is_ascii_alphanumeric() || rest == '_')
}

fn parse_environment(value: Option<&Value>) -> Result<BTreeMap<String, String>, InputError> {
    let object = match value {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(InputError::new(
                "environment",
                format!(
                    "'environment' must be an object of variable names to string values, got {}",
                    type_name(other)
                ),
            ));
        }
    };
    let mut environment = BTreeMap::new();
    for (name, value) in object {
        if !is_valid_variable_name(name) {
            return Err(InputError::new(
                "environment",
                format!(
                    "'environment' has an invalid variable name '{name}'; names are letters, digits and '_', not starting with a digit"
                ),
            ));
        }
        let Value::String(text) = value else {
            return Err(InputError::new(
                "environment",
                format!(
                    "'environment.{name}' must be a string, got {}",
                    type_name(value)
                ),
            ));
        };
        if text.contains('\0') {
            return Err(InputError::new(
                "environment",
                format!("'environment.{name}' must not contain a NUL character"),
            ));
        }
        environment.insert(name.clone(), text.clone());
    }
    Ok(environment)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reject(input: &Value) -> InputError {
        validate_input(input, &ToolConfig::default()).expect_err("input should be rejected")
    }

    fn accept(input: &Value) -> ToolInput {
        validate_input(input, &ToolConfig::default()).expect("input should be accepted")
    }

    #[test]
    fn accepts_a_plain_command_with_defaults() {
        assert_eq!(
            accept(&json!({"command": "ls -la"})),
            ToolInput::command("ls -la")
        );
    }

    #[test]
    fn accepts_every_field() {
        let input = accept(&json!({
            "command": "cargo test",
            "mode": "slow",
            "timeout": 600,
            "working_directory": "/project",
            "environment": {"RUST_LOG": "debug"}
        }));
        assert_eq!(input.mode, Mode::Slow);
        assert_eq!(input.timeout, Some(600));
        assert_eq!(input.working_directory, Some(PathBuf::from("/project")));
        assert_eq!(input.environment["RUST_LOG"], "debug");
    }

    #[test]
    fn accepts_a_batch() {
        let input = accept(&json!({"commands": ["cd src", "ls"]}));
        assert_eq!(
            input.commands,
            Commands::Batch(vec!["cd src".into(), "ls".into()])
        );
    }

    #[test]
    fn rejects_a_non_object() {
        let error = reject(&json!("ls"));
        assert_eq!(error.field, "input");
        assert_eq!(
            error.message,
            "the input must be a JSON object such as {\"command\": \"ls\"}, got a string"
        );
    }

    #[test]
    fn rejects_both_command_and_commands() {
        let error = reject(&json!({"command": "ls", "commands": ["ls"]}));
        assert_eq!(error.message, BOTH_COMMAND_FIELDS);
    }

    #[test]
    fn rejects_neither_command_nor_commands() {
        let error = reject(&json!({}));
        assert_eq!(
            (error.field.as_str(), error.message.as_str()),
            ("command", NO_COMMAND_FIELD)
        );
    }

    #[test]
    fn rejects_a_missing_command_when_batches_are_off() {
        let mut config = ToolConfig::default();
        config.fields.commands = false;
        let error = validate_input(&json!({}), &config).expect_err("rejected");
        assert_eq!(error.message, "'command' (string) is required");
    }

    #[test]
    fn rejects_a_non_string_command() {
        let error = reject(&json!({"command": 42}));
        assert_eq!(error.field, "command");
        assert_eq!(error.message, "'command' must be a string, got a number");
    }

    #[test]
    fn rejects_a_blank_command() {
        let error = reject(&json!({"command": "  \n"}));
        assert_eq!(
            error.message,
            "'command' must not be blank: give the shell command to run"
        );
    }

    #[test]
    fn rejects_a_command_over_the_size_limit() {
        let error = reject(&json!({"command": "x".repeat(MAX_COMMAND_BYTES_PLUS_ONE)}));
        assert_eq!(error.field, "command");
        assert!(
            error
                .message
                .starts_with("'command' is 262145 bytes; the limit is 262144 bytes")
        );
    }
    const MAX_COMMAND_BYTES_PLUS_ONE: usize = crate::config::MAX_COMMAND_BYTES + 1;

    #[test]
    fn rejects_a_nul_in_the_command() {
        let error = reject(&json!({"command": "ls\u{0}"}));
        assert_eq!(error.message, "'command' must not contain a NUL character");
    }

    #[test]
    fn rejects_an_empty_batch() {
        let error = reject(&json!({"commands": []}));
        assert_eq!(
            error.message,
            "'commands' must contain at least one command"
        );
    }

    #[test]
    fn rejects_a_batch_that_is_not_an_array() {
        let error = reject(&json!({"commands": "ls"}));
        assert_eq!(
            error.message,
            "'commands' must be an array of strings, got a string"
        );
    }

    #[test]
    fn rejects_a_blank_or_non_string_item_in_a_batch() {
        let error = reject(&json!({"commands": ["ls", ""]}));
        assert_eq!(error.field, "commands[1]");
        let error = reject(&json!({"commands": ["ls", 3]}));
        assert_eq!(
            error.message,
            "'commands[1]' must be a string, got a number"
        );
    }

    #[test]
    fn rejects_an_unknown_mode() {
        let error = reject(&json!({"command": "ls", "mode": "fast"}));
        assert_eq!(error.field, "mode");
        assert_eq!(
            error.message,
            "unknown mode 'fast'; 'mode' must be 'default', 'slow' or 'background'"
        );
    }

    #[test]
    fn rejects_background_when_it_is_switched_off() {
        let mut config = ToolConfig::default();
        config.fields.background = false;
        let error = validate_input(&json!({"command": "ls", "mode": "background"}), &config)
            .expect_err("rejected");
        assert_eq!(
            error.message,
            "unknown mode 'background'; 'mode' must be 'default' or 'slow'"
        );
    }

    #[test]
    fn rejects_a_timeout_out_of_range() {
        for timeout in [json!(0), json!(1801), json!(-5), json!(2.5)] {
            let error = reject(&json!({"command": "ls", "timeout": timeout}));
            assert_eq!(error.field, "timeout");
            assert_eq!(
                error.message,
                format!(
                    "'timeout' must be a whole number of seconds from 1 to 1800; got {timeout}"
                )
            );
        }
    }

    #[test]
    fn rejects_a_timeout_of_the_wrong_type() {
        let error = reject(&json!({"command": "ls", "timeout": "30"}));
        assert_eq!(
            error.message,
            "'timeout' must be a whole number of seconds from 1 to 1800; got a string"
        );
    }

    #[test]
    fn accepts_a_whole_float_timeout() {
        assert_eq!(
            accept(&json!({"command": "ls", "timeout": 60.0})).timeout,
            Some(60)
        );
    }

    #[test]
    fn rejects_background_with_a_batch() {
        let error = reject(&json!({"commands": ["ls"], "mode": "background"}));
        assert_eq!(error.field, "mode");
    }

    #[test]
    fn rejects_background_with_a_timeout() {
        let error = reject(&json!({"command": "ls", "mode": "background", "timeout": 5}));
        assert_eq!(error.field, "timeout");
    }

    #[test]
    fn rejects_a_bad_variable_name() {
        let error = reject(&json!({"command": "ls", "environment": {"1BAD": "x"}}));
        assert_eq!(error.field, "environment");
        assert_eq!(
            error.message,
            "'environment' has an invalid variable name '1BAD'; names are letters, digits and '_', not starting with a digit"
        );
    }

    #[test]
    fn rejects_a_non_string_variable_value() {
        let error = reject(&json!({"command": "ls", "environment": {"PORT": 8080}}));
        assert_eq!(
            error.message,
            "'environment.PORT' must be a string, got a number"
        );
    }

    #[test]
    fn rejects_an_environment_that_is_not_an_object() {
        let error = reject(&json!({"command": "ls", "environment": ["A=1"]}));
        assert_eq!(
            error.message,
            "'environment' must be an object of variable names to string values, got an array"
        );
    }

    #[test]
    fn rejects_an_empty_working_directory() {
        let error = reject(&json!({"command": "ls", "working_directory": ""}));
        assert_eq!(error.field, "working_directory");
    }

    #[test]
    fn rejects_an_unknown_field_naming_the_allowed_ones() {
        let error = reject(&json!({"command": "ls", "cwd": "/tmp"}));
        assert_eq!(error.field, "cwd");
        assert_eq!(
            error.message,
            "unknown field 'cwd'; the allowed fields are: command, commands, mode, timeout, working_directory, environment"
        );
    }

    #[test]
    fn rejects_a_field_the_config_switched_off() {
        let mut config = ToolConfig::default();
        config.fields.timeout = false;
        let error =
            validate_input(&json!({"command": "ls", "timeout": 5}), &config).expect_err("rejected");
        assert_eq!(error.field, "timeout");
    }

    #[test]
    fn effective_timeout_follows_mode_and_override() {
        let config = ToolConfig::default();
        let mut input = ToolInput::command("x");
        assert_eq!(
            input.effective_timeout(&config),
            Some(Duration::from_secs(30))
        );
        input.mode = Mode::Slow;
        assert_eq!(
            input.effective_timeout(&config),
            Some(Duration::from_secs(900))
        );
        input.timeout = Some(5);
        assert_eq!(
            input.effective_timeout(&config),
            Some(Duration::from_secs(5))
        );
    }
}
