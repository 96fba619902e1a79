//! The only writer of stdout: protocol lines, in the order they were sent,
//! from a thread of its own, or, when nothing is queued and stdout has
//! room, by the sender itself: a call's answer then leaves without waking
//! the thread (one wake-up less per call, which on a busy machine is a
//! wait for a CPU).
//!
//! The queue is bounded so that a command printing faster than the link
//! carries is slowed down (its pipe fills and it blocks in `write`) instead
//! of the server's memory growing. A sender that finds the queue full
//! waits for room: on a multi-thread runtime in `block_in_place` (its other
//! tasks move to another thread meanwhile); on `serve`'s current-thread
//! runtime it holds the thread, so cancels, timers and signals wait until
//! the writer has written a line (a link that stalls completely holds
//! them until it moves again or closes; a closed one frees the sender at
//! once).

use std::io::{BufWriter, Write as _};
use std::os::fd::AsFd as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;

/// Lines queued before senders wait: with 64 KiB reads that is a few MiB.
const QUEUE_LINES: usize = 64;

/// The longest line a sender writes itself: one that fits the room a pipe
/// reports when it polls writable, so the write cannot block.
const DIRECT_LINE_MAX: usize = 4096;

/// A handle to stdout. Cheap to clone.
#[derive(Clone)]
pub struct Outbox {
    sender: SyncSender<String>,
    shared: Arc<Shared>,
    broken: CancellationToken,
}

/// What the senders and the writer thread share.
struct Shared {
    /// stdout: every write, the thread's and a sender's, holds this lock,
    /// so lines never interleave.
    output: Mutex<BufWriter<std::fs::File>>,
    /// Lines sent to the thread and not yet written: while there are any,
    /// a sender queues too, so that its line comes after them.
    queued: AtomicUsize,
}

impl Shared {
    fn output(&self) -> MutexGuard<'_, BufWriter<std::fs::File>> {
        self.output.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Outbox {
    /// Starts the writer thread on `output` (the protocol's stdout).
    pub fn start(output: std::fs::File) -> std::io::Result<Self> {
        let (sender, receiver) = sync_channel(QUEUE_LINES);
        let broken = CancellationToken::new();
        let shared = Arc::new(Shared {
            output: Mutex::new(BufWriter::with_capacity(256 * 1024, output)),
            queued: AtomicUsize::new(0),
        });
        let writer_broken = broken.clone();
        let writer_shared = shared.clone();
        std::thread::Builder::new()
            .name("serve-stdout".to_owned())
            .spawn(move || write_lines(&writer_shared, &receiver, &writer_broken))?;
        Ok(Self {
            sender,
            shared,
            broken,
        })
    }

    /// Fires when stdout is gone (the client closed it): time to stop.
    pub fn broken(&self) -> CancellationToken {
        self.broken.clone()
    }

    /// Sends one line (it ends with `\n`): written at once when nothing is
    /// queued and stdout has room, else queued for the thread. Waits while
    /// the queue is full.
    pub fn send(&self, line: String) {
        let Some(line) = self.write_directly(line) else {
            return;
        };
        self.shared.queued.fetch_add(1, Ordering::AcqRel);
        match self.sender.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Disconnected(_)) => {
                self.shared.queued.fetch_sub(1, Ordering::AcqRel);
            }
            Err(TrySendError::Full(line)) => {
                let multi_thread = tokio::runtime::Handle::try_current().is_ok_and(|handle| {
                    handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
                });
                let sent = if multi_thread {
                    tokio::task::block_in_place(|| self.sender.send(line))
                } else {
                    self.sender.send(line)
                };
                if sent.is_err() {
                    self.shared.queued.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
    }

    /// Writes `line` here if that cannot block and cannot overtake a
    /// queued line; gives it back otherwise.
    fn write_directly(&self, line: String) -> Option<String> {
        if line.len() > DIRECT_LINE_MAX
            || self.broken.is_cancelled()
            || self.shared.queued.load(Ordering::Acquire) != 0
        {
            return Some(line);
        }
        let Ok(mut output) = self.shared.output.try_lock() else {
            return Some(line);
        };
        // Checked again under the lock: the thread writes a line before it
        // counts it out, and holds the lock meanwhile.
        if self.shared.queued.load(Ordering::Acquire) != 0 || !has_room(output.get_ref()) {
            return Some(line);
        }
        if let Err(error) = output
            .write_all(line.as_bytes())
            .and_then(|()| output.flush())
        {
            tracing::info!(%error, "stdout closed");
            self.broken.cancel();
        }
        None
    }
}

/// Whether a write of up to [`DIRECT_LINE_MAX`] bytes to `file` returns at
/// once: it polls writable (a pipe then has a free page, a socket room in
/// its buffer).
fn has_room(file: &std::fs::File) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLOUT)];
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|ready| {
        ready == 1
            && fds[0]
                .revents()
                .is_some_and(|events| events == PollFlags::POLLOUT)
    })
}

fn write_lines(shared: &Shared, receiver: &Receiver<String>, broken: &CancellationToken) {
    let written = || -> std::io::Result<()> {
        while let Ok(line) = receiver.recv() {
            let mut stdout = shared.output();
            let result = stdout.write_all(line.as_bytes());
            shared.queued.fetch_sub(1, Ordering::AcqRel);
            result?;
            // Batch what is already queued, then flush once.
            loop {
                match receiver.try_recv() {
                    Ok(line) => {
                        let result = stdout.write_all(line.as_bytes());
                        shared.queued.fetch_sub(1, Ordering::AcqRel);
                        result?;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return stdout.flush(),
                }
            }
            stdout.flush()?;
        }
        Ok(())
    };
    if let Err(error) = written() {
        tracing::info!(%error, "stdout closed");
        broken.cancel();
        // Keep draining so that no sender waits forever on a dead client.
        while receiver.recv().is_ok() {
            shared.queued.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
