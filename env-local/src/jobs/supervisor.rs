//! The supervisor of a background job: a small shell that runs the command
//! and appends how it ended to the job's output file.
//!
//! The status line must not depend on the process that started the job: a
//! `bashtool call` or `run` exits right after starting it, and an MCP server
//! may be killed. So the job's root process is this supervisor, in its own
//! session (no terminal, no SIGHUP when the starter goes), with the output
//! file as its stdout. It catches SIGTERM, SIGINT and SIGHUP with a handler
//! (not by ignoring them: ignored signals would be inherited by the command,
//! a handler is reset by exec), so a stop of the job's group ends the command
//! while the supervisor lives on to record the signal; only SIGKILL, after the
//! grace, ends it unrecorded, and then the in-process waiter (if any) writes
//! the line instead.

use std::ffi::OsString;
use std::path::Path;

/// The supervisor script. `$0` is the shell, `$1` the command (or, with `$2`
/// set, a `.` of the script file `$2`, which it removes at the end); after
/// them, in threes, the counters of the job's limits: a file of its
/// cgroup, the key whose value counts what the limit refused or killed,
/// and the note to print (with `%s` for the count) when it is not 0. The
/// supervisor's own stderr is `/dev/null` (the command's goes to the file
/// through fd 3), so bash's "Terminated" notice about a killed command does
/// not land in the job's output.
const SUPERVISOR: &str = r#"trap '__bt_pending=143' TERM; trap '__bt_pending=130' INT; trap '__bt_pending=129' HUP
exec 3>&2 2>/dev/null
# A stop that lands before the command has started (the caller may signal
# the group the moment the job is reported) must not be swallowed by the
# handler: the command is then not started and the stop is recorded.
if [ -n "$__bt_pending" ]; then __bt_status=$__bt_pending
elif [ -n "$2" ]; then "$0" -c "$1" "$2" 2>&3 3>&-; __bt_status=$?
else "$0" -c "$1" 2>&3 3>&-; __bt_status=$?; fi
[ -z "$2" ] || rm -f -- "$2"
shift 2
while [ $# -ge 3 ]; do
  __bt_count=0
  while read -r __bt_key __bt_value; do
    [ "$__bt_key" = "$2" ] && __bt_count=$__bt_value
  done < "$1"
  case $__bt_count in ''|*[!0-9]*) __bt_count=0 ;; esac
  [ "$__bt_count" -eq 0 ] || printf "\n[$3]\n" "$__bt_count"
  shift 3
done
# Signal names without a subshell: a fork here would slow the record down
# exactly when the machine is busiest.
case $__bt_status in
  129) __bt_signal=HUP ;; 130) __bt_signal=INT ;; 131) __bt_signal=QUIT ;;
  132) __bt_signal=ILL ;; 133) __bt_signal=TRAP ;; 134) __bt_signal=ABRT ;;
  135) __bt_signal=BUS ;; 136) __bt_signal=FPE ;; 137) __bt_signal=KILL ;;
  138) __bt_signal=USR1 ;; 139) __bt_signal=SEGV ;; 140) __bt_signal=USR2 ;;
  141) __bt_signal=PIPE ;; 142) __bt_signal=ALRM ;; 143) __bt_signal=TERM ;;
  *) __bt_signal= ;;
esac
if [ -n "$__bt_signal" ]; then
  printf '\n[background job killed by signal SIG%s]\n' "$__bt_signal"
else
  printf '\n[background job exited with code %d]\n' "$__bt_status"
fi
exit "$__bt_status""#;

/// The prefix of the line the supervisor appends.
pub const FINAL_LINE_PREFIX: &str = "[background job ";

