//! One interactive job: a command in its own terminal, the task that reads
//! what it prints, and the calls that wait for it and type into it.
//!
//! A call returns at the first of: the command exited; it waits for input
//! (the kernel shows its foreground group blocked reading the terminal, see
//! [`super::detect`]); the caller's yield time. The job's own timeout stops
//! the whole tree whatever the calls do.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bashtool_core::ExecError;
use tokio::io::unix::AsyncFd;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::child::ChildProcess;
use super::detect::{Detector, Probe};
use super::keys::Key;
use super::pty::{Pty, TerminalModes, TerminalSize, spawn_on};
use super::screen::ScreenTracker;
use super::transcript::{DEFAULT_TEXT_CAPACITY, LogSink, TextRead, TextWindow};
use crate::config::{DEFAULT_KILL_GRACE, DEFAULT_MAX_LOG_BYTES};
use crate::error::Error;
use crate::kill::{ProcessTree, RunMarker};
use crate::spawn::ExitStatus;
use crate::wrap::{Launch, SpawnWrapper};

/// Default time a call waits before returning a still running job.
pub const DEFAULT_YIELD: Duration = Duration::from_secs(10);
/// How often the processes are probed while the job prints nothing.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(50);
/// After this much silence without a read, a job is probed less often:
/// a probe scans `/proc` (about a millisecond per hundred processes), and a
/// long silent computation need not cost a few percent of a core.
const SLOWER_PROBES_AFTER: Duration = Duration::from_secs(1);
/// How much less often (the answer still comes within about 0.2 s).
const SLOWER_PROBE_FACTOR: u32 = 3;
/// Silence after which a job counts as waiting when the kernel cannot be
/// asked (see [`Detection::SilenceTimer`]).
pub const DEFAULT_SILENCE_FALLBACK: Duration = Duration::from_secs(2);
/// Pause before a positive probe is confirmed: output still in the kernel's
/// buffers reaches us, and input just typed wakes its reader.
const CONFIRM_DELAY: Duration = Duration::from_millis(10);
/// After the tree ended, how long the terminal is read for the last bytes.
const FINAL_DRAIN: Duration = Duration::from_millis(20);
/// Bytes read from the terminal at once.
const READ_CHUNK: usize = 64 * 1024;
/// Reads per wakeup before other tasks get a turn (a flooding program).
const READS_PER_TURN: usize = 16;

/// How an interactive job is run.
#[derive(Debug)]
pub struct InteractiveOptions {
    /// The terminal's size. Default 120×40.
    pub size: TerminalSize,
    /// The job's whole life; then the tree is stopped. `None`: no limit.
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when the tree is stopped.
    pub kill_grace: Duration,
    /// Where the cleaned output goes, whole (the caller created it private).
    pub log_file: Option<std::fs::File>,
    /// Most bytes written to `log_file`.
    pub max_log_bytes: u64,
    /// Bytes of cleaned output kept in memory for reads by cursor.
    pub text_capacity: usize,
    /// How often the processes are probed while nothing is printed.
    pub probe_interval: Duration,
    /// Silence that counts as waiting when the kernel cannot be asked.
    pub silence_fallback: Duration,
}

impl Default for InteractiveOptions {
    fn default() -> Self {
        Self {
            size: TerminalSize::default(),
            timeout: None,
            kill_grace: DEFAULT_KILL_GRACE,
            log_file: None,
            max_log_bytes: DEFAULT_MAX_LOG_BYTES,
            text_capacity: DEFAULT_TEXT_CAPACITY,
            probe_interval: PROBE_INTERVAL,
            silence_fallback: DEFAULT_SILENCE_FALLBACK,
        }
    }
}

/// Where a job stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Working (or blocked on something other than the terminal).
    Running,
    /// Its foreground processes wait for typed input.
    AwaitingInput,
    /// Ended; terminal state.
    Exited(JobExit),
}

impl JobState {
    /// `running`, `awaiting_input` or `exited`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::AwaitingInput => "awaiting_input",
            Self::Exited(_) => "exited",
        }
    }
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobExit {
    /// The exit code of the command's root process, if it exited.
    pub code: Option<i32>,
    /// The signal that ended it (`SIGKILL`), if one did.
    pub signal: Option<String>,
    /// The job's timeout stopped it.
    pub timed_out: bool,
    /// [`InteractiveJob::stop`] stopped it.
    pub stopped: bool,
    /// Processes besides the root that were still running at the end and
    /// were stopped.
    pub leftovers: usize,
}

/// How [`JobState::AwaitingInput`] was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detection {
    /// The kernel showed the foreground processes blocked reading the
    /// terminal.
    Kernel,
    /// The kernel would not tell (no ptrace access to the processes):
    /// the job printed nothing for the silence time, which is a guess.
    SilenceTimer,
}

