//! Knowing from the kernel that a program waits for input.
//!
//! A program waits for typed input when the terminal's foreground process
//! group is blocked reading the terminal. For each thread of each process in
//! that group, `/proc/<pid>/task/<tid>/syscall` tells the system call it is
//! blocked in and its arguments (or `running`):
//! - `read`, `readv`, `pread64`, `preadv`, `preadv2` on an fd that is the
//!   terminal;
//! - `select`/`pselect6` with the terminal in the read set, `poll`/`ppoll`
//!   with the terminal in the array (both read from `/proc/<pid>/mem`), or
//!   `epoll_wait`/`epoll_pwait`/`epoll_pwait2` on an epoll set that watches
//!   the terminal for input (`/proc/<pid>/fdinfo/<epfd>`).
//!
//! An fd "is the terminal" when it is the job's slave device or `/dev/tty`
//! (what `sudo` and `ssh` open to ask for a password), decided by the
//! device number the fd's `/proc/<pid>/fd/<n>` link leads to.
//!
//! The group waits when some thread reads the terminal and no thread of
//! the group is running. A thread blocked elsewhere (a pipe, `wait4`, a
//! sleep) neither counts for nor against: `cat | grep x` waits while `cat`
//! reads and `grep` waits on the pipe.
//!
//! Limits: `/proc/<pid>/syscall` and `/proc/<pid>/mem` need ptrace-read
//! access to the process (same user and not made non-dumpable, or
//! `CAP_SYS_PTRACE`; Yama's `ptrace_scope=1` still allows our own
//! descendants). Without it the probe answers [`Probe::Unknown`] and the
//! job falls back to a silence timer, and says so. `/proc/<pid>/wchan` is
//! no way around it: it needs the same access (only Yama's
//! `ptrace_scope=2` tells them apart), and a terminal read shows there as
//! `wait_woken`, like a socket read. A program that
//! busy-polls the terminal without blocking, or reads it through
//! `io_uring`, is not seen as waiting. 32-bit programs on a 64-bit kernel
//! report another syscall table and are not recognised.

use std::io::Read as _;
use std::os::unix::fs::{FileExt as _, FileTypeExt as _, MetadataExt as _};

use bashtool_process::all_processes;

/// Device number of `/dev/tty` (major 5, minor 0): the calling process's
/// controlling terminal, which for the job's processes is the job's slave.
const CONTROLLING_TTY: u64 = 5 << 8;
/// Most poll entries or select bits read from a process's memory.
const MAX_POLL_ENTRIES: usize = 4096;
/// `POLLIN`, `POLLPRI`, and `EPOLLIN`, `EPOLLPRI`: interest in input.
const INPUT_EVENTS: u64 = 0x1 | 0x2;

/// What the foreground group is doing, as far as the kernel tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Blocked reading the terminal, nothing running.
    ReadingTerminal,
    /// Running, or blocked on something other than the terminal.
    NotReading,
    /// The kernel would not tell (no ptrace access to the processes).
    Unknown,
}

/// Looks at the processes of one terminal.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Detector {
    /// The slave's device number.
    device: u64,
}

/// What one thread is doing.
enum Activity {
    Running,
    ReadingTerminal,
    Elsewhere,
    Hidden,
}

impl Detector {
    pub fn new(device: u64) -> Self {
        Self { device }
    }