/// The program line of a supervised job: `sh -c SUPERVISOR shell COMMAND
/// [SCRIPT]`. With a script file, the command is `. "$0"`-style sourcing of
/// it, as for long foreground commands. The supervisor is a POSIX `sh`, not
/// the configured shell: bash would read `BASH_ENV` itself (a session hands
/// its state to a background job that way) and keep it from the command.
pub fn supervised_argv(
    shell: &Path,
    command: &str,
    script_file: Option<&Path>,
    limit_checks: &[LimitCheck],
) -> Vec<OsString> {
    let mut argv = vec![
        OsString::from("sh"),
        OsString::from("-c"),
        OsString::from(SUPERVISOR),
        shell.as_os_str().to_owned(),
    ];
    if let Some(file) = script_file {
        argv.push(OsString::from(". \"$0\""));
        argv.push(file.as_os_str().to_owned());
    } else {
        argv.push(OsString::from(command));
        argv.push(OsString::new());
    }
    for check in limit_checks {
        argv.push(check.file.as_os_str().to_owned());
        argv.push(OsString::from(check.key));
        argv.push(OsString::from(&check.note));
    }
    argv
}

/// A counter the supervisor reads when the job ends: in `file`, the value
/// of `key`; when it is not 0, it prints `note` with `%s` replaced by it
/// (a `printf` format: no other `%` or `\\`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitCheck {
    /// A counter file of the job's cgroup.
    pub file: std::path::PathBuf,
    /// The counter in it.
    pub key: &'static str,
    /// The note, `%s` where the count goes.
    pub note: String,
}

/// How a job ended, from the last line of its output file: `(exit code,
/// signal name)`.
pub fn parse_final_line(tail: &str) -> Option<(Option<i32>, Option<String>)> {
    let last = tail.lines().rev().find(|line| !line.trim().is_empty())?;
    let inner = last.strip_prefix(FINAL_LINE_PREFIX)?.strip_suffix(']')?;
    if let Some(code) = inner.strip_prefix("exited with code ") {
        return Some((code.parse().ok(), None));
    }
    let signal = inner.strip_prefix("killed by signal ")?;
    Some((None, Some(signal.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_supervisor_notes_a_limit_the_job_reached_before_its_status() {
        let dir = tempfile::tempdir().expect("temp dir");
        let events = dir.path().join("pids.events");
        std::fs::write(&events, "max 7\n").expect("write");
        let quiet = dir.path().join("memory.events");
        std::fs::write(&quiet, "low 0\noom_kill 0\n").expect("write");
        let out = dir.path().join("out");
        let checks = [
            LimitCheck {
                file: events,
                key: "max",
                note: "background job reached its limit of 64 processes (pids): %s forks failed"
                    .to_owned(),
            },
            LimitCheck {
                file: quiet,
                key: "oom_kill",
                note: "never printed".to_owned(),
            },
        ];
        let argv = supervised_argv(Path::new("bash"), "exit 3", None, &checks);
        let status = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdout(std::fs::File::create(&out).expect("create"))
            .status()
            .expect("run");
        assert_eq!(status.code(), Some(3));
        assert_eq!(
            std::fs::read_to_string(&out).expect("read"),
            "\n[background job reached its limit of 64 processes (pids): 7 forks failed]\n\n[background job exited with code 3]\n"
        );
    }

    #[test]
    fn reads_the_ending_from_the_last_line() {
        assert_eq!(
            parse_final_line("hi\n\n[background job exited with code 7]\n"),
            Some((Some(7), None))
        );
        assert_eq!(
            parse_final_line("[background job killed by signal SIGTERM]\n"),
            Some((None, Some("SIGTERM".to_owned())))
        );
        assert_eq!(parse_final_line("still running\n"), None);
    }

    #[test]
    fn the_supervisor_records_exit_codes_and_signals() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (command, expected) in [
            (
                "echo out; exit 7",
                "out\n\n[background job exited with code 7]\n",
            ),
            (
                "kill -TERM $$",
                "\n[background job killed by signal SIGTERM]\n",
            ),
        ] {
            let out = dir.path().join("out");
            let argv = supervised_argv(Path::new("bash"), command, None, &[]);
            let status = std::process::Command::new(&argv[0])
                .args(&argv[1..])
                .stdout(std::fs::File::create(&out).expect("create"))
                .status()
                .expect("run");
            assert!(status.code().is_some());
            assert_eq!(std::fs::read_to_string(&out).expect("read"), expected);
        }
    }
}