/// What a call sees of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub state: JobState,
    /// The text printed since the previous snapshot (cleaned, lines
    /// collapsed), as a line-oriented program shows it.
    pub text: String,
    /// Stream offset after `text`, for [`InteractiveJob::read`].
    pub cursor: u64,
    /// Bytes of text printed since the previous snapshot that no longer fit
    /// in memory (they are in the log file).
    pub dropped: u64,
    /// The rendered screen, when the program draws a full screen (alternate
    /// screen or cursor addressing): then it, not `text`, is what a person
    /// sees.
    pub screen: Option<String>,
    /// The terminal hides typed text now (echo off in line mode: a password
    /// prompt).
    pub echo_off: bool,
    /// Input sent just before this snapshot went in with echo off: it was
    /// neither shown nor logged.
    pub input_hidden: bool,
    /// How `AwaitingInput` was decided (`None` in other states).
    pub detection: Option<Detection>,
}

/// What the reader task and the calls share.
#[derive(Debug)]
struct Terminal {
    window: TextWindow,
    screen: ScreenTracker,
    log: Option<LogSink>,
    /// When output last arrived (or the job started).
    last_output: Instant,
    /// Bytes read from the terminal so far.
    output_bytes: u64,
    exit: Option<JobExit>,
}

#[derive(Debug)]
struct Shared {
    terminal: Mutex<Terminal>,
    /// Bumped on every output and on the end.
    changes: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Terminal> {
        self.terminal.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        self.changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }
}

/// The terminal's master side, registered with tokio (the slave rides
/// along for its ioctls).
#[derive(Debug)]
struct Master(Pty);

impl AsRawFd for Master {
    fn as_raw_fd(&self) -> RawFd {
        self.0.master.as_raw_fd()
    }
}

impl AsFd for Master {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.master.as_fd()
    }
}

/// What exists while the job has not been released: fds and the task.
#[derive(Debug)]
struct Live {
    master: Arc<AsyncFd<Master>>,
    child: Arc<ChildProcess>,
    tree: ProcessTree,
    stop: CancellationToken,
    driver: JoinHandle<()>,
}

/// A command running in its own pseudo-terminal.
///
/// Needs a tokio runtime (with the IO and time drivers). Dropping the job
/// kills its whole tree at once (SIGKILL); [`InteractiveJob::stop`] stops it
/// gracefully and releases every fd. Not cancel-safe in one respect: a
/// [`InteractiveJob::write`] dropped halfway may have sent part of the input.
#[derive(Debug)]
pub struct InteractiveJob {
    shared: Arc<Shared>,
    changes: watch::Receiver<u64>,
    live: Option<Live>,
    detector: Detector,
    pid: u32,
    /// Where the next snapshot's text starts.
    cursor: u64,
    /// The last write went in with echo off (reported once).
    input_hidden: bool,
    /// When input was last sent.
    last_input: Instant,
    probe_interval: Duration,
    silence_fallback: Duration,
    size: TerminalSize,
}

impl InteractiveJob {
    /// Starts `launch` (already rewritten by [`crate::apply_wrappers`]) in
    /// a new terminal; runs each wrapper's step in the child. `marker` must
    /// be in `launch.env` (see [`super::interactive_launch`]): it finds the
    /// processes that leave the session, to stop them too.
    pub fn start(
        launch: &Launch,
        wrappers: &[Arc<dyn SpawnWrapper>],
        marker: RunMarker,
        options: InteractiveOptions,
    ) -> Result<Self, ExecError> {
        let program = launch
            .argv
            .first()
            .map(|program| program.to_string_lossy().into_owned())
            .unwrap_or_default();
        let io_error = |source: std::io::Error| ExecError::Spawn {
            program: program.clone(),
            source,
        };
        let size = options.size.at_least_one();
        let pty = Pty::open(size).map_err(io_error)?;
        let detector = Detector::new(pty.device);
        let pid = spawn_on(&pty, launch, wrappers)?;
        let child = Arc::new(ChildProcess::new(pid));
        let tree = ProcessTree::new(pid, Some(marker));
        // SAFETY: the `Pty` (and its master fd) moves into the `AsyncFd`,
        // which keeps it open and unchanged until it is dropped.
        #[allow(unsafe_code)]
        let registered = unsafe {
            AsyncFd::register_with_interest(
                Master(pty),
                tokio::io::Interest::READABLE | tokio::io::Interest::WRITABLE,
            )
        };
        let master = match registered {
            Ok(master) => Arc::new(master),
            Err(error) => {
                tree.kill_now(true);
                return Err(io_error(error.into_parts().1));
            }
        };
        let (changes, receiver) = watch::channel(0);
        let shared = Arc::new(Shared {
            terminal: Mutex::new(Terminal {
                window: TextWindow::new(options.text_capacity),
                screen: ScreenTracker::new(size),
                log: options
                    .log_file
                    .map(|file| LogSink::new(file, options.max_log_bytes)),
                last_output: Instant::now(),
                output_bytes: 0,
                exit: None,
            }),
            changes,
        });
        let stop = CancellationToken::new();
        let driver = tokio::spawn(drive(Driver {
            shared: Arc::clone(&shared),
            master: Arc::clone(&master),
            child: Arc::clone(&child),
            tree: tree.clone(),
            deadline: options.timeout.map(|timeout| Instant::now() + timeout),
            stop: stop.clone(),
            grace: options.kill_grace,
        }));
        Ok(Self {
            shared,
            changes: receiver,
            live: Some(Live {
                master,
                child,
                tree,
                stop,
                driver,
            }),
            detector,
            pid,
            cursor: 0,
            input_hidden: false,
            last_input: Instant::now(),
            probe_interval: options.probe_interval.max(Duration::from_millis(1)),
            silence_fallback: options.silence_fallback,
            size,
        })
    }

