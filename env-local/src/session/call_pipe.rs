//! The output streams of calls: a FIFO each for stdout and stderr, the
//! single place where their bytes go to the call's output, and how we wait
//! for them.

use std::os::fd::{AsFd as _, OwnedFd};
use std::path::{Path, PathBuf};

use bashtool_core::{OutputCapture, Stream};
use bashtool_process::EpollSet;
use bashtool_process::Registered;
use nix::fcntl::{OFlag, open};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use nix::sys::stat::Mode;
use tokio::io::{Interest, Ready};

/// Largest read from one output pipe.
const READ_BUFFER: usize = 64 * 1024;
/// Most reads when draining a pipe after the command ended: a leftover that
/// writes without pause must not keep the call from returning.
const MAX_DRAIN_READS: usize = 64;

/// A session's two output FIFOs, kept from call to call while clean, and
/// watched through an epoll set of our own, level-triggered, that tokio
/// watches in turn.
///
/// Why not tokio's pipe types: a FIFO reports a hang-up each time its last
/// writer goes, which is how a call's end is told apart from a leftover
/// still holding it (below), and tokio keeps a hang-up it saw for the life
/// of the registration: every later read would spin on EAGAIN. So each
/// call had to open and register its read ends anew (about twenty system
/// calls). A level-triggered set reports only what holds now, so the read
/// ends are registered once.
pub(crate) struct CallPipes {
    poll: Registered<EpollSet>,
    stdout: Option<CallPipe>,
    stderr: Option<CallPipe>,
    /// The read buffer: zeroing fresh 64 KiB buffers on every call cost
    /// more than the call's own reads.
    buffer: Vec<u8>,
    /// Puts `bash: ` where bash names the command file (see [`Renamer`]).
    renamer: Renamer,
}

/// bash names the file it is sourcing in its error messages
/// (`/dev/shm/bashtool-session-…/command.sh: line 1: foo: command not
/// found`), where `bash -c` says `bash: line 1: …`. The session's command
/// file is a detail of how the session runs a command: its messages read
/// as a fresh shell's. The file's path is private to the session (a random
/// directory only its sandbox sees), so nothing else prints it.
struct Renamer {
    finder: memchr::memmem::Finder<'static>,
    /// Bytes at the end of the last read of each stream (stdout, stderr)
    /// that may be the start of the path, kept until the next read or the
    /// end of the call.
    carry: [Vec<u8>; 2],
}

/// What a session's command file is called in messages.
const SHELL_NAME: &[u8] = b"bash: ";

impl Renamer {
    fn new(command_file: &Path) -> Self {
        let mut needle = command_file.as_os_str().as_encoded_bytes().to_vec();
        needle.extend_from_slice(b": ");
        Self {
            finder: memchr::memmem::Finder::new(&needle).into_owned(),
            carry: [Vec::new(), Vec::new()],
        }
    }

    /// Pushes `bytes` of `stream` with the command file's name replaced.
    fn push(&mut self, output: &OutputCapture, stream: Stream, bytes: &[u8]) {
        let index = stream_index(stream) as usize;
        let mut joined;
        let data: &[u8] = if self.carry[index].is_empty() {
            bytes
        } else {
            joined = std::mem::take(&mut self.carry[index]);
            joined.extend_from_slice(bytes);
            &joined
        };
        let needle = self.finder.needle();
        let mut start = 0;
        for found in self.finder.find_iter(data) {
            if found > start {
                output.push(stream, &data[start..found]);
            }
            output.push(stream, SHELL_NAME);
            start = found + needle.len();
        }
        let rest = &data[start..];
        // The longest end of `rest` that begins the needle waits for the
        // next read: only an end shorter than the needle, starting with
        // its first byte, can.
        let window = rest.len().saturating_sub(needle.len() - 1);
        let kept = memchr::memchr_iter(needle[0], &rest[window..])
            .map(|at| rest.len() - window - at)
            .find(|&length| needle.starts_with(&rest[rest.len() - length..]))
            .unwrap_or(0);
        if rest.len() > kept {
            output.push(stream, &rest[..rest.len() - kept]);
        }
        if kept > 0 {
            self.carry[index] = rest[rest.len() - kept..].to_vec();
        }
    }

    /// Pushes what was kept back.
    fn flush(&mut self, output: &OutputCapture) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let kept = std::mem::take(&mut self.carry[stream_index(stream) as usize]);
            if !kept.is_empty() {
                output.push(stream, &kept);
            }
        }
    }
}

