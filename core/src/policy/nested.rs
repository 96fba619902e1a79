//! What a command's checks need from the walker of the whole script: the
//! configuration, the shell's globbing, and a way to check a script found
//! inside a command (`bash -c '…'`, `git submodule foreach '…'`). A trait,
//! so that the command and rule modules do not depend on the walker's
//! module, which depends on them.

use super::config::PolicyConfig;
use super::glob::Globbing;
use super::violation::Violation;

/// Checks nested scripts with the walker's configuration and depth limits.
pub(crate) trait CheckScript {
    /// The policy in force.
    fn config(&self) -> &PolicyConfig;
    /// How patterns may match in this script.
    fn globbing(&self) -> Globbing;
    /// Parses and checks `text` as a script.
    fn script(&mut self, text: &str) -> Result<(), Violation>;
}

/// What a command would read on stdin, when we can know it: a
/// here-document or here-string, or the text a command before it in a
/// pipeline writes (`echo '…' |`).
#[derive(Debug, Default)]
pub(crate) struct Stdin {
    pub(crate) script: Option<String>,
}
