//! The bash side of a session: the driver script the shell sources at
//! startup, and the lines Rust writes to the shell's stdin.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use bashtool_process::MARKER_VARIABLE;
use bashtool_process::MARKER_WIDTH;
use bashtool_process::fixed_width::push_decimal;

/// The shell side of a session: `init.sh`, run by `bash -c` when a shell
/// starts (after the snapshot, if any, is restored). It is one loop that
/// reads requests from the driver FIFO and writes records to the control
/// FIFO (see its header for why each part is built as it is).
///
/// For each call Rust writes the command to a file and, to the driver FIFO
/// ([`call_request`]), the request line, read before the command, and the
/// stamp `<id> <nonce>`, read after it. A call with a working directory or
/// variables of its own also gets a call script ([`call_script`]).
/// The command is `source`d at top level, not in a function, so that
/// `declare` makes globals as at a prompt; no fork; `return` works. It has
/// its own stdin, stdout and stderr, which bash restores when `source`
/// returns, so `exec >/dev/null` in a command cannot take the shell's own
/// along.
///
/// Everything here must survive the user's `set -euo pipefail`, `set -x`,
/// `IFS`, and functions or aliases with any name: the driver is parsed
/// before any alias exists, builtins are called through `builtin` (freed
/// of a function of that name before each use), nothing may fail
/// unguarded, and nothing forks.
const INIT_SCRIPT: &str = include_str!("scripts/init.sh");

/// The driver's call line, which runs a call's command: in `init.sh` twice
/// (the short branch of the common call and the general path), written
/// once here.
const CALL_LINE: &str = include_str!("scripts/call_line.sh");

/// The stamp read and the status record after a call, in `init.sh` twice
/// like [`CALL_LINE`].
const REPORT_STATUS: &str = include_str!("scripts/report_status.sh");

/// Name of the driver script in the session directory.
pub(crate) const INIT_NAME: &str = "init.sh";

/// `init.sh` for the session directory `dir`: its paths are written into
/// the script, not kept in variables a command could change.
pub(crate) fn init_script(dir: &Path, key: &str) -> String {
    debug_assert_eq!(key.len(), KEY_DIGITS);
    // The parts first: they hold placeholders of their own.
    INIT_SCRIPT
        .replace("@CALL_LINE@", CALL_LINE.trim_end())
        .replace("@REPORT_STATUS@", REPORT_STATUS.trim_end())
        .replace("@DIR@", &quote_path(dir))
        .replace("@KIND_WIDTH@", &KIND_WIDTH.to_string())
        .replace("@FIELDS_WIDTH@", &(REQUEST_WIDTH - KIND_WIDTH).to_string())
        .replace("@STAMP_WIDTH@", &STAMP_WIDTH.to_string())
        .replace("@MARKER_VARIABLE@", MARKER_VARIABLE)
        .replace("@STDOUT_PIPE@", &request_field(STDOUT_PIPE_AT, PIPE_DIGITS))
        .replace("@STDERR_PIPE@", &request_field(STDERR_PIPE_AT, PIPE_DIGITS))
        .replace("@MARKER@", &request_field(MARKER_AT, MARKER_WIDTH))
        .replace("@KEY_AT@", &(KEY_AT - KIND_WIDTH).to_string())
        .replace("@KEY_WIDTH@", &KEY_DIGITS.to_string())
        .replace("@KEY@", key)
}

/// The expansion of the request's field at `at`, `width` bytes: a
/// substring at a fixed offset costs the shell a few microseconds less
/// than splitting at spaces (`${r%% *}` matches from each position, in
/// wide characters under a UTF-8 locale). The shell reads the kind into a
/// variable of its own and the rest into `__bt_request`, so offsets there
/// start after the kind.
fn request_field(at: usize, width: usize) -> String {
    let at = at - KIND_WIDTH;
    format!("\"${{__bt_request:{at}:{width}}}\"")
}