    /// Probes the processes of `group` (the terminal's foreground group).
    pub fn probe(self, group: u32) -> Probe {
        let mut reading = false;
        let mut hidden = false;
        let members = all_processes()
            .into_iter()
            .filter(|info| info.group == group && !info.zombie);
        for member in members {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", member.pid)) else {
                continue;
            };
            for task in tasks.filter_map(Result::ok) {
                let Some(tid) = task.file_name().to_str().and_then(|name| name.parse().ok()) else {
                    continue;
                };
                match self.activity(member.pid, tid) {
                    Activity::Running => return Probe::NotReading,
                    Activity::ReadingTerminal => reading = true,
                    Activity::Hidden => hidden = true,
                    Activity::Elsewhere => {}
                }
            }
        }
        if reading {
            Probe::ReadingTerminal
        } else if hidden {
            Probe::Unknown
        } else {
            // Including no process at all: the group is changing hands (a
            // shell starting its next command); the job asks again later.
            Probe::NotReading
        }
    }

    fn activity(self, pid: u32, tid: u32) -> Activity {
        let mut text = String::new();
        let read = std::fs::File::open(format!("/proc/{pid}/task/{tid}/syscall"))
            .and_then(|mut file| file.read_to_string(&mut text));
        match read {
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
                return Activity::Hidden;
            }
            // A kernel built without the file (no `CONFIG_HAVE_ARCH_TRACEHOOK`)
            // hides it as surely as missing rights do.
            Err(_) if std::path::Path::new(&format!("/proc/{pid}/task/{tid}")).exists() => {
                return Activity::Hidden;
            }
            // Gone meanwhile.
            Err(_) => return Activity::Elsewhere,
        }
        let Some(call) = SyscallLine::parse(&text) else {
            return Activity::Running;
        };
        if self.reads_terminal(pid, &call) {
            Activity::ReadingTerminal
        } else {
            Activity::Elsewhere
        }
    }

    fn reads_terminal(self, pid: u32, call: &SyscallLine) -> bool {
        let Some(kind) = classify(call.number) else {
            return false;
        };
        let argument = |index: usize| call.arguments.get(index).copied().unwrap_or(0);
        match kind {
            Wait::Read => self.is_terminal(pid, argument(0)),
            Wait::Select => self.select_reads_terminal(pid, argument(0), argument(1)),
            Wait::Poll => self.poll_reads_terminal(pid, argument(0), argument(1)),
            Wait::Epoll => self.epoll_reads_terminal(pid, argument(0)),
        }
    }

    /// True when fd `fd` of `pid` is the terminal.
    fn is_terminal(self, pid: u32, fd: u64) -> bool {
        std::fs::metadata(format!("/proc/{pid}/fd/{fd}")).is_ok_and(|metadata| {
            metadata.file_type().is_char_device()
                && (metadata.rdev() == self.device || metadata.rdev() == CONTROLLING_TTY)
        })
    }

    fn select_reads_terminal(self, pid: u32, count: u64, read_set: u64) -> bool {
        if read_set == 0 || count == 0 {
            return false;
        }
        let count = usize::try_from(count).unwrap_or(0).min(MAX_POLL_ENTRIES);
        // An fd_set is an array of longs, one bit per fd.
        let mut bits = vec![0_u8; count.div_ceil(64) * 8];
        if !read_memory(pid, read_set, &mut bits) {
            return false;
        }
        (0..count).any(|fd| bits[fd / 8] & (1 << (fd % 8)) != 0 && self.is_terminal(pid, fd as u64))
    }

    fn poll_reads_terminal(self, pid: u32, array: u64, count: u64) -> bool {
        if array == 0 || count == 0 {
            return false;
        }
        let count = usize::try_from(count).unwrap_or(0).min(MAX_POLL_ENTRIES);
        // struct pollfd { int fd; short events; short revents; }
        let mut entries = vec![0_u8; count * 8];
        if !read_memory(pid, array, &mut entries) {
            return false;
        }
        entries.chunks_exact(8).any(|entry| {
            let fd = i32::from_ne_bytes([entry[0], entry[1], entry[2], entry[3]]);
            let events = i16::from_ne_bytes([entry[4], entry[5]]) as u16;
            fd >= 0 && u64::from(events) & INPUT_EVENTS != 0 && self.is_terminal(pid, fd as u64)
        })
    }

    fn epoll_reads_terminal(self, pid: u32, epoll: u64) -> bool {
        // Lines like `tfd:        0 events:       19 data: ...` (hex events).
        let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{epoll}")) else {
            return false;
        };
        info.lines().any(|line| {
            let mut words = line.split_whitespace();
            if words.next() != Some("tfd:") {
                return false;
            }
            let fd = words.next().and_then(|fd| fd.parse::<u64>().ok());
            let events = words
                .next()
                .filter(|&word| word == "events:")
                .and_then(|_| words.next())
                .and_then(|events| u64::from_str_radix(events, 16).ok());
            match (fd, events) {
                (Some(fd), Some(events)) => events & INPUT_EVENTS != 0 && self.is_terminal(pid, fd),
                _ => false,
            }
        })
    }
}

