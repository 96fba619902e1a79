//! One module per rule. Each takes the words after the command name
//! (wrappers already peeled) and says whether the command is blocked.

pub(crate) mod git;
mod git_add;
mod git_push;
pub(crate) mod rm;