    /// The pid of the command's root process (its session leader).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The terminal's size.
    pub fn size(&self) -> TerminalSize {
        self.size
    }

    /// The exit, once the job has ended.
    pub fn exit(&self) -> Option<JobExit> {
        self.shared.lock().exit.clone()
    }

    /// Waits until the job exits, waits for input, or `yield_at`, and
    /// returns what changed since the previous snapshot.
    pub async fn wait_until(&mut self, yield_at: Instant) -> Snapshot {
        loop {
            self.changes.borrow_and_update();
            if let Some(exit) = self.exit() {
                self.release().await;
                return self.snapshot(JobState::Exited(exit), None);
            }
            let now = Instant::now();
            // Quiet since the last output or input, whichever came last.
            let last_output = self.shared.lock().last_output.max(self.last_input);
            let quiet_for = now.saturating_duration_since(last_output);
            if quiet_for >= self.probe_interval
                && let Some(detection) = self.awaiting_input(quiet_for).await
            {
                return self.snapshot(JobState::AwaitingInput, Some(detection));
            }
            let now = Instant::now();
            if now >= yield_at {
                return self.snapshot(JobState::Running, None);
            }
            let next_probe = if quiet_for >= SLOWER_PROBES_AFTER {
                now + self.probe_interval * SLOWER_PROBE_FACTOR
            } else if quiet_for >= self.probe_interval {
                now + self.probe_interval
            } else {
                last_output + self.probe_interval
            };
            tokio::select! {
                _ = self.changes.changed() => {}
                () = tokio::time::sleep_until(next_probe.min(yield_at)) => {}
            }
        }
    }

    /// Sends `text`, then each key in order, then waits as
    /// [`InteractiveJob::wait_until`] does.
    pub async fn write(
        &mut self,
        text: &str,
        keys: &[Key],
        yield_at: Instant,
    ) -> Result<Snapshot, Error> {
        self.send(text, keys, yield_at).await?;
        Ok(self.wait_until(yield_at).await)
    }

    /// Sends `text`, then each key in order, without waiting for an answer.
    /// When the terminal hides typed text (echo off in line mode), the
    /// next snapshot says so; typed text is never logged either way.
    pub async fn send(&mut self, text: &str, keys: &[Key], deadline: Instant) -> Result<(), Error> {
        let Some(live) = self.live.as_ref().filter(|_| self.exit().is_none()) else {
            let state = self
                .exit()
                .map_or_else(|| "stopped".to_owned(), |exit| describe_exit(&exit));
            return Err(Error::InputClosed { state });
        };
        let application_cursor = self.shared.lock().screen.application_cursor();
        let mut bytes = text.as_bytes().to_vec();
        for key in keys {
            bytes.extend_from_slice(key.bytes(application_cursor));
        }
        let modes: TerminalModes = live.master.get_ref().0.modes();
        if modes.hides_input() && !text.is_empty() {
            self.input_hidden = true;
        }
        let written = write_all(&live.master, &bytes, deadline).await;
        self.last_input = Instant::now();
        written
    }

    /// Changes the terminal's size; full-screen programs redraw.
    pub fn resize(&mut self, size: TerminalSize) -> Result<(), Error> {
        let size = size.at_least_one();
        if let Some(live) = &self.live {
            live.master
                .get_ref()
                .0
                .resize(size)
                .map_err(|source| Error::Terminal { source })?;
        }
        self.shared.lock().screen.resize(size);
        self.size = size;
        Ok(())
    }

    /// The text from `cursor` on (at most about `max_bytes`), for reads by
    /// cursor that never skip data; independent of the snapshots' cursor.
    pub fn read(&self, cursor: u64, max_bytes: usize) -> TextRead {
        self.shared.lock().window.read(cursor, max_bytes)
    }