/// A request's kind: a letter (`c`/`C` a call, `w` a snapshot, `x` the
/// end), then the save flag (`0` or `1`).
const KIND_WIDTH: usize = 2;
/// Digits of a pipe's number (the most a `u64` has), zero-padded: the
/// FIFOs are named so (`out.<n>`, see `CallPipes`).
pub(crate) const PIPE_DIGITS: usize = 20;
const STDOUT_PIPE_AT: usize = KIND_WIDTH + 1;
const STDERR_PIPE_AT: usize = STDOUT_PIPE_AT + PIPE_DIGITS + 1;
const MARKER_AT: usize = STDERR_PIPE_AT + PIPE_DIGITS + 1;
const KEY_AT: usize = MARKER_AT + MARKER_WIDTH + 1;

/// Hex digits of a session's key (128 random bits): every request carries
/// it, and the driver runs only requests that do. It is written into the
/// session's `init.sh` as a literal, so no variable holds it (a snapshot
/// dumps the shell's variables), and only the session's own sandbox can
/// see that directory.
pub(crate) const KEY_DIGITS: usize = 32;

/// A new session key.
pub(crate) fn new_key() -> std::io::Result<String> {
    let mut key = super::nonce::next()?;
    key.push_str(&super::nonce::next()?);
    debug_assert_eq!(key.len(), KEY_DIGITS);
    Ok(key)
}

/// Bytes of a request line, read with two `read -N` (the kind, then the
/// rest; see `init.sh` for why two): `<kind> <stdout
/// pipe> <stderr pipe> <marker> <key>`, each field at a fixed offset and of
/// a fixed width, then a newline (for whoever reads the FIFO by eye).
const REQUEST_WIDTH: usize = KEY_AT + KEY_DIGITS + 1;

/// A request with only a kind (`w1`, `x1`) and the key: padded with
/// spaces between them.
fn request_line(kind: &str, key: &str) -> String {
    debug_assert_eq!(kind.len(), KIND_WIDTH);
    let mut line = format!("{kind:<KEY_AT$}");
    line.push_str(key);
    line.push('\n');
    debug_assert_eq!(line.len(), REQUEST_WIDTH);
    line
}

/// The request that writes a snapshot now and acknowledges it with a `W`
/// record.
pub(crate) fn save_now(key: &str) -> String {
    request_line("w1", key)
}

/// The request that ends the shell; its EXIT trap saves the state.
pub(crate) fn exit_now(key: &str) -> String {
    request_line("x1", key)
}

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

/// The `-c` script that brings a new shell up: the snapshot to restore (if
/// any) and its number, then `init.sh`, which never returns.
pub(crate) fn startup_script(dir: &Path, snapshot: Option<&Path>, sequence: u64) -> String {
    let restore = snapshot.map(quote_path).unwrap_or_default();
    format!(
        "__bt_seq={sequence} __bt_restore={restore}; builtin . {}",
        quote_path(&dir.join(INIT_NAME))
    )
}

/// How a call's command is run.
pub(crate) struct CallRequest<'a> {
    pub id: u64,
    /// Save a snapshot afterwards, first freeing `builtin` and `.` of
    /// functions: only a command that may define names is sent so (see
    /// `state::state_effect`).
    pub save: bool,
    /// Through the call script (a working directory or variables of the
    /// call's own) instead of the driver's own call line.
    pub through_script: bool,
    /// Numbers of the stdout and stderr FIFOs (`out.<n>`, `err.<n>`).
    pub pipes: (u64, u64),
    /// Value of [`MARKER_VARIABLE`] for the call's processes.
    pub marker: &'a str,
    pub nonce: &'a str,
    /// The session's key.
    pub key: &'a str,
}

