//! The bash side of a session: the driver script the shell sources at
//! startup, and the lines Rust writes to the shell's stdin.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::MARKER_VARIABLE;

/// Functions the long-lived shell runs around each command (`__bt_pre`,
/// `__bt_post`, `__bt_save`, `__bt_init`). See the comments in the file.
pub(crate) const DRIVER: &str = include_str!("driver.sh");

/// `text` as one bash word in single quotes (`'` becomes `'\''`). Any byte
/// but NUL is safe inside, newlines included.
pub(crate) fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for character in text.chars() {
        if character == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(character);
        }
    }
    quoted.push('\'');
    quoted
}

fn quote_path(path: &Path) -> String {
    quote(&path.to_string_lossy())
}

/// The lines that bring a new shell up: defaults, the driver, the snapshot
/// to restore (if any), the driver again (the snapshot carries the driver
/// functions of the shell that wrote it, maybe an older version), and the
/// init that re-arms the EXIT trap and applies the saved options last.
pub(crate) fn startup_lines(
    driver: &Path,
    snapshot: Option<&Path>,
    state_dir: &Path,
    sequence: u64,
) -> String {
    let driver = quote_path(driver);
    let mut lines = format!("builtin shopt -s expand_aliases\nbuiltin source {driver}\n");
    if let Some(snapshot) = snapshot {
        let _ = write!(
            lines,
            "builtin source {} </dev/null >/dev/null 2>&1 3>&-\nbuiltin source {driver}\n",
            quote_path(snapshot)
        );
    }
    let _ = writeln!(lines, "__bt_init {} {sequence}", quote_path(state_dir));
    lines
}

/// The one line written to the shell's stdin per call: it sources the call
/// script (bash reads a script on a pipe one byte per `read(2)`, so the long
/// line goes through a file instead).
pub(crate) const RUN_CALL: &str = "builtin . \"$__bt_call\"\n";

/// Name of the call script in the session directory (`__bt_call`).
pub(crate) const CALL_SCRIPT: &str = "call.sh";

/// What one call asks of the shell.
pub(crate) struct CallLine<'a> {
    pub id: u64,
    pub command_file: &'a Path,
    pub stdout_fifo: &'a Path,
    pub stderr_fifo: &'a Path,
    /// Run in this directory and go back afterwards.
    pub cwd: Option<&'a Path>,
    /// Variables for this call only (bash's temporary environment of the
    /// `source` command: exported to its processes, gone afterwards).
    pub env: &'a BTreeMap<String, String>,
    /// Value of [`MARKER_VARIABLE`]: every process of the call inherits it,
    /// so that those which left the shell's session (`setsid`) are found.
    pub marker: &'a str,
}

/// The call script of one call. The command is `source`d at top level with
/// its own stdin (`/dev/null`: a command that reads gets EOF), stdout and
/// stderr (per-call FIFOs) and without the control fd.
pub(crate) fn call_line(call: &CallLine<'_>) -> String {
    let mut line = String::new();
    if let Some(cwd) = call.cwd {
        let _ = write!(line, "__bt_pre {} && ", quote_path(cwd));
    }
    let _ = write!(line, "{MARKER_VARIABLE}={} ", quote(call.marker));
    for (name, value) in call.env {
        if bashtool_core::is_valid_variable_name(name) {
            let _ = write!(line, "{name}={} ", quote(value));
        }
    }
    let _ = writeln!(
        line,
        "source {} </dev/null >|{} 2>|{} 3>&-; __bt_post $? {}",
        quote_path(call.command_file),
        quote_path(call.stdout_fifo),
        quote_path(call.stderr_fifo),
        call.id
    );
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_single_quotes_and_keeps_newlines() {
        assert_eq!(quote("it's\nok"), "'it'\\''s\nok'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn call_line_sources_the_command_with_its_own_descriptors() {
        let env = BTreeMap::from([("A".to_owned(), "x y".to_owned())]);
        let line = call_line(&CallLine {
            id: 7,
            command_file: Path::new("/s/command.sh"),
            stdout_fifo: Path::new("/s/out.7"),
            stderr_fifo: Path::new("/s/err.7"),
            cwd: Some(Path::new("/w d")),
            env: &env,
            marker: "m-7",
        });
        assert_eq!(
            line,
            "__bt_pre '/w d' && BASHTOOL_RUN_ID='m-7' A='x y' source '/s/command.sh' \
             </dev/null >|'/s/out.7' 2>|'/s/err.7' 3>&-; __bt_post $? 7\n"
        );
    }
}
