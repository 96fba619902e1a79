//! What a command's rules need from the walker of the whole script: the
//! configuration, and a way to check a script found inside a command
//! (`bash -c '…'`, `git submodule foreach '…'`). A trait, so that the
//! command and rule modules do not depend on the walker's module, which
//! depends on them.

use super::{PolicyConfig, Violation};

/// Checks nested scripts with the walker's configuration and depth limits.
pub(crate) trait CheckScript {
    /// The policy in force.
    fn config(&self) -> &PolicyConfig;
    /// Parses and checks `text` as a script.
    fn script(&mut self, text: &str) -> Result<(), Violation>;
}
