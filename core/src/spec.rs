//! The tool definition the model sees, generated from [`ToolConfig`] so that
//! it never mentions a field, default or limit that is not real.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::config::{Shortening, ToolConfig};
use crate::environment::EnvironmentInfo;
use crate::input::allowed_fields;

/// Name, description and JSON input schema of a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// How to use it well, generated from the configuration.
    pub description: String,
    /// The JSON schema of its input.
    pub input_schema: Value,
}

fn human_duration(seconds: u64) -> String {
    if seconds.is_multiple_of(60) && seconds >= 60 {
        format!("{} min", seconds / 60)
    } else {
        format!("{seconds} s")
    }
}

/// Where the commands of a batch run: one persistent shell shares state
/// between them; a stateless environment gives each its own.
fn batch_shell(config: &ToolConfig) -> &'static str {
    if config.persistent_session {
        "in the same shell (cd and variables carry over)"
    } else {
        "each in a fresh shell (cd and variables do not carry over; chain with && instead)"
    }
}

/// The description: how to use the tool well.
pub fn description(config: &ToolConfig) -> String {
    let fields = &config.fields;
    let budget_tokens = config.output.max_output_tokens;
    let mut text = String::from(
        "Executes a shell command with bash -c and returns its output, then the exit status: \
         stdout and stderr each complete and in order, interleaved as they arrived (output \
         written to both within the same instant comes grouped by stream; add 2>&1 when the \
         exact interleaving matters).\n",
    );
    text.push_str(if config.persistent_session {
        "The shell is persistent: the working directory, exported and shell variables, functions, \
         aliases and an activated virtualenv carry over to the next call.\n"
    } else {
        "Each call starts a fresh shell: the working directory, variables and aliases do NOT \
         persist between calls. Chain dependent steps with && in one command.\n"
    });
    let kept = match config.output.shortening {
        Shortening::ErrorAware => "the beginning, the end and error lines from the middle",
        Shortening::Plain => "the beginning and the end",
    };
    let no_terminal = if config.fields.interactive {
        "Commands run without a terminal (unless in mode \"interactive\", below): stdin is empty"
    } else {
        "Commands must not be interactive: stdin is empty and there is no terminal"
    };
    text.push_str(&format!(
        "\nRules:\n\
         - {no_terminal}. Pass \
         everything on the command line (git commit -m \"...\", apt-get -y, npx --yes). Pagers \
         are off; editors fail at once.\n\
         - Output is shortened for you to about {budget_tokens} tokens, keeping {kept}, and the \
         full log is saved to a file you can read. Do not pipe to head or tail to shorten it.\n\
         - stderr is already included: add 2>&1 only for the exact interleaving of the two.\n"
    ));
    if config.withholds_env {
        text.push_str(
            "- Inherited environment variables that look like secrets (API keys, tokens, \
             passwords) are withheld from commands; if a command needs one, ask the user.\n",
        );
    }
    if config.redactor.is_some() {
        text.push_str(
            "- Secrets in the output (tokens, keys, passwords in URLs, private keys, the values of \
             secret variables) are shown as [redacted: NAME]; only what you see is masked, not what \
             commands read or write.\n",
        );
    }
    let default_timeout = human_duration(config.default_timeout.as_secs());
    if fields.mode {
        text.push_str(&format!(
            "- Commands time out after {default_timeout}. Use mode \"slow\" (up to {}) for \
             builds, tests, installs, downloads or any other substantive operation.\n",
            human_duration(config.slow_timeout.as_secs())
        ));
        if fields.background {
            text.push_str(
                "- Never run a never-ending command (server, watcher, tail -f) in the foreground: \
                 use mode \"background\", which returns at once with the pid and an output file \
                 to read later.\n",
            );
        } else {
            text.push_str(
                "- Never run a never-ending command (server, watcher, tail -f): it will be \
                 stopped at the timeout.\n",
            );
        }
        if fields.interactive {
            text.push_str(&format!(
                "- A program that asks questions or needs a terminal (a REPL, a debugger, a \
                 prompt, less, vi, top): use mode \"interactive\". It runs in a terminal; the \
                 call returns when the program exits, when it waits for input (seen from the \
                 kernel), or after {}, with its new output or its rendered screen, the job id \
                 and its state (awaiting_input or running). Answer with the jobs tool's \
                 action \"write\" (text and keys such as Enter, C-c, Up, Tab); stop it with \
                 \"stop\". Text typed while the terminal hides it (a password) is never \
                 logged.\n",
                human_duration(config.interactive_yield.as_secs())
            ));
        }
    } else {
        text.push_str(&format!(
            "- Commands time out after {default_timeout}; never run a never-ending command.\n"
        ));
    }
    if fields.timeout {
        text.push_str(&format!(
            "- timeout sets the limit in seconds (1 to {}).\n",
            config.max_timeout_secs
        ));
    }
    if fields.commands {
        text.push_str(&format!(
            "- commands (array) runs each command in order {}, all of them regardless of \
             failures, each with its own timeout and its own section in the result. Use && in \
             one command when you need fail-fast.\n",
            batch_shell(config)
        ));
    }
    text.push_str(
        "- Keep commands concise (well under 60k tokens); for complex scripts, write them to a \
         file first and run the file.\n",
    );
    let policy = &config.policy;
    let mut refused = Vec::new();
    if policy.enabled && policy.git_add {
        refused.push("blind git add (-A, ., --all)");
    }
    if policy.enabled && policy.git_push_force {
        refused.push("git push --force (use --force-with-lease)");
    }
    if policy.enabled && policy.rm_critical {
        refused.push("recursive rm of /, ~, $HOME, .git or *");
    }
    if !refused.is_empty() {
        text.push_str(&format!(
            "- These destructive mistakes are refused: {}.\n",
            refused.join(", ")
        ));
    }
    text.push_str(&approval_text(config));
    if let Some(directory) = &config.working_directory {
        text.push_str(&format!("\n<pwd>{}</pwd>", directory.display()));
    }
    text
}

