//! One interactive job: a command in its own terminal, the task that reads
//! what it prints, and the calls that wait for it and type into it.
//!
//! A call returns at the first of: the command exited; it waits for input
//! (the kernel shows its foreground group blocked reading the terminal, see
//! [`super::detect`]); the caller's yield time. The job's own timeout stops
//! the whole tree whatever the calls do.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bashtool_core::ExecError;
use bashtool_process::Registered;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::detect::{Detector, Probe};
use super::driver::{Driver, Shared, Terminal, drive, write_all};
use super::keys::Key;
use super::options::InteractiveOptions;
use super::screen::ScreenTracker;
use super::state::{Detection, JobExit, JobState, Snapshot};
use super::transcript::{LogSink, TextRead, TextWindow};
use crate::error::Error;
use bashtool_process::RootProcess;
use bashtool_process::{Launch, Wrapper};
use bashtool_process::{ProcessTree, RunMarker};
use bashtool_process::{Pty, TerminalModes, TerminalSize};

/// After this much silence without a read, a job is probed less often:
/// a probe scans `/proc` (about a millisecond per hundred processes), and a
/// long silent computation need not cost a few percent of a core.
const SLOWER_PROBES_AFTER: Duration = Duration::from_secs(1);
/// How much less often (the answer still comes within about 0.2 s).
const SLOWER_PROBE_FACTOR: u32 = 3;
/// Pause before a positive probe is confirmed: output still in the kernel's
/// buffers reaches us, and input just typed wakes its reader.
const CONFIRM_DELAY: Duration = Duration::from_millis(10);

/// The longest line the kernel takes in line mode (`N_TTY_BUF_SIZE` - 1).
const MAX_LINE: usize = 4095;

/// What exists while the job has not been released: fds and the task.
#[derive(Debug)]
struct Live {
    master: Arc<Registered<Pty>>,
    child: Arc<RootProcess>,
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
    /// Starts `launch` in a new terminal through the one launch path (the
    /// wrappers applied; under a sandbox, the terminal is the sandbox's
    /// own). `marker` must be in `launch.env` (see
    /// [`super::interactive_launch`]): it finds the processes that leave
    /// the session, to stop them too.
    pub fn start(
        launch: Launch,
        wrappers: &[Arc<dyn Wrapper>],
        marker: RunMarker,
        options: InteractiveOptions,
    ) -> Result<Self, ExecError> {
        Self::start_in(launch, wrappers, marker, options, None)
    }

    /// [`Self::start`] in `cgroup` (the job's limits): stopped with the
    /// tree, released when the job ends.
    pub(crate) fn start_in(
        launch: Launch,
        wrappers: &[Arc<dyn Wrapper>],
        marker: RunMarker,
        options: InteractiveOptions,
        cgroup: Option<crate::limits::CallCgroup>,
    ) -> Result<Self, ExecError> {
        let limited = cgroup.as_ref().map(|cgroup| cgroup.wrappers(wrappers));
        let wrappers = limited.as_deref().unwrap_or(wrappers);
        let program = launch
            .argv
            .first()
            .map(|program| program.to_string_lossy().into_owned())
            .unwrap_or_default();
        let io_error = |source: std::io::Error| ExecError::Spawn {
            program: program.clone(),
            source,
        };
        let size = options.size.clamped();
        let (pty, root) = bashtool_process::launch_on_terminal(launch, wrappers, size, &marker)
            .map_err(crate::error::exec_error)?;
        let pid = root.pid();
        let detector = Detector::new(pty.device);
        let child = Arc::new(root);
        let tree =
            ProcessTree::new(pid, Some(marker)).with_adopter(crate::realm::adopter(wrappers));
        let registered = bashtool_process::register(
            pty,
            tokio::io::Interest::READABLE | tokio::io::Interest::WRITABLE,
        );
        let master = match registered {
            Ok(master) => Arc::new(master),
            Err(error) => {
                tree.kill_now(true);
                return Err(io_error(error));
            }
        };
        let (changes, receiver) = watch::channel(0);
        let shared = Arc::new(Shared {
            terminal: Mutex::new(Terminal {
                window: TextWindow::new(options.text_capacity, options.redactor),
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
            cgroup,
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

    /// Where the job stands now, without waiting for a change and without
    /// taking text from the next snapshot (for listings).
    pub async fn state(&self) -> JobState {
        if let Some(exit) = self.exit() {
            return JobState::Exited(exit);
        }
        let quiet_since = self.shared.lock().last_output.max(self.last_input);
        let quiet_for = Instant::now().saturating_duration_since(quiet_since);
        if self.awaiting_input(quiet_for).await.is_some() {
            JobState::AwaitingInput
        } else {
            JobState::Running
        }
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
        let modes: TerminalModes = live.master.get_ref().modes();
        if modes.canonical {
            // In line mode the kernel silently drops what goes beyond its
            // line buffer: refuse rather than send a cut line.
            let longest = text.split(['\n', '\r']).map(str::len).max().unwrap_or(0);
            if longest > MAX_LINE {
                return Err(Error::LineTooLong {
                    length: longest,
                    limit: MAX_LINE,
                });
            }
        }
        if modes.hides_input() && !text.is_empty() {
            self.input_hidden = true;
        }
        let written = write_all(&live.master, &bytes, deadline).await;
        self.last_input = Instant::now();
        written
    }

    /// Changes the terminal's size; full-screen programs redraw.
    pub fn resize(&mut self, size: TerminalSize) -> Result<(), Error> {
        let size = size.clamped();
        if let Some(live) = &self.live {
            live.master
                .get_ref()
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

    /// How many secrets were masked in its output so far.
    pub fn masked(&self) -> u64 {
        self.shared.lock().window.masked()
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
        let pty = &live.master.get_ref();
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
            .is_some_and(|live| live.master.get_ref().modes().hides_input());
        let mut terminal = self.shared.lock();
        if state == JobState::AwaitingInput {
            let terminal = &mut *terminal;
            terminal.window.settle(terminal.log.as_mut());
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>(_: &T) {}

    /// Compiles only if the calls' futures can move between threads (the
    /// jobs port runs them in spawned tasks and behind `async_trait`).
    #[allow(dead_code)]
    fn futures_are_send(job: &mut InteractiveJob) {
        assert_send(&job.wait_until(Instant::now()));
        assert_send(&job.write("", &[], Instant::now()));
        assert_send(&job.stop());
        assert_send(&job.state());
    }

    #[test]
    fn the_job_can_be_shared_between_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<InteractiveJob>();
    }
}