/// One FIFO: its read end, registered in the set, and a write end we hold
/// while a command runs, so that EOF afterwards means no process of the
/// command holds it any more. A FIFO that reached EOF is reused by the
/// next call (nobody else can write to it); one still held by a leftover
/// is dropped, and its path removed, so that the leftover's output can
/// never reach a later call.
struct CallPipe {
    path: PathBuf,
    /// `<n>` of the FIFO's name (`out.<n>`, `err.<n>`, in 20 digits): the
    /// call that made it.
    number: u64,
    receiver: OwnedFd,
    sender: Option<OwnedFd>,
    stream: Stream,
    /// EOF was seen after the last command: free of other writers.
    clean: bool,
    /// Not at EOF (then it is left out of the set until the next call:
    /// level-triggered, it would be reported again and again).
    open: bool,
}

impl Drop for CallPipe {
    fn drop(&mut self) {
        // Closing the read end also takes it out of the epoll set.
        let _ = std::fs::remove_file(&self.path);
    }
}

fn stream_index(stream: Stream) -> u64 {
    match stream {
        Stream::Stdout => 0,
        Stream::Stderr => 1,
    }
}

impl CallPipes {
    /// The pipes of a session whose command file is `command_file`.
    pub(crate) fn new(command_file: &Path) -> std::io::Result<Self> {
        let set = EpollSet::new(Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?);
        let poll = bashtool_process::register(set, Interest::READABLE)?;
        Ok(Self {
            poll,
            stdout: None,
            stderr: None,
            buffer: vec![0_u8; READ_BUFFER],
            renamer: Renamer::new(command_file),
        })
    }

    /// Makes both FIFOs ready for call `id`: the last ones again if they
    /// are clean, else new ones in `dir` numbered `id`.
    pub(crate) fn prepare(&mut self, dir: &Path, id: u64) -> std::io::Result<()> {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let slot = match stream {
                Stream::Stdout => &mut self.stdout,
                Stream::Stderr => &mut self.stderr,
            };
            match slot {
                Some(pipe) if pipe.clean => {
                    // Its write end comes with `hold`, once the request is
                    // out: the shell's wake-up need not wait for it.
                    pipe.clean = false;
                    if !pipe.open {
                        pipe.open = true;
                        let mut event = EpollEvent::new(EpollFlags::EPOLLIN, stream_index(stream));
                        self.poll
                            .get_ref()
                            .modify(pipe.receiver.as_fd(), &mut event)?;
                    }
                }
                _ => {
                    // A held FIFO goes first, path and all.
                    *slot = None;
                    let pipe = CallPipe::create(dir, id, stream)?;
                    self.poll.get_ref().add(
                        pipe.receiver.as_fd(),
                        EpollEvent::new(EpollFlags::EPOLLIN, stream_index(stream)),
                    )?;
                    *slot = Some(pipe);
                }
            }
        }
        Ok(())
    }

    /// Takes a write end of each FIFO that has none (those `prepare`
    /// reused), so that EOF after the command means no process of it holds
    /// one. Called right after the request is written, while the shell
    /// wakes: before the command can have ended, the FIFO is not read. If
    /// it cannot be had, the call goes on without it: `drain` still tells
    /// a held FIFO by EAGAIN, and `read_some` stops watching a FIFO at EOF.
    pub(crate) fn hold(&mut self) {
        for pipe in [self.stdout.as_mut(), self.stderr.as_mut()]
            .into_iter()
            .flatten()
        {
            if pipe.sender.is_none() {
                pipe.sender = open_sender(&pipe.path).ok();
            }
        }
    }

    fn pipe(&self, stream: Stream) -> &CallPipe {
        let slot = match stream {
            Stream::Stdout => &self.stdout,
            Stream::Stderr => &self.stderr,
        };
        slot.as_ref()
            .expect("CallPipes::prepare makes both pipes before a call")
    }

    /// The FIFO of `stream` (after [`CallPipes::prepare`]).
    pub(crate) fn path(&self, stream: Stream) -> &Path {
        &self.pipe(stream).path
    }

    /// `<n>` of the FIFO of `stream` (after [`CallPipes::prepare`]).
    pub(crate) fn number(&self, stream: Stream) -> u64 {
        self.pipe(stream).number
    }

    /// Waits for bytes (or EOF) on either FIFO and pushes what one read of
    /// each ready FIFO gives. Cancel-safe: all it does after the wait
    /// happens at once.
    pub(crate) async fn read_some(&mut self, output: &OutputCapture) {
        let mut events = [EpollEvent::empty(); 2];
        let count = loop {
            let Ok(mut guard) = self.poll.readable().await else {
                return std::future::pending().await;
            };
            match guard.get_inner().wait(&mut events, 0_u8) {
                Ok(0) => guard.clear_ready_matching(Ready::READABLE),
                Ok(count) => break count,
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return std::future::pending().await,
            }
        };
        for event in &events[..count] {
            let stream = if event.data() == 0 {
                Stream::Stdout
            } else {
                Stream::Stderr
            };
            let Some(pipe) = (match stream {
                Stream::Stdout => self.stdout.as_mut(),
                Stream::Stderr => self.stderr.as_mut(),
            }) else {
                continue;
            };
            match nix::unistd::read(pipe.receiver.as_fd(), &mut self.buffer) {
                Ok(0) => {
                    // EOF while the command runs cannot happen while we
                    // hold a write end; should it, stop watching it.
                    pipe.open = false;
                    let mut event = EpollEvent::new(EpollFlags::empty(), event.data());
                    let _ = self
                        .poll
                        .get_ref()
                        .modify(pipe.receiver.as_fd(), &mut event);
                }
                Ok(count) => self
                    .renamer
                    .push(output, pipe.stream, &self.buffer[..count]),
                Err(_) => {}
            }
        }
    }

    /// Reads what is in both FIFOs without waiting, giving up our write
    /// ends. Returns true if some process still holds a write end (no
    /// EOF).
    pub(crate) fn drain(&mut self, output: &OutputCapture) -> bool {
        let mut held = false;
        for pipe in [self.stdout.as_mut(), self.stderr.as_mut()]
            .into_iter()
            .flatten()
        {
            held |= pipe.drain(&mut self.buffer, &mut self.renamer, output);
        }
        held
    }

    /// Ends both streams of the call's output.
    pub(crate) fn finish(&mut self, output: &OutputCapture) {
        self.renamer.flush(output);
        // A character cut off by the end of the output becomes U+FFFD.
        output.end_stream(Stream::Stdout);
        output.end_stream(Stream::Stderr);
    }
}