/// What the description says of asking the user: only when the tool can
/// ask (the fields exist), so the model is never told of a question that
/// cannot be put.
fn approval_text(config: &ToolConfig) -> String {
    let fields = &config.fields;
    let mut text = String::new();
    if fields.outside_sandbox {
        text.push_str(
            "- When the sandbox refuses something the task really needs (a write outside the \
             writable directories, a socket it hides), you may call again with outside_sandbox: \
             true and a justification (one sentence): the user is asked, with the command, the \
             directory and your justification, to allow it once, for this session (the same \
             command), or deny it. Allowed, it runs in a fresh shell without the sandbox (a \
             persistent shell's directory and variables do not carry over: set \
             working_directory).\n",
        );
    }
    if fields.justification && config.policy.enabled {
        text.push_str(
            "- A command the safety policy refuses is put to the user, with your justification \
             if you give one; they may allow it once, for this session (the same rule), or deny \
             it.\n",
        );
    }
    if fields.justification {
        text.push_str(
            "- If the user denies, cancels or does not answer, nothing runs: do not retry the \
             same thing; change the approach or ask the user.\n",
        );
    }
    text
}

/// The JSON schema of the input, with only the enabled fields.
pub fn input_schema(config: &ToolConfig) -> Value {
    let fields = &config.fields;
    let mut properties = Map::new();
    properties.insert(
        "command".into(),
        json!({
            "type": "string",
            "minLength": 1,
            "maxLength": config.max_command_bytes,
            "description": "The command to run with bash -c, e.g. \"cargo test\"",
        }),
    );
    if fields.commands {
        properties.insert(
            "commands".into(),
            json!({
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": crate::config::MAX_BATCH_COMMANDS,
                "description": format!(
                    "Instead of command: several commands run in order {}. Each gets its own \
                     timeout and result. All run regardless of failures; use one command with && \
                     if you need fail-fast.",
                    batch_shell(config)
                ),
            }),
        );
    }
    if fields.mode {
        let (mut modes, mut text) = if fields.background {
            (
                json!(["default", "slow", "background"]),
                format!(
                    "default ({} timeout), slow ({} timeout, for builds, tests, installs) or \
                     background (detached: returns at once with a pid and an output file, for \
                     servers and watchers)",
                    human_duration(config.default_timeout.as_secs()),
                    human_duration(config.slow_timeout.as_secs())
                ),
            )
        } else {
            (
                json!(["default", "slow"]),
                format!(
                    "default ({} timeout) or slow ({} timeout, for builds, tests, installs)",
                    human_duration(config.default_timeout.as_secs()),
                    human_duration(config.slow_timeout.as_secs())
                ),
            )
        };
        if fields.interactive {
            if let Some(list) = modes.as_array_mut() {
                list.push(json!("interactive"));
            }
            text.push_str(
                "; interactive (in a terminal: returns when the program exits or waits for \
                 input, then answer with the jobs tool's write)",
            );
        }
        properties.insert(
            "mode".into(),
            json!({"type": "string", "enum": modes, "default": "default", "description": text}),
        );
    }
    if fields.timeout {
        properties.insert(
            "timeout".into(),
            json!({
                "type": "integer",
                "minimum": 1,
                "maximum": config.max_timeout_secs,
                "description": "Timeout in seconds; overrides the mode's timeout",
            }),
        );
    }
    if fields.working_directory {
        let default = config.working_directory.as_ref().map_or_else(
            || "the current working directory".to_owned(),
            |directory| directory.display().to_string(),
        );
        properties.insert(
            "working_directory".into(),
            json!({
                "type": "string",
                "minLength": 1,
                "description": format!("Directory to run in; must exist. Default: {default}"),
            }),
        );
    }
    if fields.environment {
        properties.insert(
            "environment".into(),
            json!({
                "type": "object",
                "additionalProperties": {"type": "string"},
                "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                "description": "Environment variables to add for this call",
            }),
        );
    }
    if fields.outside_sandbox {
        properties.insert(
            "outside_sandbox".into(),
            json!({
                "type": "boolean",
                "description": "Run this call without the sandbox, in a fresh shell, once the \
                    user approves (they are asked; give a justification). Only when the sandbox \
                    refused something the task really needs; not with mode background or \
                    interactive",
            }),
        );
    }
    if fields.justification {
        properties.insert(
            "justification".into(),
            json!({
                "type": "string",
                "minLength": 1,
                "maxLength": crate::input::MAX_JUSTIFICATION_CHARS,
                "description": "One sentence the user reads when asked to approve this call \
                    (outside_sandbox, or a command the safety policy refuses)",
            }),
        );
    }
    debug_assert_eq!(properties.len(), allowed_fields(config).len());
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !fields.commands {
        schema["required"] = json!(["command"]);
    }
    schema
}