    /// The screen as a person would see it now.
    pub fn screen(&self) -> String {
        self.shared.lock().screen.render()
    }

    /// Stops the whole tree (SIGTERM, SIGKILL after the grace), closes the
    /// terminal, and returns the last snapshot. Idempotent.
    pub async fn stop(&mut self) -> Snapshot {
        if let Some(live) = &self.live {
            live.stop.cancel();
        }
        self.release().await;
        let state = self.exit().map_or(JobState::Running, JobState::Exited);
        self.snapshot(state, None)
    }

    /// Waits for the driver to finish and closes every fd.
    async fn release(&mut self) {
        if let Some(live) = self.live.take() {
            let _ = live.driver.await;
        }
    }

    /// Decides whether the job waits for input now (see the module docs of
    /// [`super::detect`] for the kernel side). Input typed but not read
    /// yet, or output not read yet, means it is not waiting yet.
    async fn awaiting_input(&self, quiet_for: Duration) -> Option<Detection> {
        let live = self.live.as_ref()?;
        let pty = &live.master.get_ref().0;
        let output_before = self.shared.lock().output_bytes;
        let probe = |pty: &Pty| {
            if pty.unread_input() > 0 {
                return Probe::NotReading;
            }
            pty.foreground_group()
                .map_or(Probe::NotReading, |group| self.detector.probe(group))
        };
        match probe(pty) {
            Probe::ReadingTerminal => {}
            Probe::NotReading => return None,
            Probe::Unknown => {
                return (quiet_for >= self.silence_fallback).then_some(Detection::SilenceTimer);
            }
        }
        tokio::time::sleep(CONFIRM_DELAY).await;
        if probe(pty) != Probe::ReadingTerminal {
            return None;
        }
        let terminal = self.shared.lock();
        let settled = terminal.output_bytes == output_before && pty.unread_output() == 0;
        settled.then_some(Detection::Kernel)
    }

    fn snapshot(&mut self, state: JobState, detection: Option<Detection>) -> Snapshot {
        let echo_off = self
            .live
            .as_ref()
            .is_some_and(|live| live.master.get_ref().0.modes().hides_input());
        let mut terminal = self.shared.lock();
        let read = terminal.window.read(self.cursor, usize::MAX);
        let screen = terminal.screen.take_view();
        drop(terminal);
        self.cursor = read.next;
        Snapshot {
            state,
            text: read.text,
            cursor: read.next,
            dropped: read.dropped,
            screen,
            echo_off,
            input_hidden: std::mem::take(&mut self.input_hidden),
            detection,
        }
    }
}

impl Drop for InteractiveJob {
    /// Kills the whole tree at once (no grace: drop cannot wait) and lets
    /// the reader task end; the root is reaped when it is gone.
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            live.stop.cancel();
            live.driver.abort();
            live.child.while_unreaped(|| live.tree.kill_now(true));
        }
    }
}

fn describe_exit(exit: &JobExit) -> String {
    match (&exit.signal, exit.code) {
        (Some(signal), _) => format!("terminated by {signal}"),
        (None, Some(code)) => format!("exit code {code}"),
        (None, None) => "ended".to_owned(),
    }
}

async fn write_all(master: &AsyncFd<Master>, bytes: &[u8], deadline: Instant) -> Result<(), Error> {
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
struct Driver {
    shared: Arc<Shared>,
    master: Arc<AsyncFd<Master>>,
    child: Arc<ChildProcess>,
    tree: ProcessTree,
    deadline: Option<Instant>,
    stop: CancellationToken,
    grace: Duration,
}

async fn drive(driver: Driver) {
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
    drain(&driver, &mut buffer).await;
    let status = driver.child.reap();
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
    terminal.window.finish(terminal.log.as_mut());
    terminal.exit = Some(exit);
    drop(std::mem::take(&mut terminal.log));
    driver.shared.bump();
}

/// Reads what the terminal has now, under the lock (so a caller holding the
/// lock sees either none or all of a read). False once reading failed.
fn read_available(
    driver: &Driver,
    guard: &mut tokio::io::unix::AsyncFdReadyGuard<'_, Master>,
    buffer: &mut [u8],
) -> bool {
    for _ in 0..READS_PER_TURN {
        let mut terminal = driver.shared.lock();
        match guard.try_io(|inner| {
            nix::unistd::read(inner.get_ref().as_fd(), buffer).map_err(std::io::Error::from)
        }) {
            Ok(Ok(0)) => return false,
            Ok(Ok(count)) => {
                let terminal = &mut *terminal;
                let bytes = &buffer[..count];
                terminal.screen.feed(bytes);
                terminal.window.push(bytes, terminal.log.as_mut());
                terminal.last_output = Instant::now();
                terminal.output_bytes += count as u64;
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