/// What the driver reads for a call: the request line (`c<save>`, or
/// `C<save>` through the call script, the pipes and the marker), then the
/// stamp `<id> <nonce>`, which the shell reads only once the command is
/// over, so the command cannot see the nonce that makes its status record
/// count.
pub(crate) fn call_request(call: &CallRequest<'_>) -> String {
    debug_assert_eq!(call.nonce.len(), super::nonce::NONCE_DIGITS);
    assert_eq!(
        call.marker.len(),
        MARKER_WIDTH,
        "a call's marker is {MARKER_WIDTH} bytes: {:?}",
        call.marker
    );
    let mut request = String::with_capacity(REQUEST_WIDTH + STAMP_WIDTH);
    request.push(if call.through_script { 'C' } else { 'c' });
    request.push(if call.save { '1' } else { '0' });
    request.push(' ');
    push_decimal(&mut request, call.pipes.0, PIPE_DIGITS);
    request.push(' ');
    push_decimal(&mut request, call.pipes.1, PIPE_DIGITS);
    request.push(' ');
    request.push_str(call.marker);
    request.push(' ');
    request.push_str(call.key);
    request.push('\n');
    push_decimal(&mut request, call.id, 20);
    request.push(' ');
    request.push_str(call.nonce);
    debug_assert_eq!(request.len(), REQUEST_WIDTH + STAMP_WIDTH);
    request
}

/// Bytes of a call's stamp, `<id> <nonce>`: the id in 20 digits (the most
/// a `u64` has), a space, the nonce, no newline. The shell reads it with
/// one `read -N` and writes it into the status record as it is.
pub(crate) const STAMP_WIDTH: usize = 20 + 1 + super::nonce::NONCE_DIGITS;

/// Name of the command file in the session directory (the name is also in
/// `init.sh`).
pub(crate) const COMMAND_FILE: &str = "command.sh";

/// Name of the call script in the session directory.
pub(crate) const CALL_SCRIPT: &str = "call.sh";

