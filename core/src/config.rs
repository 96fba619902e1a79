//! Configuration of the tool: which fields the model may use, the real
//! defaults and limits, and the output budget. The spec is generated from it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::policy::PolicyConfig;
use crate::redact::Redactor;

/// The output budget: 2000 tokens for the agent.
pub const MAX_OUTPUT_TOKENS: usize = 2000;
/// The estimate of characters per token.
pub const CHARACTERS_PER_TOKEN: usize = 4;
/// The longest line before it is abbreviated.
pub const MAX_CHARS_PER_LINE: usize = 800;
/// The share of the budget for the head; the tail gets the rest.
pub const HEAD_PERCENT: usize = 30;
/// Share of the budget that error-like lines from the omitted middle may take.
pub const SALIENT_PERCENT: usize = 40;
/// Longest `command` accepted (DESIGN.md).
pub const MAX_COMMAND_BYTES: usize = 256 * 1024;
/// Most commands in one batch.
pub const MAX_BATCH_COMMANDS: usize = 64;

/// How output is shortened when it is over budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shortening {
    /// The first 30% and the last 70% of the budget, in whole lines.
    Plain,
    /// Repetition folded by template (every distinct line kept when that
    /// fits); else head and tail plus the error-like lines and outliers of
    /// the omitted middle, with their blocks.
    #[default]
    ErrorAware,
}

/// The numbers of output formatting and shortening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputConfig {
    /// The model's output budget in tokens (2000 by default).
    pub max_output_tokens: usize,
    /// Characters per token when turning the budget into characters.
    pub chars_per_token: usize,
    /// Lines longer than this are abbreviated to their first and last part.
    pub max_line_chars: usize,
    /// Share of the budget for the head when lines must be omitted (the tail gets the rest).
    pub head_percent: usize,
    /// Plain head/tail or error-aware shortening.
    pub shortening: Shortening,
    /// Share of the budget for error-like lines from the omitted middle (error-aware mode).
    pub salient_percent: usize,
    /// Extra substrings that mark a line as error-like (case-sensitive).
    pub extra_salient_patterns: Vec<String>,
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self {
            max_output_tokens: MAX_OUTPUT_TOKENS,
            chars_per_token: CHARACTERS_PER_TOKEN,
            max_line_chars: MAX_CHARS_PER_LINE,
            head_percent: HEAD_PERCENT,
            shortening: Shortening::default(),
            salient_percent: SALIENT_PERCENT,
            extra_salient_patterns: Vec::new(),
        }
    }
}

impl OutputConfig {
    /// The budget of the output part of the text, in chars.
    pub fn budget_chars(&self) -> usize {
        self.max_output_tokens
            .saturating_mul(self.chars_per_token)
            .max(1)
    }
}

/// Which optional input fields the model is told about and may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputFields {
    /// `commands`: a batch run in order.
    pub commands: bool,
    /// `mode`: default, slow (and background, interactive where enabled).
    pub mode: bool,
    /// `mode: "background"`: detached jobs.
    pub background: bool,
    /// `timeout`: seconds, overriding the mode's timeout.
    pub timeout: bool,
    /// `working_directory`: where the command runs.
    pub working_directory: bool,
    /// `environment`: variables added for the call.
    pub environment: bool,
    /// `mode: "interactive"` (a terminal, and `write` in the jobs tool).
    /// Off unless the environment supports it.
    pub interactive: bool,
    /// `outside_sandbox`: run one call without the sandbox once a person
    /// approves. Set by [`crate::BashTool`] when it can ask and has an
    /// environment without the sandbox, not by hand.
    pub outside_sandbox: bool,
    /// `justification`: the sentence the person reads when asked. Set by
    /// [`crate::BashTool`] when it can ask.
    pub justification: bool,
}

impl Default for InputFields {
    fn default() -> Self {
        Self {
            commands: true,
            mode: true,
            background: true,
            timeout: true,
            working_directory: true,
            environment: true,
            interactive: false,
            outside_sandbox: false,
            justification: false,
        }
    }
}

/// Everything an embedder can set about the tool.
#[derive(Debug, Clone)]
pub struct ToolConfig {
    /// The tool's name as the model sees it.
    pub name: String,
    /// Where commands run by default; shown to the model as `<pwd>`.
    pub working_directory: Option<PathBuf>,
    /// Which optional input fields exist (the schema and description follow).
    pub fields: InputFields,
    /// Timeout of `mode: "default"`.
    pub default_timeout: Duration,
    /// Timeout of `mode: "slow"`.
    pub slow_timeout: Duration,
    /// Largest `timeout` the model may ask for, in seconds.
    pub max_timeout_secs: u64,
    /// Largest `command` in bytes.
    pub max_command_bytes: usize,
    /// State (cwd, variables, functions) persists between calls: the
    /// description tells the model which it has.
    pub persistent_session: bool,
    /// The environment withholds some inherited variables (secrets) from
    /// commands (see [`crate::EnvPolicy`]): the description says so.
    pub withholds_env: bool,
    /// Show where the shell stands (cwd, git branch) after each call.
    pub shell_telemetry: bool,
    /// The output budget and how output is shortened.
    pub output: OutputConfig,
    /// The safety policy commands are checked against before they run.
    pub policy: PolicyConfig,
    /// The `bash_jobs` tool is offered beside this one: hints about
    /// background jobs point to it instead of shell commands.
    pub jobs_tool: bool,
    /// Interactive mode: how long a call waits for a program that neither
    /// exits nor waits for input before it returns (the program runs on).
    pub interactive_yield: Duration,
    /// Masks secrets in everything the tools return and the environment
    /// writes (output, progress, logs, job outputs, transcripts); `None`:
    /// output is passed on as written. Off by default in the library: it
    /// needs the values, which the embedder has (see
    /// [`crate::RedactSettings::redactor`]); the CLI turns it on.
    pub redactor: Option<Arc<Redactor>>,
}

impl Default for ToolConfig {
    fn default() -> Self {
        Self {
            name: "bash".to_owned(),
            working_directory: None,
            fields: InputFields::default(),
            default_timeout: Duration::from_secs(30),
            slow_timeout: Duration::from_secs(15 * 60),
            max_timeout_secs: 1800,
            max_command_bytes: MAX_COMMAND_BYTES,
            persistent_session: false,
            withholds_env: true,
            shell_telemetry: true,
            output: OutputConfig::default(),
            policy: PolicyConfig::default(),
            jobs_tool: false,
            interactive_yield: Duration::from_secs(10),
            redactor: None,
        }
    }
}
