//! The task behind an interactive job: it reads the terminal as output
//! arrives (into the emulator, the text window and the log file), watches
//! the root process and the job's timeout, and at the end stops what is
//! left of the tree, reads the last bytes and reaps the root.

use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bashtool_process::Registered;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::screen::ScreenTracker;
use super::state::JobExit;
use super::transcript::{LogSink, TextWindow};
use crate::error::Error;
use bashtool_process::ExitStatus;
use bashtool_process::ProcessTree;
use bashtool_process::Pty;
use bashtool_process::RootProcess;

/// After the tree ended, how long the terminal is read for the last bytes.
const FINAL_DRAIN: Duration = Duration::from_millis(20);
/// Bytes read from the terminal at once.
const READ_CHUNK: usize = 64 * 1024;
/// Reads per wakeup before other tasks get a turn (a flooding program).
const READS_PER_TURN: usize = 16;

/// What the reader task and the calls share.
#[derive(Debug)]
pub(super) struct Terminal {
    pub window: TextWindow,
    pub screen: ScreenTracker,
    pub log: Option<LogSink>,
    /// When output last arrived (or the job started).
    pub last_output: Instant,
    /// Bytes read from the terminal so far.
    pub output_bytes: u64,
    pub exit: Option<JobExit>,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub terminal: Mutex<Terminal>,
    /// Bumped on every output and on the end.
    pub changes: watch::Sender<u64>,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, Terminal> {
        self.terminal.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn bump(&self) {
        self.changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }
}

pub(super) async fn write_all(
    master: &Registered<Pty>,
    bytes: &[u8],
    deadline: Instant,
) -> Result<(), Error> {
    let mut written = 0;
    while written < bytes.len() {
        let not_taken = Error::InputNotTaken {
            written,
            total: bytes.len(),
        };
        let Ok(guard) = tokio::time::timeout_at(deadline, master.writable()).await else {
            return Err(not_taken);
        };
        let mut guard = guard.map_err(|source| Error::Terminal { source })?;
        match guard.try_io(|inner| {
            nix::unistd::write(inner.get_ref(), &bytes[written..]).map_err(std::io::Error::from)
        }) {
            Ok(Ok(count)) => written += count,
            Ok(Err(source)) if source.kind() == std::io::ErrorKind::Interrupted => {}
            Ok(Err(source)) => return Err(Error::Terminal { source }),
            Err(_would_block) => {}
        }
    }
    Ok(())
}

/// Why the driver stopped reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Exited,
    TimedOut,
    Stopped,
}

/// The task that reads the terminal and watches the root and the timeout.
pub(super) struct Driver {
    pub shared: Arc<Shared>,
    pub master: Arc<Registered<Pty>>,
    pub child: Arc<RootProcess>,
    pub tree: ProcessTree,
    pub deadline: Option<Instant>,
    pub stop: CancellationToken,
    pub grace: Duration,
    /// The job's cgroup: what is left in it after the tree was stopped is
    /// killed, and it is released when the job ends.
    pub cgroup: Option<crate::limits::CallCgroup>,
}

pub(super) async fn drive(driver: Driver) {
    let mut buffer = vec![0_u8; READ_CHUNK];
    let mut readable = true;
    let timeout = async {
        match driver.deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(timeout);
    let end = loop {
        tokio::select! {
            biased;
            () = driver.stop.cancelled() => break End::Stopped,
            () = &mut timeout => break End::TimedOut,
            () = driver.child.exited() => break End::Exited,
            guard = driver.master.readable(), if readable => match guard {
                Ok(mut guard) => {
                    if !read_available(&driver, &mut guard, &mut buffer) {
                        readable = false;
                    }
                }
                Err(_) => readable = false,
            },
        }
    };
    // Whatever is left of the tree is stopped: on timeout and stop the
    // command itself, after a natural exit what it left behind (the kernel
    // already sent SIGHUP to the foreground group when the session leader
    // exited). The root is still unreaped, so its group id is still ours.
    let leftovers = driver.tree.terminate(driver.grace, true).await;
    if let Some(cgroup) = &driver.cgroup {
        cgroup.kill_rest();
    }
    drain(&driver, &mut buffer).await;
    let status = driver.child.reap();
    // A limit the job reached: said at the end of its transcript (what the
    // jobs tool and the first call show, and the log), as a background
    // job's output says it.
    let killed = status.signal_name().as_deref() == Some("SIGKILL");
    let limit_notes = driver
        .cgroup
        .as_ref()
        .map(|cgroup| cgroup.notes(killed))
        .unwrap_or_default();
    let exit = JobExit {
        code: match status {
            ExitStatus::Code(code) => Some(code),
            _ => None,
        },
        signal: status.signal_name(),
        timed_out: end == End::TimedOut,
        stopped: end == End::Stopped,
        leftovers,
    };
    let mut terminal = driver.shared.lock();
    let terminal = &mut *terminal;
    for note in limit_notes {
        terminal.window.push(
            format!("\r\n[{note}]\r\n").as_bytes(),
            terminal.log.as_mut(),
        );
    }
    terminal.window.finish(terminal.log.as_mut());
    terminal.exit = Some(exit);
    drop(std::mem::take(&mut terminal.log));
    driver.shared.bump();
}

/// Reads what the terminal has now, under the lock (so a caller holding the
/// lock sees either none or all of a read). False once reading failed.
fn read_available(
    driver: &Driver,
    guard: &mut tokio::io::unix::AsyncFdReadyGuard<'_, Pty>,
    buffer: &mut [u8],
) -> bool {
    let mut replies = Vec::new();
    for _ in 0..READS_PER_TURN {
        let mut terminal = driver.shared.lock();
        match guard.try_io(|inner| {
            nix::unistd::read(inner.get_ref().as_fd(), buffer).map_err(std::io::Error::from)
        }) {
            Ok(Ok(0)) => return false,
            Ok(Ok(count)) => {
                let terminal = &mut *terminal;
                let bytes = &buffer[..count];
                terminal.screen.feed(bytes, &mut replies);
                terminal.window.push(bytes, terminal.log.as_mut());
                terminal.last_output = Instant::now();
                terminal.output_bytes += count as u64;
                if !replies.is_empty() {
                    // A terminal's answer to a query: a few bytes into an
                    // input queue of 4 KiB. If it is full, the program has
                    // not read what was typed before, and a real terminal
                    // would lose the answer too.
                    let _ = nix::unistd::write(guard.get_ref().get_ref(), &replies);
                    replies.clear();
                }
            }
            Ok(Err(error)) if error.kind() == std::io::ErrorKind::Interrupted => {}
            // EIO: no slave is open any more (cannot happen while we hold
            // ours, but then there is nothing more to read).
            Ok(Err(_)) => return false,
            Err(_would_block) => break,
        }
        drop(terminal);
        driver.shared.bump();
    }
    true
}

/// Reads the last bytes after the tree has ended, until the terminal has
/// been quiet for [`FINAL_DRAIN`] (the kernel moves bytes from the slave to
/// the master asynchronously).
async fn drain(driver: &Driver, buffer: &mut [u8]) {
    loop {
        let Ok(Ok(mut guard)) = tokio::time::timeout(FINAL_DRAIN, driver.master.readable()).await
        else {
            return;
        };
        if !read_available(driver, &mut guard, buffer) {
            return;
        }
    }
}