fn read_memory(pid: u32, address: u64, buffer: &mut [u8]) -> bool {
    std::fs::File::open(format!("/proc/{pid}/mem"))
        .and_then(|file| file.read_exact_at(buffer, address))
        .is_ok()
}

/// A thread blocked in a system call: its number and six arguments.
#[derive(Debug, PartialEq, Eq)]
struct SyscallLine {
    number: libc::c_long,
    arguments: Vec<u64>,
}

impl SyscallLine {
    /// Parses `/proc/<pid>/syscall`: `running`, `-1 <sp> <pc>` (blocked
    /// outside a system call), or `<nr> <arg1> .. <arg6> <sp> <pc>`.
    /// `None` for `running`.
    fn parse(text: &str) -> Option<Self> {
        let mut words = text.split_whitespace();
        let number: libc::c_long = words.next()?.parse().ok()?;
        let arguments = words
            .take(6)
            .map(|word| u64::from_str_radix(word.trim_start_matches("0x"), 16).unwrap_or(0))
            .collect();
        Some(Self { number, arguments })
    }
}

/// The kinds of system call a program waits for input in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// fd in argument 1.
    Read,
    /// nfds in argument 1, read set in argument 2.
    Select,
    /// pollfd array in argument 1, count in argument 2.
    Poll,
    /// epoll fd in argument 1.
    Epoll,
}

fn classify(number: libc::c_long) -> Option<Wait> {
    let reads = [
        libc::SYS_read,
        libc::SYS_readv,
        libc::SYS_pread64,
        libc::SYS_preadv,
        libc::SYS_preadv2,
    ];
    let selects = [
        libc::SYS_pselect6,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_select,
    ];
    let polls = [
        libc::SYS_ppoll,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_poll,
    ];
    let epolls = [
        libc::SYS_epoll_pwait,
        libc::SYS_epoll_pwait2,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_epoll_wait,
    ];
    if reads.contains(&number) {
        Some(Wait::Read)
    } else if selects.contains(&number) {
        Some(Wait::Select)
    } else if polls.contains(&number) {
        Some(Wait::Poll)
    } else if epolls.contains(&number) {
        Some(Wait::Epoll)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_blocked_read_and_a_running_thread() {
        let line = "0 0x0 0x7ffc8f0a 0x1 0x0 0x0 0x0 0x7ffc8e00 0x7f12\n";
        assert_eq!(
            SyscallLine::parse(line),
            Some(SyscallLine {
                number: 0,
                arguments: vec![0, 0x7ffc_8f0a, 1, 0, 0, 0]
            })
        );
        assert_eq!(SyscallLine::parse("running\n"), None);
        assert_eq!(
            SyscallLine::parse("-1 0x7ffc 0x7f12\n").map(|line| line.number),
            Some(-1)
        );
    }

    #[test]
    fn classifies_the_waiting_system_calls() {
        assert_eq!(classify(libc::SYS_read), Some(Wait::Read));
        assert_eq!(classify(libc::SYS_pselect6), Some(Wait::Select));
        assert_eq!(classify(libc::SYS_ppoll), Some(Wait::Poll));
        assert_eq!(classify(libc::SYS_epoll_pwait), Some(Wait::Epoll));
        assert_eq!(classify(libc::SYS_nanosleep), None);
        assert_eq!(classify(libc::SYS_wait4), None);
        assert_eq!(classify(-1), None);
    }
}
