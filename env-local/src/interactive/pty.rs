//! The pseudo-terminal: opening the pair, starting the command on the
//! slave side as the leader of a new session with the terminal as its
//! controlling terminal, and the few ioctls the job needs.
//!
//! Both ends are opened close-on-exec from the start (`posix_openpt` with
//! `O_CLOEXEC`, the slave with `O_CLOEXEC`), so a process started meanwhile
//! by another thread cannot inherit them; the child gets the slave on
//! 0/1/2 by `dup2`, which clears the flag on the copies.
//!
//! The parent keeps its copy of the slave open: the master then never reads
//! EIO when the last program closes the terminal (the job learns of the end
//! from the root's pidfd instead), and the job can ask the slave how much
//! typed input is still unread (`TIOCINQ`), which the waiting-for-input
//! check needs.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::process::CommandExt as _;
use std::process::Stdio;
use std::sync::Arc;

use bashtool_core::ExecError;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use nix::sys::termios::{LocalFlags, tcgetattr};

use crate::posix_spawn::DEFAULT_SIGNALS;
use crate::wrap::{Launch, SpawnWrapper};

/// Default terminal width, in columns.
pub const DEFAULT_COLUMNS: u16 = 120;
/// Default terminal height, in rows.
pub const DEFAULT_ROWS: u16 = 40;

/// Widest terminal a job gets; wider asks are narrowed to this.
pub const MAX_COLUMNS: u16 = 500;
/// Tallest terminal a job gets; taller asks are shortened to this.
pub const MAX_ROWS: u16 = 200;

/// The size of the terminal a program sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminalSize {
    pub columns: u16,
    pub rows: u16,
}

impl Default for TerminalSize {
    fn default() -> Self {
        Self {
            columns: DEFAULT_COLUMNS,
            rows: DEFAULT_ROWS,
        }
    }
}

impl TerminalSize {
    /// Within 1..=[`MAX_COLUMNS`] and 1..=[`MAX_ROWS`]: a zero-sized
    /// terminal breaks programs and the emulator, and the emulator keeps a
    /// cell per position in memory.
    pub(crate) fn clamped(self) -> Self {
        Self {
            columns: self.columns.clamp(1, MAX_COLUMNS),
            rows: self.rows.clamp(1, MAX_ROWS),
        }
    }
}

/// Both ends of a pseudo-terminal.
#[derive(Debug)]
pub(crate) struct Pty {
    pub master: OwnedFd,
    pub slave: OwnedFd,
    /// The slave's device number: a process's fd is "the terminal" when it
    /// is this device (or `/dev/tty`, its controlling terminal).
    pub device: u64,
}

impl Pty {
    pub fn open(size: TerminalSize) -> std::io::Result<Self> {
        let master = nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)?;
        nix::pty::grantpt(&master)?;
        nix::pty::unlockpt(&master)?;
        let name = nix::pty::ptsname_r(&master)?;
        let slave = nix::fcntl::open(
            name.as_str(),
            OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let device = std::fs::metadata(&name)?.rdev();
        let pty = Self {
            master: OwnedFd::from(master),
            slave,
            device,
        };
        pty.resize(size)?;
        // Reads and writes go through tokio's reactor: never block a worker.
        let flags = nix::fcntl::fcntl(&pty.master, nix::fcntl::FcntlArg::F_GETFL)?;
        nix::fcntl::fcntl(
            &pty.master,
            nix::fcntl::FcntlArg::F_SETFL(OFlag::from_bits_retain(flags) | OFlag::O_NONBLOCK),
        )?;
        Ok(pty)
    }

    /// Sets the window size; the kernel sends SIGWINCH to the foreground
    /// group, so full-screen programs redraw.
    pub fn resize(&self, size: TerminalSize) -> std::io::Result<()> {
        let size = size.clamped();
        let window = libc::winsize {
            ws_row: size.rows,
            ws_col: size.columns,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ reads one `winsize` from the pointer, which
        // lives for the duration of the call.
        #[allow(unsafe_code)]
        let result =
            unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &raw const window) };
        if result < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Bytes the programs wrote that we have not read yet.
    pub fn unread_output(&self) -> usize {
        queued(&self.master, libc::FIONREAD)
    }

    /// Typed input the program has not read yet. In canonical (line) mode
    /// the kernel counts only complete lines: a half-typed line does not
    /// count, as the program is still waiting for the rest of it.
    pub fn unread_input(&self) -> usize {
        queued(&self.slave, libc::TIOCINQ)
    }

    /// The terminal's foreground process group: who gets the input and the
    /// Ctrl-C. `None` when there is none (the session leader has exited).
    pub fn foreground_group(&self) -> Option<u32> {
        nix::unistd::tcgetpgrp(&self.master)
            .ok()
            .and_then(|group| u32::try_from(group.as_raw()).ok())
            .filter(|&group| group > 0)
    }