/// What one call asks of the shell.
pub(crate) struct CallLine<'a> {
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
/// stderr (per-call FIFOs). The shell parses it with the user's aliases on,
/// so every command word is quoted (`\builtin`: no alias applies). The
/// command runs through `.`, not `builtin source`: with `builtin`, bash
/// drops the per-call variables after the command's first command.
pub(crate) fn call_script(call: &CallLine<'_>) -> String {
    let mut line = String::new();
    if let Some(cwd) = call.cwd {
        let _ = write!(
            line,
            "__bt_back=$PWD && \\builtin cd -- {} 2>/dev/null && ",
            quote_path(cwd)
        );
    }
    let _ = write!(line, "{MARKER_VARIABLE}={} ", quote(call.marker));
    for (name, value) in call.env {
        if bashtool_core::is_valid_variable_name(name) {
            let _ = write!(line, "{name}={} ", quote(value));
        }
    }
    let _ = writeln!(
        line,
        "\\. {} </dev/null >|{} 2>|{}",
        quote_path(call.command_file),
        quote_path(call.stdout_fifo),
        quote_path(call.stderr_fifo),
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
    fn call_script_sources_the_command_with_its_own_descriptors() {
        let env = BTreeMap::from([("A".to_owned(), "x y".to_owned())]);
        let line = call_script(&CallLine {
            command_file: Path::new("/s/command.sh"),
            stdout_fifo: Path::new("/s/out.7"),
            stderr_fifo: Path::new("/s/err.7"),
            cwd: Some(Path::new("/w d")),
            env: &env,
            marker: "m-7",
        });
        assert_eq!(
            line,
            "__bt_back=$PWD && \\builtin cd -- '/w d' 2>/dev/null && \
             BASHTOOL_RUN_ID='m-7' A='x y' \\. '/s/command.sh' </dev/null \
             >|'/s/out.7' 2>|'/s/err.7'\n"
        );
    }

    #[test]
    fn startup_script_restores_then_runs_the_driver() {
        assert_eq!(
            startup_script(Path::new("/s"), Some(Path::new("/s/restore.sh")), 4),
            "__bt_seq=4 __bt_restore='/s/restore.sh'; builtin . '/s/init.sh'"
        );
        assert_eq!(
            startup_script(Path::new("/s"), None, 0),
            "__bt_seq=0 __bt_restore=; builtin . '/s/init.sh'"
        );
    }

    const KEY: &str = "00112233445566778899aabbccddeeff";

    #[test]
    fn a_new_key_is_hex_of_its_width() {
        let key = new_key().expect("getrandom");
        assert_eq!(key.len(), KEY_DIGITS);
        assert!(key.bytes().all(|byte| byte.is_ascii_hexdigit()), "{key}");
        assert_ne!(key, new_key().expect("getrandom"));
    }

    #[test]
    fn init_script_runs_only_requests_with_the_key() {
        let script = init_script(Path::new("/s"), KEY);
        let at = KEY_AT - 2;
        assert!(
            script.contains(&format!(
                "[[ ${{__bt_request:{at}:{KEY_DIGITS}}} == {KEY} ]] || {{ __bt_running=; continue; }}"
            )),
            "{script}"
        );
    }

    #[test]
    fn a_call_request_is_fixed_width_fields_then_the_id_and_nonce() {
        let marker = "0000000042-00000000000000000007-0000beef";
        let request = call_request(&CallRequest {
            id: 7,
            save: false,
            through_script: false,
            pipes: (3, 4),
            marker,
            nonce: "0123456789abcdef",
            key: KEY,
        });
        let (first, second) = request.split_at(REQUEST_WIDTH);
        assert_eq!(
            first,
            format!("c0 00000000000000000003 00000000000000000004 {marker} {KEY}\n")
        );
        assert_eq!(
            &first[STDOUT_PIPE_AT..][..PIPE_DIGITS],
            "00000000000000000003"
        );
        assert_eq!(
            &first[STDERR_PIPE_AT..][..PIPE_DIGITS],
            "00000000000000000004"
        );
        assert_eq!(&first[MARKER_AT..][..MARKER_WIDTH], marker);
        assert_eq!(second, "00000000000000000007 0123456789abcdef");
        let largest = call_request(&CallRequest {
            id: u64::MAX,
            save: true,
            through_script: true,
            pipes: (u64::MAX, u64::MAX),
            marker,
            nonce: "0123456789abcdef",
            key: KEY,
        });
        assert_eq!(largest.len(), REQUEST_WIDTH + STAMP_WIDTH);
        assert!(largest.starts_with("C1 18446744073709551615 18446744073709551615 "));
        assert_eq!(
            save_now(KEY),
            format!("w1{}{KEY}\n", " ".repeat(KEY_AT - 2))
        );
        assert_eq!(exit_now(KEY).len(), REQUEST_WIDTH);
        assert_eq!(&exit_now(KEY)[KEY_AT..][..KEY_DIGITS], KEY);
    }

    #[test]
    fn a_new_marker_fits_its_field() {
        assert_eq!(
            bashtool_process::RunMarker::new().value().len(),
            MARKER_WIDTH
        );
    }

    #[test]
    fn init_script_gets_its_directory_width_and_marker_name() {
        let script = init_script(Path::new("/s d"), KEY);
        assert!(!script.contains('@'), "a placeholder is left");
        // The kind and the rest in two reads (see `init.sh`), with the
        // fields' offsets counted after the kind.
        let rest = REQUEST_WIDTH - 2;
        assert!(script.contains(&format!(
            "{{ builtin read -r -N 2 __bt_running && builtin read -r -N {rest} __bt_request; }} <'/s d'/driver"
        )));
        assert!(script.contains(&format!(
            "{MARKER_VARIABLE}=\"${{__bt_request:43:40}}\" \\. '/s d'/{COMMAND_FILE} \
             </dev/null >|'/s d'/out.\"${{__bt_request:1:20}}\" \
             2>|'/s d'/err.\"${{__bt_request:22:20}}\""
        )));
        // The call line and the status record, written once, stand in the
        // common call's branch and in the general path.
        assert_eq!(
            script
                .matches(&format!("\\. '/s d'/{COMMAND_FILE} "))
                .count(),
            2
        );
        assert_eq!(
            script
                .matches("} <'/s d'/driver >>'/s d'/control || ")
                .count(),
            2
        );
    }
}