fn open_sender(path: &Path) -> std::io::Result<OwnedFd> {
    // Non-blocking: with our read end open it never waits, and we never
    // write to it.
    Ok(open(
        path,
        OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?)
}

impl CallPipe {
    fn create(dir: &Path, number: u64, stream: Stream) -> std::io::Result<Self> {
        let prefix = match stream {
            Stream::Stdout => "out",
            Stream::Stderr => "err",
        };
        // Zero-padded: the shell reads the number at a fixed width.
        let path = dir.join(format!(
            "{prefix}.{number:0digits$}",
            digits = super::driver::PIPE_DIGITS
        ));
        let _ = std::fs::remove_file(&path);
        nix::unistd::mkfifo(&path, Mode::S_IRUSR | Mode::S_IWUSR)?;
        // The read end first (non-blocking, it does not wait for a
        // writer): a read end that never saw a writer reports no hang-up.
        let receiver = open(
            &path,
            OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let sender = open_sender(&path)?;
        Ok(Self {
            path,
            number,
            receiver,
            sender: Some(sender),
            stream,
            clean: false,
            open: true,
        })
    }

    fn drain(&mut self, buffer: &mut [u8], renamer: &mut Renamer, output: &OutputCapture) -> bool {
        self.sender = None;
        for _ in 0..MAX_DRAIN_READS {
            match nix::unistd::read(self.receiver.as_fd(), buffer) {
                Ok(0) => {
                    self.clean = true;
                    return false;
                }
                Ok(count) => renamer.push(output, self.stream, &buffer[..count]),
                Err(nix::errno::Errno::EAGAIN) => return true,
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renamed(chunks: &[(Stream, &[u8])]) -> String {
        let output = OutputCapture::new(&bashtool_core::OutputConfig::default(), None);
        let mut renamer = Renamer::new(Path::new("/dev/shm/s-1/command.sh"));
        for (stream, bytes) in chunks {
            renamer.push(&output, *stream, bytes);
        }
        renamer.flush(&output);
        output.end_stream(Stream::Stdout);
        output.end_stream(Stream::Stderr);
        let buffer = output.finish();
        let (lines, _) = buffer.retained();
        lines
            .iter()
            .map(|line| line.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_command_file_reads_as_bash_however_the_reads_cut_it() {
        let message = b"a\n/dev/shm/s-1/command.sh: line 2: foo: command not found\n/x/y\n";
        let expected = "a\nbash: line 2: foo: command not found\n/x/y";
        assert_eq!(renamed(&[(Stream::Stderr, message)]), expected);
        for cut in 0..=message.len() {
            let (first, second) = message.split_at(cut);
            assert_eq!(
                renamed(&[(Stream::Stderr, first), (Stream::Stderr, second)]),
                expected,
                "cut at {cut}"
            );
        }
        // A start of the path at the end of the output is output.
        assert_eq!(
            renamed(&[(Stream::Stdout, b"see /dev/shm/s")]),
            "see /dev/shm/s"
        );
        // Each stream keeps its own carry.
        assert_eq!(
            renamed(&[
                (Stream::Stderr, b"/dev/shm/s-1/comm"),
                (Stream::Stdout, b"out\n"),
                (Stream::Stderr, b"and.sh: line 1: x\n"),
            ]),
            "out\nbash: line 1: x"
        );
    }
}