/// The complete tool definition, knowing nothing of the environment.
pub fn tool_spec(config: &ToolConfig) -> ToolSpec {
    tool_spec_for(config, &EnvironmentInfo::default())
}

/// The complete tool definition for an environment: where commands run,
/// what sandbox holds them, and search advice only for tools it has.
pub fn tool_spec_for(config: &ToolConfig, environment: &EnvironmentInfo) -> ToolSpec {
    let mut description = description(config);
    let pwd = description
        .rfind("\n<pwd>")
        .map(|start| description.split_off(start));
    description.push_str(&environment_text(environment));
    if let Some(pwd) = pwd {
        description.push_str(&pwd);
    }
    ToolSpec {
        name: config.name.clone(),
        description,
        input_schema: input_schema(config),
    }
}

/// What the description says of the environment.
fn environment_text(environment: &EnvironmentInfo) -> String {
    let mut text = String::new();
    if !environment.name.is_empty() && environment.name != "local" && environment.name != "mock" {
        text.push_str(&format!(
            "\nCommands run in {}, not on the machine of this conversation.\n",
            environment.name
        ));
    }
    if let Some(sandbox) = &environment.sandbox {
        let roots: Vec<String> = sandbox
            .writable
            .iter()
            .map(|root| root.display().to_string())
            .collect();
        let writes = if sandbox.mode == "read-only" {
            "Writes fail everywhere except temporary files".to_owned()
        } else {
            format!("Writes outside {} fail", roots.join(", "))
        };
        let network = match sandbox.network.as_str() {
            "off" => "; the network is off (only the command's own loopback works)".to_owned(),
            "allowlist" => format!(
                "; the network reaches only {} through a proxy that HTTP_PROXY, HTTPS_PROXY \
                 and ALL_PROXY point at (other hosts, direct connections and DNS fail)",
                sandbox.allowed_domains.join(", ")
            ),
            _ => String::new(),
        };
        text.push_str(&format!(
            "\nSandbox ({}): {writes}; .git/hooks and .git/config stay read-only{network}. A \
             denied write says so; do not try to get around it.\n",
            sandbox.mode
        ));
    }
    let has = |tool: &str| environment.tools.iter().any(|name| name == tool);
    let mut search = Vec::new();
    if has("rg") {
        search.push(
            "- Use rg (ripgrep) to search file contents: rg 'pattern' [path], rg -t py 'def main', \
             rg -l 'TODO' to list matching files, rg -n -C 2 'pattern' for line numbers and \
             context. It respects .gitignore and is much faster than grep -r.",
        );
    } else {
        search.push(
            "- Search file contents with grep -rn 'pattern' [path] (add --include='*.py' to \
             narrow it; skip .git and build directories with --exclude-dir).",
        );
    }
    if has("fd") || has("fdfind") {
        search.push(
            "- Use fd to find files by name: fd 'pattern', fd -e rs to find by extension, \
             fd -t d name for directories. It is faster than find and respects .gitignore.",
        );
    } else {
        search.push("- Find files by name with find . -name 'pattern' -not -path '*/.git/*'.");
    }
    text.push_str(&format!("\nSearching:\n{}\n", search.join("\n")));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn schema_lists_only_enabled_fields() {
        let mut config = ToolConfig::default();
        config.fields.commands = false;
        config.fields.environment = false;
        let schema = input_schema(&config);
        let names: Vec<&String> = schema["properties"]
            .as_object()
            .expect("object")
            .keys()
            .collect();
        assert_eq!(names, ["command", "mode", "timeout", "working_directory"]);
        assert_eq!(schema["required"], json!(["command"]));
        assert_eq!(schema["properties"]["timeout"]["maximum"], 1800);
    }

    #[test]
    fn description_shows_pwd_and_real_timeouts() {
        let config = ToolConfig {
            working_directory: Some(PathBuf::from("/work/project")),
            ..ToolConfig::default()
        };
        let text = description(&config);
        assert!(text.ends_with("<pwd>/work/project</pwd>"));
        assert!(text.contains("Commands time out after 30 s. Use mode \"slow\" (up to 15 min)"));
        assert!(text.contains("do NOT persist"));
        assert!(text.contains("runs each command in order each in a fresh shell"));
    }

    #[test]
    fn description_follows_the_shortening_and_the_policy() {
        let mut config = ToolConfig::default();
        assert!(description(&config).contains("error lines from the middle"));
        assert!(
            description(&config).contains("These destructive mistakes are refused: blind git add")
        );
        assert!(description(&config).contains("look like secrets"));
        config.output.shortening = Shortening::Plain;
        config.policy.enabled = false;
        config.withholds_env = false;
        let text = description(&config);
        assert!(!text.contains("secrets"));
        assert!(text.contains("keeping the beginning and the end, and the full log"));
        assert!(!text.contains("refused"));
    }

    #[test]
    fn batch_description_says_whether_commands_share_a_shell() {
        let mut config = ToolConfig::default();
        let stateless = tool_spec(&config);
        assert!(
            stateless
                .description
                .contains("runs each command in order each in a fresh shell")
        );
        assert!(
            stateless.input_schema["properties"]["commands"]["description"]
                .as_str()
                .is_some_and(|text| text.contains("each in a fresh shell"))
        );
        config.persistent_session = true;
        let session = tool_spec(&config);
        assert!(session.description.contains(
            "runs each command in order in the same shell (cd and variables carry over)"
        ));
        assert!(!session.description.contains("fresh shell"));
    }

    #[test]
    fn description_follows_switched_off_fields() {
        let mut config = ToolConfig::default();
        config.fields.background = false;
        config.fields.commands = false;
        config.persistent_session = true;
        let text = description(&config);
        assert!(!text.contains("\"background\""));
        assert!(!text.contains("commands (array)"));
        assert!(text.contains("The shell is persistent"));
        assert_eq!(
            input_schema(&config)["properties"]["mode"]["enum"],
            json!(["default", "slow"])
        );
    }
}
