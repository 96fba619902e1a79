//! The safety policy: refuses the classic destructive mistakes before a
//! command runs.
//!
//! The script is parsed with brush-parser and every command that would
//! execute is checked, wherever it hides: lists, pipelines, compound
//! commands, function bodies, command and process substitutions, and code
//! handed to an interpreter as a string (`bash -c`, `eval`, `trap`, `find
//! -exec`, `xargs`, here-documents fed to a shell, ...). Wrappers such as
//! `sudo`, `env` or `timeout` are seen through. Text that only mentions a
//! command (`echo "git add -A"`) is not a command.
//!
//! This guards against accidents; it is not a sandbox. A determined script
//! can always hide a command (`$(printf 'r%s' m) -rf /`).
//!
//! Layout: `plain` passes a plain simple command without parsing; `guard`
//! bounds nesting and runs the parser where the stack is large enough;
//! `script` parses a script and walks its AST; `words` decodes a word into
//! literal and expanded segments (and the values a parameter's default
//! may give it); `command` dispatches one simple command to interpreters,
//! `wrappers` (which see through `sudo`, `flock`, `xargs`, ...), `find`
//! (what `-exec` and `-delete` reach) and the rules; `options` skips a
//! program's own options; `glob` matches shell patterns; `rules` holds one
//! module per rule.

mod command;
mod find;
mod glob;
mod guard;
mod nested;
mod options;
mod plain;
mod rules;
mod script;
mod words;
mod wrappers;

use serde::{Deserialize, Serialize};

/// The refusal for a blind `git add`, worded as the original specification
/// words it.
pub const GIT_ADD_MESSAGE: &str = "permission denied: blind git add commands (git add -A, git add ., git add --all, git add *) are not allowed, specify files explicitly";

/// The refusal for a forced `git push`, in the original wording.
pub const GIT_PUSH_FORCE_MESSAGE: &str = "permission denied: git push --force is not allowed. Use --force-with-lease for safer force pushes, or push without force";

/// The refusal for a recursive `rm` of critical data, in the original
/// wording.
pub const RM_CRITICAL_MESSAGE: &str = "permission denied: this rm command could delete critical data (.git, home directory, or root). Specify the full path explicitly (no wildcards, ~, or $HOME)";

/// The original specification's substring deny list, available to switch
/// on with
/// `PolicyConfig { deny_patterns: DEFAULT_DENY_PATTERNS.iter().map(|p| p.to_string()).collect(), .. }`.
pub const DEFAULT_DENY_PATTERNS: &[&str] = &[
    "rm -rf /",
    "mkfs",
    "dd if=",
    ":(){ :|:& };:",
    "> /dev/sda",
    "chmod -R 777 /",
    "shutdown",
    "reboot",
];

/// Which rule blocked a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Blind `git add` (`-A`, `.`, `--all`, `*`).
    GitAdd,
    /// `git push --force` without a lease.
    GitPushForce,
    /// Recursive forced `rm` of `/`, `~`, `$HOME`, `.git`, `*`.
    RmCritical,
    /// A script that cannot be parsed.
    ParseError,
    /// A configured deny pattern.
    DenyPattern,
}

/// A blocked command: the rule and the message for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Violation {
    /// The rule that matched.
    pub rule: Rule,
    /// Why, and what to do instead.
    pub message: String,
}

impl Violation {
    pub(crate) fn new(rule: Rule) -> Self {
        let message = match rule {
            Rule::GitAdd => GIT_ADD_MESSAGE,
            Rule::GitPushForce => GIT_PUSH_FORCE_MESSAGE,
            Rule::RmCritical => RM_CRITICAL_MESSAGE,
            Rule::ParseError => "could not parse the command; check the quoting",
            Rule::DenyPattern => "Command blocked by safety policy",
        };
        Self {
            rule,
            message: message.to_owned(),
        }
    }

    /// A script that cannot be checked; `detail` says why.
    pub(crate) fn parse_error(detail: &str) -> Self {
        Self {
            rule: Rule::ParseError,
            message: format!("could not parse the command: {detail}; check the quoting"),
        }
    }

    fn deny_pattern(pattern: &str) -> Self {
        Self {
            rule: Rule::DenyPattern,
            message: format!("Command blocked by safety policy: contains '{pattern}'"),
        }
    }
}

/// Which rules are on. Guards against accidents; it is not a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Off: every command is allowed and nothing is parsed.
    pub enabled: bool,
    /// Refuse blind `git add`.
    pub git_add: bool,
    /// Refuse `git push --force`.
    pub git_push_force: bool,
    /// Refuse recursive forced `rm` of critical paths.
    pub rm_critical: bool,
    /// The original specification's substring deny list (empty by default; see
    /// [`DEFAULT_DENY_PATTERNS`]). Matched on the raw script text.
    pub deny_patterns: Vec<String>,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            git_add: true,
            git_push_force: true,
            rm_critical: true,
            deny_patterns: Vec::new(),
        }
    }
}

impl PolicyConfig {
    /// Everything allowed, nothing parsed.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    fn any_ast_rule(&self) -> bool {
        self.git_add || self.git_push_force || self.rm_critical
    }
}

/// Checks a script against the policy: `Ok` when it may run, the first
/// [`Violation`] otherwise. Never panics and never overflows the stack,
/// whatever the input.
pub fn check(script: &str, config: &PolicyConfig) -> Result<(), Violation> {
    if !config.enabled {
        return Ok(());
    }
    if let Some(pattern) = config
        .deny_patterns
        .iter()
        .find(|pattern| !pattern.is_empty() && script.contains(pattern.as_str()))
    {
        return Err(Violation::deny_pattern(pattern));
    }
    if !config.any_ast_rule() || plain::is_plain_command(script) {
        return Ok(());
    }
    guard::run_guarded(script, |script, stack| {
        script::check_script(script, config, stack)
    })
}

#[cfg(test)]
mod tests;