    /// The input modes the programs set on the terminal.
    pub fn modes(&self) -> TerminalModes {
        match tcgetattr(&self.slave) {
            Ok(termios) => TerminalModes {
                echo: termios.local_flags.contains(LocalFlags::ECHO),
                canonical: termios.local_flags.contains(LocalFlags::ICANON),
            },
            // Cannot tell: assume a password prompt, the safe side.
            Err(_) => TerminalModes {
                echo: false,
                canonical: true,
            },
        }
    }
}

/// The termios local modes the job reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminalModes {
    /// The line discipline echoes what is typed.
    pub echo: bool,
    /// Line mode: the program gets input a line at a time.
    pub canonical: bool,
}

impl TerminalModes {
    /// Typed text does not appear on the screen: echo is off while the
    /// kernel still collects whole lines, as `read -s`, `getpass`, `sudo`
    /// and `ssh` set it. A program in raw mode (readline, `vi`, `less`)
    /// also turns echo off, but it draws what is typed itself, so that is
    /// not a hidden prompt.
    pub fn hides_input(self) -> bool {
        !self.echo && self.canonical
    }
}

fn queued(fd: &OwnedFd, request: libc::Ioctl) -> usize {
    let mut count: libc::c_int = 0;
    // SAFETY: FIONREAD/TIOCINQ write one int to the pointer, which lives
    // for the duration of the call.
    #[allow(unsafe_code)]
    let result = unsafe { libc::ioctl(fd.as_raw_fd(), request, &raw mut count) };
    if result < 0 {
        0
    } else {
        usize::try_from(count).unwrap_or(0)
    }
}

/// Starts `launch` (already rewritten by the wrappers) on the terminal's
/// slave: a new session, the slave as controlling terminal and as 0/1/2,
/// then every wrapper's step in the child. Returns the child's pid.
pub(crate) fn spawn_on(
    pty: &Pty,
    launch: &Launch,
    wrappers: &[Arc<dyn SpawnWrapper>],
) -> Result<u32, ExecError> {
    let Some((program, arguments)) = launch.argv.split_first() else {
        return Err(ExecError::Other {
            message: "the program line to launch is empty".to_owned(),
        });
    };
    let display = program.to_string_lossy().into_owned();
    let spawn_error = |source: std::io::Error| {
        if source.kind() == std::io::ErrorKind::NotFound {
            ExecError::ShellNotFound {
                program: display.clone(),
            }
        } else {
            ExecError::Spawn {
                program: display.clone(),
                source,
            }
        }
    };
    crate::exit_statuses::keep_exit_statuses();
    let stdio = || pty.slave.try_clone().map(Stdio::from);
    let mut command = std::process::Command::new(program);
    command
        .args(arguments)
        .env_clear()
        .envs(
            launch
                .env
                .iter()
                .map(|(key, value)| (key.as_os_str(), value.as_os_str())),
        )
        .current_dir(&launch.cwd)
        .stdin(stdio().map_err(&spawn_error)?)
        .stdout(stdio().map_err(&spawn_error)?)
        .stderr(stdio().map_err(&spawn_error)?);
    let wrappers: Vec<Arc<dyn SpawnWrapper>> = wrappers.to_vec();
    // SAFETY: the closure runs in the child between fork and exec, after std
    // has put the slave on 0/1/2. It makes only async-signal-safe system
    // calls (setsid, ioctl, signal) and the wrappers' steps, whose contract is to be
    // async-signal-safe too; `last_os_error` reads errno without allocating.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            // A new session without a controlling terminal, then the slave
            // (our stdin) becomes its controlling terminal: Ctrl-C, job
            // control and `/dev/tty` (sudo and ssh prompt there) all work.
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // std resets the mask and SIGPIPE, not what the host ignores:
            // Ctrl-C must interrupt even under a server started with
            // SIGINT ignored (an ignored signal is inherited across exec,
            // and bash passes it on to what it runs).
            for signal in DEFAULT_SIGNALS {
                libc::signal(signal, libc::SIG_DFL);
            }
            for wrapper in &wrappers {
                wrapper.pre_exec()?;
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(&spawn_error)?;
    // Dropping `Child` neither waits nor kills: the job watches and reaps
    // the process through its pid (see `RootProcess`).
    Ok(child.id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_kept_within_limits() {
        let huge = TerminalSize {
            columns: u16::MAX,
            rows: 0,
        };
        assert_eq!(
            huge.clamped(),
            TerminalSize {
                columns: MAX_COLUMNS,
                rows: 1
            }
        );
        assert_eq!(TerminalSize::default().clamped(), TerminalSize::default());
    }

    #[test]
    fn a_hidden_prompt_is_echo_off_in_line_mode() {
        let modes = |echo, canonical| TerminalModes { echo, canonical };
        assert!(modes(false, true).hides_input(), "read -s, getpass");
        assert!(!modes(false, false).hides_input(), "readline, vi: raw mode");
        assert!(!modes(true, true).hides_input());
    }
}
