//! One output stream of one call: a FIFO we read, and the single place
//! where its bytes go to the call's output.

use std::os::fd::AsFd as _;
use std::path::{Path, PathBuf};

use bashtool_core::{OutputCapture, Stream};
use tokio::io::AsyncReadExt as _;
use tokio::net::unix::pipe;

/// Largest read from one output pipe.
const READ_BUFFER: usize = 64 * 1024;
/// Most reads when draining a pipe after the command ended: a leftover that
/// writes without pause must not keep the call from returning.
const MAX_DRAIN_READS: usize = 64;

/// A FIFO we read, and a write end we hold until the command ended, so
/// that EOF afterwards means no process of the command holds it any more.
/// A FIFO that reached EOF is reused by the next call (nobody else can
/// write to it); one still held by a leftover is dropped, and its path
/// removed, so that the leftover's output can never reach a later call.
pub(crate) struct CallPipe {
    path: PathBuf,
    receiver: pipe::Receiver,
    sender: Option<pipe::Sender>,
    stream: Stream,
    /// EOF was seen after the last command: free of other writers.
    clean: bool,
    /// The read buffer, kept with the pipe: zeroing fresh 64 KiB buffers
    /// on every call cost more than the call's own reads.
    buffer: Vec<u8>,
    /// No EOF yet during the call.
    open: bool,
}

impl Drop for CallPipe {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl CallPipe {
    fn create(path: PathBuf, stream: Stream) -> std::io::Result<Self> {
        let _ = std::fs::remove_file(&path);
        nix::unistd::mkfifo(
            &path,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )?;
        let receiver = pipe::OpenOptions::new().open_receiver(&path)?;
        let sender = pipe::OpenOptions::new().open_sender(&path)?;
        Ok(Self {
            path,
            receiver,
            sender: Some(sender),
            stream,
            clean: false,
            buffer: vec![0_u8; READ_BUFFER],
            open: true,
        })
    }

    /// This pipe again for the next call if it is clean, else a new one.
    pub(crate) fn reuse_or_create(
        spare: Option<Self>,
        path: impl FnOnce() -> PathBuf,
        stream: Stream,
    ) -> std::io::Result<Self> {
        if let Some(mut pipe) = spare
            && pipe.clean
        {
            // A new read end too: the old one saw the FIFO without writers
            // (EPOLLHUP), and tokio keeps that "read closed" readiness for
            // good, so every read would spin on EAGAIN until data came
            // (measured: hundreds of failed read(2) per call, most of the
            // call's CPU time). Opened before the write end, it never sees
            // a hang-up.
            pipe.receiver = pipe::OpenOptions::new().open_receiver(&pipe.path)?;
            pipe.sender = Some(pipe::OpenOptions::new().open_sender(&pipe.path)?);
            pipe.clean = false;
            pipe.open = true;
            return Ok(pipe);
        }
        Self::create(path(), stream)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Where the call's bytes go: raw, into core's capture (which cleans
    /// them, keeps the bounded windows and feeds the live sink).
    fn push(&self, bytes: &[u8], output: &OutputCapture) {
        output.push(self.stream, bytes);
    }

    /// Waits for the next bytes; `Some(count)` of them are in the pipe's
    /// buffer for [`CallPipe::push_read`], `None` at EOF (then it never
    /// resolves again, so it can sit in a `select!` with the call's other
    /// events). Cancel-safe: a read that did not complete consumed nothing.
    pub(crate) async fn read(&mut self) -> Option<usize> {
        if !self.open {
            return std::future::pending().await;
        }
        match self.receiver.read(&mut self.buffer).await {
            Ok(0) | Err(_) => {
                self.open = false;
                None
            }
            Ok(count) => Some(count),
        }
    }

    /// Pushes the `count` bytes [`CallPipe::read`] left in the buffer.
    pub(crate) fn push_read(&mut self, count: usize, output: &OutputCapture) {
        self.push(&self.buffer[..count], output);
    }

    /// Reads what is in the pipe without waiting. Returns true if some
    /// process still holds the write end (no EOF).
    pub(crate) fn drain(&mut self, output: &OutputCapture) -> bool {
        self.sender = None;
        let mut buffer = std::mem::take(&mut self.buffer);
        let held = self.drain_with(&mut buffer, output);
        self.buffer = buffer;
        held
    }

    fn drain_with(&mut self, buffer: &mut [u8], output: &OutputCapture) -> bool {
        for _ in 0..MAX_DRAIN_READS {
            // read(2) itself, not `try_read`: tokio answers WouldBlock from
            // its cached readiness without asking the kernel, which would
            // hide both the data and the EOF that are already there.
            match nix::unistd::read(self.receiver.as_fd(), buffer) {
                Ok(0) => {
                    self.clean = true;
                    return false;
                }
                Ok(count) => self.push(&buffer[..count], output),
                Err(nix::errno::Errno::EAGAIN) => return true,
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return false,
            }
        }
        true
    }

    pub(crate) fn finish(&self, output: &OutputCapture) {
        // A character cut off by the end of the output becomes U+FFFD.
        output.end_stream(self.stream);
    }
}
