//! The pseudo-terminal: opening the pair, starting the command on the
//! slave side as the leader of a new session with the terminal as its
//! controlling terminal, and the few ioctls the job needs.
//!
//! Both ends are opened close-on-exec from the start, so a process started
//! meanwhile by another thread cannot inherit them; the child gets the
//! slave on 0/1/2 by `dup2`, which clears the flag on the copies. Under a
//! sandbox the pair comes from the sandbox's own `devpts`: its commands see
//! this terminal and no terminal of the host.
//!
//! The parent keeps its copy of the slave open: the master then never reads
//! EIO when the last program closes the terminal (the job learns of the end
//! from the root's pidfd instead), and the job can ask the slave how much
//! typed input is still unread (`TIOCINQ`), which the waiting-for-input
//! check needs.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use nix::sys::termios::{LocalFlags, tcgetattr};

use crate::command::{ChildIo, Launch, Sink};
use crate::error::Error;
use crate::launch::launch;
use crate::tree::RunMarker;
use crate::wrapper::{Wrapper, realm_of};

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
    /// Characters per line.
    pub columns: u16,
    /// Lines.
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
    pub fn clamped(self) -> Self {
        Self {
            columns: self.columns.clamp(1, MAX_COLUMNS),
            rows: self.rows.clamp(1, MAX_ROWS),
        }
    }
}

/// Both ends of a pseudo-terminal.
#[derive(Debug)]
pub struct Pty {
    /// Our end: what the program writes is read here.
    pub master: OwnedFd,
    /// The program's end, its terminal.
    pub slave: OwnedFd,
    /// The slave's device number: a process's fd is "the terminal" when it
    /// is this device (or `/dev/tty`, its controlling terminal).
    pub device: u64,
}

/// The master side, the terminal's end bashtool reads and writes.
impl std::os::fd::AsRawFd for Pty {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.master.as_raw_fd()
    }
}

impl std::os::fd::AsFd for Pty {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.master.as_fd()
    }
}

impl crate::fd::sealed::Sealed for Pty {}
// A `Pty` owns its descriptor for its whole life (it has no setter).
impl crate::fd::OwnsDescriptor for Pty {}

impl Pty {
    /// Opens a pair from the multiplexer `ptmx` (a sandbox's own, whose
    /// terminals only its commands see), or the host's `/dev/ptmx`. The
    /// slave is opened from the master (`TIOCGPTPEER`), not by its path,
    /// which names it only in its own `devpts`.
    pub fn open(size: TerminalSize, ptmx: Option<&std::path::Path>) -> std::io::Result<Self> {
        let master = nix::fcntl::open(
            ptmx.unwrap_or(std::path::Path::new("/dev/ptmx")),
            OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        rustix::pty::unlockpt(&master)?;
        let slave = rustix::pty::ioctl_tiocgptpeer(
            &master,
            rustix::pty::OpenptFlags::RDWR | rustix::pty::OpenptFlags::NOCTTY,
        )?;
        // `ioctl_tiocgptpeer` opens the slave close-on-exec.
        let device = nix::sys::stat::fstat(&slave)?.st_rdev;
        let pty = Self {
            master,
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
        rustix::termios::tcsetwinsize(
            &self.master,
            rustix::termios::Winsize {
                ws_row: size.rows,
                ws_col: size.columns,
                ws_xpixel: 0,
                ws_ypixel: 0,
            },
        )
        .map_err(Into::into)
    }

    /// Bytes the programs wrote that we have not read yet.
    pub fn unread_output(&self) -> usize {
        queued(&self.master)
    }

    /// Typed input the program has not read yet. In canonical (line) mode
    /// the kernel counts only complete lines: a half-typed line does not
    /// count, as the program is still waiting for the rest of it.
    pub fn unread_input(&self) -> usize {
        queued(&self.slave)
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

/// Bytes waiting in `fd`'s queue (`FIONREAD`, which is `TIOCINQ` on a
/// terminal's slave).
fn queued(fd: &OwnedFd) -> usize {
    rustix::io::ioctl_fionread(fd).map_or(0, |count| usize::try_from(count).unwrap_or(0))
}

/// Starts `launch` through the one launch path (the wrappers applied) on a
/// new terminal from the realm's multiplexer (or the host's): a new session
/// with the slave as its controlling terminal and as 0/1/2. Returns the
/// terminal and the process.
pub fn launch_on_terminal(
    launch_spec: Launch,
    wrappers: &[Arc<dyn Wrapper>],
    size: TerminalSize,
    marker: &RunMarker,
) -> Result<(Pty, crate::root::RootProcess), Error> {
    let program = launch_spec
        .argv
        .first()
        .map(|program| program.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ptmx = realm_of(wrappers).and_then(crate::wrapper::Realm::terminal_multiplexer);
    let pty = Pty::open(size, ptmx.as_deref()).map_err(|source| Error::spawn(&program, source))?;
    let terminal = pty
        .slave
        .try_clone()
        .map_err(|source| Error::spawn(&program, source))?;
    let launched = launch(
        launch_spec,
        wrappers,
        ChildIo {
            stdin_pipe: false,
            stdout: Sink::Null,
            stderr: Sink::Null,
            extra: Vec::new(),
            terminal: Some(terminal),
        },
        Some(marker),
    )?;
    Ok((pty, launched.root))
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
