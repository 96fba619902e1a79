//! A spawner: a thread of ours that first applies per-task steps to itself
//! (namespaces joined, capabilities dropped, `no_new_privs`, a seccomp
//! filter), then starts processes on request. Every child it makes
//! inherits those steps from it for free, where a child made by any other
//! thread must take them itself between fork and exec: a seccomp filter
//! installed per child costs its own compilation, its verdict cache and
//! its freeing at exit (~70 µs of a `bash -c true` here, measured by
//! leaving steps out one at a time), a capability drop is a new set of
//! credentials, a `setns` a namespace switch.
//!
//! The thread blocks every signal but `SIGCHLD` (a signal sent to the
//! process is taken by another thread) and lives until the spawner is
//! dropped: a child's parent-death signal is tied to the thread that made
//! it. `SIGCHLD` stays unblocked because a child's exit signal goes to the
//! thread that made it: left at its default disposition, the kernel drops
//! it at once unless that thread blocks it; blocked, it is queued for the
//! process and wakes another of our threads, which then ignores it
//! (measured: the main thread woken once per command, 13 µs of CPU each).

use std::io;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// A job for the thread: run, then drop `done` (the caller waits for that).
type Job = Box<dyn FnOnce() + Send + 'static>;

/// A job and the sender whose drop tells its caller the job is over.
type Request = (Job, SyncSender<()>);

/// The spawner's thread and its queue.
#[derive(Debug)]
pub struct Spawner {
    /// `None` only while dropping: closing it ends the thread's loop.
    requests: Option<SyncSender<Request>>,
    thread: Option<JoinHandle<()>>,
    /// The processes the thread made that may still be alive: their
    /// parent-death signal fires when the thread ends.
    children: Mutex<Children>,
    /// Jobs handed to the thread and not yet over (a hint for choosing
    /// among spawners: see [`Spawner::is_busy`]).
    in_progress: std::sync::atomic::AtomicUsize,
}

/// Pids recorded per launch, pruned of the gone ones whenever the list has
/// doubled since the last pruning: a server's one spawner makes millions
/// of processes, and the list must not grow with them.
#[derive(Debug)]
struct Children {
    pids: Vec<libc::pid_t>,
    prune_at: usize,
}

/// Below this many pids the list is not pruned on a launch.
const PRUNE_FLOOR: usize = 64;

impl Children {
    fn record(&mut self, pid: libc::pid_t) {
        self.pids.push(pid);
        if self.pids.len() >= self.prune_at {
            self.prune();
            self.prune_at = (2 * self.pids.len()).max(PRUNE_FLOOR);
        }
    }

    /// Keeps the pids whose process still exists (a zombie counts: not
    /// reaped yet). A pid reused after the reaping counts too: that only
    /// keeps the thread longer.
    fn prune(&mut self) {
        self.pids.retain(|&pid| {
            // SAFETY: signal 0 only checks that the process exists.
            let exists = unsafe { libc::kill(pid, 0) } == 0;
            exists || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
        });
    }
}

/// Stack of the spawner's thread: the jobs only make a clone child (on a
/// stack of its own) and wait for it to exec.
const THREAD_STACK: usize = 256 * 1024;

