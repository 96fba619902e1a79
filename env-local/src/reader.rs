//! Reading a command's output: both pipes, concurrently, in arrival order,
//! as raw bytes into core's [`OutputCapture`] (which cleans them, keeps the
//! bounded windows, streams every line to the log file and feeds the live
//! sink).
//!
//! Both pipes are read at once because a command blocked writing a full
//! stderr pipe while we wait on stdout would deadlock us both.

use bashtool_core::{OutputBuffer, OutputCapture, Stream};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio_util::sync::CancellationToken;

/// Reads between two yields to the other half of the call.
const READS_PER_YIELD: u32 = 16;
/// Bytes read at a time.
const READ_SIZE: usize = 256 * 1024;
/// Most bytes taken from each pipe after being told to stop: what is already
/// there, but not forever from a writer that never pauses.
const MAX_FINAL_DRAIN: usize = 4 * 1024 * 1024;

struct Source {
    stream: Stream,
    pipe: Option<pipe::Receiver>,
    buffer: Vec<u8>,
    /// The pipe was made bigger (see [`grow_if_full`]).
    grown: bool,
}

/// Reads a command's stdout and stderr into an [`OutputCapture`].
pub struct OutputPump {
    sources: [Source; 2],
    output: OutputCapture,
}

impl std::fmt::Debug for OutputPump {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OutputPump")
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

impl OutputPump {
    pub fn new(
        stdout: Option<pipe::Receiver>,
        stderr: Option<pipe::Receiver>,
        output: OutputCapture,
    ) -> Self {
        let source = |stream, pipe: Option<pipe::Receiver>| Source {
            stream,
            // Capacity, not zeroed length: reads fill the spare capacity
            // (`read_buf`), so a call of `true` does not pay for zeroing
            // (and faulting in) two buffers it never uses.
            buffer: if pipe.is_some() {
                spare_buffers::take()
            } else {
                Vec::new()
            },
            pipe,
            grown: false,
        };
        Self {
            sources: [
                source(Stream::Stdout, stdout),
                source(Stream::Stderr, stderr),
            ],
            output,
        }
    }

    /// True when both pipes reached end of file.
    pub fn is_done(&self) -> bool {
        self.sources.iter().all(|source| source.pipe.is_none())
    }

    /// Reads until both pipes are at end of file, or until `stop`; then
    /// takes what is already waiting in the pipes and closes them.
    /// Cancel-safe: dropping it loses no data that was read.
    pub async fn run(&mut self, stop: &CancellationToken) {
        let mut reads_since_yield = 0_u32;
        while !self.is_done() {
            // A command that writes without pause keeps both pipes ready:
            // without a yield now and then, the task that waits for the
            // timeout or the cancel beside this loop would not run, and a
            // cancel would wait for the flood to end.
            reads_since_yield += 1;
            if reads_since_yield >= READS_PER_YIELD {
                reads_since_yield = 0;
                tokio::task::yield_now().await;
            }
            let [stdout, stderr] = &mut self.sources;
            let (index, result) = tokio::select! {
                biased;
                () = stop.cancelled() => break,
                result = read(stdout), if stdout.pipe.is_some() => (0, result),
                result = read(stderr), if stderr.pipe.is_some() => (1, result),
            };
            match result {
                Ok(0) | Err(_) => self.close(index),
                Ok(length) => {
                    grow_if_full(&mut self.sources[index], length);
                    self.deliver(index, length);
                }
            }
        }
        self.drain();
    }

    /// Takes what the pipes hold right now without waiting, then closes them
    /// (a leftover writer then gets EPIPE instead of blocking us).
    fn drain(&mut self) {
        for index in 0..2 {
            let mut taken = 0;
            while taken < MAX_FINAL_DRAIN {
                let source = &mut self.sources[index];
                let Some(pipe) = &source.pipe else { break };
                source.buffer.clear();
                match pipe.try_read_buf(&mut source.buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(length) => {
                        taken += length;
                        self.deliver(index, length);
                    }
                }
            }
            self.close(index);
        }
    }

    fn deliver(&mut self, index: usize, length: usize) {
        let source = &self.sources[index];
        self.output.push(source.stream, &source.buffer[..length]);
    }

    fn close(&mut self, index: usize) {
        let source = &mut self.sources[index];
        if source.pipe.take().is_none() {
            return;
        }
        // A character cut off by the end of the stream becomes U+FFFD.
        self.output.end_stream(source.stream);
        spare_buffers::give_back(std::mem::take(&mut source.buffer));
    }

    /// Ends reading and returns the finished buffer.
    pub fn finish(mut self) -> OutputBuffer {
        self.close(0);
        self.close(1);
        self.output.finish()
    }
}

/// Read buffers kept between calls. Allocating and freeing 2 × 256 KiB on
/// every call made glibc consolidate its small-chunk bins each time, which
/// showed as the largest cost of a call of `true` after the spawn itself.
mod spare_buffers {
    use std::sync::{Mutex, PoisonError};

    use super::READ_SIZE;

    /// Two calls' worth of buffers; more are freed.
    const MAX_SPARE: usize = 4;

    static SPARE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

    pub(super) fn take() -> Vec<u8> {
        SPARE
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(READ_SIZE))
    }

    pub(super) fn give_back(mut buffer: Vec<u8>) {
        if buffer.capacity() != READ_SIZE {
            return;
        }
        buffer.clear();
        let mut spare = SPARE.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.len() < MAX_SPARE {
            spare.push(buffer);
        }
    }
}

/// A read that emptied a full pipe (64 KiB, Linux's default) means a
/// chatty command that was kept waiting: its pipe grows to
/// [`GROWN_PIPE_SIZE`], for fewer wakeups on both sides. Only then: the
/// resize costs two system calls and a kernel allocation, a tenth of a
/// call of `true` that prints nothing.
fn grow_if_full(source: &mut Source, length: usize) {
    if source.grown || length < DEFAULT_PIPE_SIZE {
        return;
    }
    source.grown = true;
    if let Some(pipe) = &source.pipe {
        // Failure is fine: the pipe stays as it is.
        let _ = rustix::pipe::fcntl_setpipe_size(pipe, GROWN_PIPE_SIZE as usize);
    }
}

/// Linux's default pipe capacity.
const DEFAULT_PIPE_SIZE: usize = 64 * 1024;

/// Size asked for a pipe that filled up.
const GROWN_PIPE_SIZE: libc::c_int = 1024 * 1024;

async fn read(source: &mut Source) -> std::io::Result<usize> {
    match &mut source.pipe {
        Some(pipe) => {
            source.buffer.clear();
            pipe.read_buf(&mut source.buffer).await
        }
        None => std::future::pending().await,
    }
}
