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
//! module per rule. [`PolicyConfig`] (`config`) says which rules are on;
//! [`Rule`] and [`Violation`] (`violation`) are what a refusal carries.

mod command;
mod config;
mod find;
mod glob;
mod guard;
mod nested;
mod options;
mod plain;
mod rules;
mod script;
mod violation;
mod words;
mod wrappers;

pub use config::{DEFAULT_DENY_PATTERNS, PolicyConfig};
pub use violation::{
    GIT_ADD_MESSAGE, GIT_PUSH_FORCE_MESSAGE, RM_CRITICAL_MESSAGE, Rule, Violation,
};

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
