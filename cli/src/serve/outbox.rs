//! The only writer of stdout: protocol lines, in the order they were sent,
//! from a thread of its own.
//!
//! The queue is bounded so that a command printing faster than the link
//! carries is slowed down (its pipe fills and it blocks in `write`) instead
//! of the server's memory growing. A sender that finds the queue full
//! blocks in `block_in_place`, so the runtime moves its other tasks
//! (cancels, signals) to another thread meanwhile.

use std::io::Write as _;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel};

use tokio_util::sync::CancellationToken;

/// Lines queued before senders wait: with 64 KiB reads that is a few MiB.
const QUEUE_LINES: usize = 64;

/// A handle to stdout. Cheap to clone.
#[derive(Clone)]
pub struct Outbox {
    sender: SyncSender<String>,
    broken: CancellationToken,
}

impl Outbox {
    /// Starts the writer thread on `output` (the protocol's stdout).
    pub fn start(output: std::fs::File) -> std::io::Result<Self> {
        let (sender, receiver) = sync_channel(QUEUE_LINES);
        let broken = CancellationToken::new();
        let writer_broken = broken.clone();
        std::thread::Builder::new()
            .name("serve-stdout".to_owned())
            .spawn(move || write_lines(output, &receiver, &writer_broken))?;
        Ok(Self { sender, broken })
    }

    /// Fires when stdout is gone (the client closed it): time to stop.
    pub fn broken(&self) -> CancellationToken {
        self.broken.clone()
    }

    /// Queues one line (it ends with `\n`). Waits while the queue is full.
    pub fn send(&self, line: String) {
        match self.sender.try_send(line) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(line)) => {
                let multi_thread = tokio::runtime::Handle::try_current().is_ok_and(|handle| {
                    handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
                });
                if multi_thread {
                    tokio::task::block_in_place(|| {
                        let _ = self.sender.send(line);
                    });
                } else {
                    let _ = self.sender.send(line);
                }
            }
        }
    }
}

fn write_lines(output: std::fs::File, receiver: &Receiver<String>, broken: &CancellationToken) {
    let mut stdout = std::io::BufWriter::with_capacity(256 * 1024, output);
    let mut written = || -> std::io::Result<()> {
        while let Ok(line) = receiver.recv() {
            stdout.write_all(line.as_bytes())?;
            // Batch what is already queued, then flush once.
            loop {
                match receiver.try_recv() {
                    Ok(line) => stdout.write_all(line.as_bytes())?,
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
        while receiver.recv().is_ok() {}
    }
}
