//! Exit statuses and the broken-pipe rule.

/// Bad usage or an input that could not be run.
pub const USAGE: u8 = 2;
/// The command was refused by the policy (or not approved): nothing ran.
pub const REFUSED: u8 = 126;
/// The policy could not parse the command, so it could not check it:
/// nothing ran (`EX_DATAERR` of sysexits.h).
pub const UNPARSABLE: u8 = 65;
/// The environment could not run the command: the remote environment
/// could not be reached or refused the handshake, the sandbox cannot be
/// enforced here, the shell could not be started. Nothing ran (as
/// `timeout(1)` and `env(1)` say 125 when they themselves fail).
pub const UNAVAILABLE: u8 = 125;
/// Like `timeout(1)`.
pub const TIMED_OUT: u8 = 124;
/// Like a shell after Ctrl-C.
pub const INTERRUPTED: u8 = 130;
/// Like a pipeline writer killed by SIGPIPE: our stdout was closed and the
/// command was stopped.
pub const STDOUT_CLOSED: u8 = 141;

/// A closed stdout (`bashtool ... | head`) is not an error.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The shell-style exit status for a tool result.
pub fn status_of(details: &bashtool_core::Details) -> u8 {
    match details.error_kind.as_deref() {
        Some("invalid_input") => return USAGE,
        Some("spawn_failed") => return UNAVAILABLE,
        Some("blocked") if details.rule == Some(bashtool_core::Rule::ParseError) => {
            return UNPARSABLE;
        }
        None | Some("aborted") => {}
        Some(_) => return REFUSED,
    }
    if details.pid.is_some()
        && details
            .state
            .as_deref()
            .is_none_or(|state| state == "running")
    {
        // A background job that started: it has no exit status yet.
        return 0;
    }
    if details.timed_out {
        return TIMED_OUT;
    }
    if details.cancelled {
        return INTERRUPTED;
    }
    if let Some(code) = details.exit_code {
        return u8::try_from(code.rem_euclid(256)).unwrap_or(1);
    }
    if let Some(signal) = &details.signal {
        let number = LINUX_SIGNALS
            .iter()
            .position(|name| name == signal)
            .map_or(0, |index| index + 1);
        return u8::try_from(128 + number).unwrap_or(1);
    }
    1
}

/// Linux's signal names, numbered from 1: a command runs on Linux (here,
/// or over there for a relay build on macOS or Windows, whose own numbers
/// differ), so its signal's number is Linux's.
const LINUX_SIGNALS: [&str; 31] = [
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_signals_as_linux_does() {
        #[cfg(target_os = "linux")]
        for signal in nix::sys::signal::Signal::iterator() {
            assert_eq!(
                LINUX_SIGNALS.get(signal as usize - 1),
                Some(&signal.as_str()),
                "{signal}"
            );
        }
        let killed = bashtool_core::Details {
            signal: Some("SIGKILL".to_owned()),
            ..bashtool_core::Details::default()
        };
        assert_eq!(status_of(&killed), 137);
    }
}