impl Spawner {
    /// Starts the thread. Its setup (the steps it applies to itself) is
    /// its first job, run with [`Spawner::run`].
    pub fn start(name: &str) -> io::Result<Self> {
        let (requests, queue) = sync_channel::<Request>(0);
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .stack_size(THREAD_STACK)
            .spawn(move || {
                block_all_signals();
                serve(&queue);
            })?;
        Ok(Self {
            requests: Some(requests),
            thread: Some(thread),
            children: Mutex::new(Children {
                pids: Vec::new(),
                prune_at: PRUNE_FLOOR,
            }),
            in_progress: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Notes a process the thread made (see [`Spawner::has_live_children`]).
    pub fn record_child(&self, pid: libc::pid_t) {
        if let Ok(mut children) = self.children.lock() {
            children.record(pid);
        }
    }

    /// Whether a process the thread made still exists (a zombie counts).
    /// Until none does, ending the thread could kill one by its
    /// parent-death signal.
    pub fn has_live_children(&self) -> bool {
        let Ok(mut children) = self.children.lock() else {
            return true;
        };
        children.prune();
        !children.pids.is_empty()
    }

    /// False once the thread is gone (a job panicked): it makes nothing
    /// more, and whoever holds the spawner should make another.
    pub fn is_alive(&self) -> bool {
        self.thread
            .as_ref()
            .is_some_and(|thread| !thread.is_finished())
    }

    /// Whether a job is running or waiting on the thread now: a caller
    /// would wait for it (only a hint: it may change at once).
    pub fn is_busy(&self) -> bool {
        self.in_progress.load(std::sync::atomic::Ordering::Acquire) > 0
    }

    /// Runs `job` on the spawner's thread and returns its result; this
    /// thread waits meanwhile, so `job` may borrow from it.
    pub fn run<R: Send>(&self, job: impl FnOnce() -> R + Send) -> io::Result<R> {
        use std::sync::atomic::Ordering;
        self.in_progress.fetch_add(1, Ordering::AcqRel);
        let result = self.run_now(job);
        self.in_progress.fetch_sub(1, Ordering::AcqRel);
        result
    }

    fn run_now<R: Send>(&self, job: impl FnOnce() -> R + Send) -> io::Result<R> {
        let gone = || io::Error::other("the spawner thread is gone");
        let mut result: Option<R> = None;
        let slot = &mut result;
        let borrowed: Box<dyn FnOnce() + Send + '_> = Box::new(move || *slot = Some(job()));
        // SAFETY: only the lifetime is changed. The thread drops the job
        // (after running it, or while unwinding from it) before it drops
        // `done`, and we do not return before `done` is dropped (`recv`
        // fails then): nothing the job borrows is gone while it may run.
        let job: Job = unsafe { std::mem::transmute(borrowed) };
        let (done, finished) = sync_channel::<()>(0);
        let requests = self.requests.as_ref().ok_or_else(gone)?;
        if let Err(error) = requests.send((job, done)) {
            // Never reached the thread: dropped here, unrun.
            drop(error);
            return Err(gone());
        }
        let _ = finished.recv();
        result.ok_or_else(gone)
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        self.requests.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The thread's loop: one job at a time until the spawner is dropped.
fn serve(queue: &Receiver<Request>) {
    while let Ok((job, done)) = queue.recv() {
        job();
        drop(done);
    }
}

/// Blocks every signal but `SIGCHLD` in this thread (see the module's
/// documentation for why not that one).
fn block_all_signals() {
    // SAFETY: sigset operations on a local; the mask of this thread only.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        libc::sigdelset(&raw mut all, libc::SIGCHLD);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_on_the_set_up_thread_and_may_borrow() {
        let spawner = Spawner::start("test-spawner").expect("spawner");
        // A per-thread mark, set by one job, seen by the next.
        let named = spawner
            .run(|| {
                // SAFETY: prctl on the calling thread, a NUL-terminated name.
                unsafe { libc::prctl(libc::PR_SET_NAME, c"set-up".as_ptr(), 0, 0, 0) }
            })
            .expect("setup");
        assert_eq!(named, 0);
        let borrowed = [1, 2, 3];
        let (name, sum) = spawner
            .run(|| {
                let name = std::fs::read_to_string("/proc/thread-self/comm").expect("comm");
                (name, borrowed.iter().sum::<i32>())
            })
            .expect("run");
        assert_eq!(name.trim(), "set-up");
        assert_eq!(sum, 6);
        assert_ne!(
            std::fs::read_to_string("/proc/thread-self/comm")
                .expect("comm")
                .trim(),
            "set-up"
        );
    }

    /// The signals blocked in the calling thread, from its status line.
    fn blocked_signals() -> u64 {
        let status = std::fs::read_to_string("/proc/thread-self/status").expect("status");
        let line = status
            .lines()
            .find_map(|line| line.strip_prefix("SigBlk:"))
            .expect("SigBlk line");
        u64::from_str_radix(line.trim(), 16).expect("hex mask")
    }

    fn bit(signal: libc::c_int) -> u64 {
        1 << (signal - 1)
    }

    /// Blocked, a child's exit signal would be queued for the process and
    /// wake another thread; unblocked at its default disposition, the
    /// kernel drops it.
    #[test]
    fn the_thread_blocks_every_signal_but_sigchld() {
        let spawner = Spawner::start("test-spawner").expect("spawner");
        let blocked = spawner.run(blocked_signals).expect("run");
        assert_eq!(
            blocked & bit(libc::SIGCHLD),
            0,
            "SIGCHLD blocked: {blocked:x}"
        );
        for signal in [
            libc::SIGTERM,
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGPIPE,
            libc::SIGUSR1,
        ] {
            assert_ne!(
                blocked & bit(signal),
                0,
                "signal {signal} not blocked: {blocked:x}"
            );
        }
    }

    #[test]
    fn a_spawner_is_busy_while_a_job_runs_on_it() {
        let spawner = std::sync::Arc::new(Spawner::start("test-spawner").expect("spawner"));
        assert!(!spawner.is_busy());
        let (release, released) = std::sync::mpsc::channel::<()>();
        let running = {
            let spawner = std::sync::Arc::clone(&spawner);
            std::thread::spawn(move || spawner.run(move || released.recv()).expect("run"))
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !spawner.is_busy() {
            assert!(std::time::Instant::now() < deadline, "never busy");
            std::thread::yield_now();
        }
        release.send(()).expect("release");
        running.join().expect("job thread").expect("released");
        assert!(!spawner.is_busy());
    }

    #[test]
    fn children_count_as_live_until_they_are_reaped() {
        let spawner = Spawner::start("test-spawner").expect("spawner");
        assert!(!spawner.has_live_children());
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("sleep");
        spawner.record_child(child.id() as libc::pid_t);
        assert!(spawner.has_live_children());
        child.kill().expect("kill");
        // Dead but not reaped: still there.
        assert!(spawner.has_live_children());
        child.wait().expect("reap");
        assert!(!spawner.has_live_children());
    }

    #[test]
    fn the_record_of_children_does_not_grow_with_the_launches() {
        let spawner = Spawner::start("test-spawner").expect("spawner");
        let mut live = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("sleep");
        spawner.record_child(live.id() as libc::pid_t);
        // Pids no process has (above any pid_max): gone at once.
        for gone in 0..100_000 {
            spawner.record_child(libc::pid_t::MAX - gone);
        }
        let recorded = spawner.children.lock().expect("children").pids.len();
        assert!(recorded < 2 * PRUNE_FLOOR, "{recorded} pids kept");
        assert!(spawner.has_live_children(), "the live child was pruned");
        live.kill().expect("kill");
        live.wait().expect("reap");
        assert!(!spawner.has_live_children());
    }

    #[test]
    fn a_panicking_job_is_an_error_not_a_hang() {
        let spawner = Spawner::start("test-spawner").expect("spawner");
        assert!(spawner.is_alive());
        let result = spawner.run(|| -> i32 { panic!("job panics") });
        assert!(result.is_err());
        // The thread is gone with it: later jobs fail at once, and the
        // spawner says so once the thread has finished unwinding.
        assert!(spawner.run(|| 1).is_err());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while spawner.is_alive() {
            assert!(
                std::time::Instant::now() < deadline,
                "the thread never ended"
            );
            std::thread::yield_now();
        }
    }
}
