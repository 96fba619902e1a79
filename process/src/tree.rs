//! Finding and stopping every process a command started.
//!
//! Each command runs as the leader of a new session (`setsid`), so its pid is
//! also its process group and session id, and it has no controlling terminal
//! (nothing can prompt on `/dev/tty`). Killing the group reaches its
//! grandchildren, which a plain `kill(pid)` does not (they would also keep
//! the output pipe open forever). Processes that call `setsid` themselves
//! leave the session; they are found by a marker variable,
//! [`RunMarker`], that every descendant inherits in its environment, and by
//! their parent links. We do not use `PR_SET_CHILD_SUBREAPER`: it would
//! change the embedding process for good (every orphan of anything it runs
//! would become its zombie to reap), while the marker finds escapees
//! wherever they were re-parented.
//!
//! Pids are reused (`pid_max` is 32768 on many machines), so:
//! - the group is signalled with `killpg` only while the leader is not yet
//!   reaped (a zombie keeps its pid, and so the group id, reserved);
//! - other processes are signalled through a pidfd opened after checking
//!   that the pid still has the start time it had when we found it.
//!
//! Limits: a process that leaves the session *and* clears its environment
//! *and* is re-parented away from the tree is not found (only cgroups could
//! do that, and they are not available unprivileged).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::time::Instant;

/// Name of the variable that marks a command's processes.
pub const MARKER_VARIABLE: &str = "BASHTOOL_RUN_ID";

/// How often a stopping tree is checked for survivors.
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How long to wait for SIGKILL to take effect before giving up on a
/// process (one in uninterruptible sleep may take a while).
const KILL_WAIT: Duration = Duration::from_secs(5);

/// Bytes of a [`RunMarker::new`] value, `<pid>-<count>-<nanos>` in 10, 20
/// and 8 (hex) digits: fixed, so that a session's shell finds it at a fixed
/// offset of its request.
pub const MARKER_WIDTH: usize = 40;

/// A unique `BASHTOOL_RUN_ID=<id>` for one command. Put [`RunMarker::value`]
/// into the command's environment under [`MARKER_VARIABLE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunMarker {
    value: String,
    /// `\0BASHTOOL_RUN_ID=<id>\0`, searched for in `/proc/<pid>/environ`.
    needle: Vec<u8>,
}

impl RunMarker {
    /// A marker unique to this process and call.
    pub fn new() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // Our pid once: a system call per call otherwise, and we never fork
        // without exec.
        static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
        let count = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        let pid = *PID.get_or_init(std::process::id);
        let mut value = String::with_capacity(MARKER_WIDTH);
        crate::fixed_width::push_decimal(&mut value, pid.into(), 10);
        value.push('-');
        crate::fixed_width::push_decimal(&mut value, count, 20);
        value.push('-');
        crate::fixed_width::push_hex(&mut value, &nanos.to_be_bytes());
        debug_assert_eq!(value.len(), MARKER_WIDTH);
        Self::from_value(value)
    }

    /// The marker whose value is `value` (one read back from a record).
    pub fn from_value(value: String) -> Self {
        let needle = format!("\0{MARKER_VARIABLE}={value}\0").into_bytes();
        Self { value, needle }
    }

    /// The value the launched environment holds.
    pub fn value(&self) -> &str {
        &self.value
    }

    fn is_in(&self, environ: &[u8]) -> bool {
        // environ is NUL-separated; the first entry has no NUL before it.
        environ.starts_with(&self.needle[1..])
            || environ
                .windows(self.needle.len())
                .any(|window| window == self.needle.as_slice())
    }
}

impl Default for RunMarker {
    fn default() -> Self {
        Self::new()
    }
}

/// One process as `/proc/<pid>/stat` showed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its pid.
    pub pid: u32,
    /// Its parent's pid.
    pub parent: u32,
    /// Its process group.
    pub group: u32,
    /// Its session.
    pub session: u32,
    /// Start time in clock ticks since boot: with the pid, it identifies the
    /// process even after its pid is reused.
    pub start_time: u64,
    /// It has exited and waits to be reaped.
    pub zombie: bool,
}

/// Reads `/proc/<pid>/stat`. `None` when the process is gone.
pub fn process_info(pid: u32) -> Option<ProcessInfo> {
    use std::io::Read as _;
    // One open and one read into a stack buffer: this runs for every
    // process on the machine after every command, and `fs::read_to_string`
    // would add a stat and a second read per file.
    let mut file = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?;
    let mut buffer = [0_u8; 1024];
    let length = file.read(&mut buffer).ok()?;
    if length == buffer.len() {
        // A command name full of `)` and spaces: read it the slow way.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        return parse_stat(pid, &stat);
    }
    parse_stat(pid, std::str::from_utf8(&buffer[..length]).ok()?)
}

fn parse_stat(pid: u32, stat: &str) -> Option<ProcessInfo> {
    // The command name is in parentheses and may itself contain spaces and
    // parentheses: the fields start after the last `)`.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
    let state = *fields.first()?;
    Some(ProcessInfo {
        pid,
        parent: fields.get(1)?.parse().ok()?,
        group: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
        zombie: matches!(state, "Z" | "X" | "x"),
    })
}

/// Every process on the system (thread-group leaders), without our own.
pub fn all_processes() -> Vec<ProcessInfo> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter_map(process_info)
        .collect()
}

/// True when no process is left in process group `group`. A zombie still
/// counts as a member, so reap the group's leader first. Once the leader is
/// reaped its id cannot be reused while any member is left, so a `false`
/// here still names the command's own group.
pub fn group_is_empty(group: u32) -> bool {
    let Ok(raw) = i32::try_from(group) else {
        return false;
    };
    matches!(
        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(raw), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// True when `pid` or one of its children is stopped (state `T`, by
/// SIGSTOP or a terminal stop signal).
pub fn stopped_with_children(pid: u32) -> bool {
    let is_stopped = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let end = stat.rfind(')')?;
                Some(stat.get(end + 2..end + 3)? == "T")
            })
            .unwrap_or(false)
    };
    if is_stopped(&pid.to_string()) {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .is_ok_and(|children| children.split_whitespace().any(is_stopped))
}

/// True if `pid` exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    process_info(pid).is_some_and(|info| !info.zombie)
}

/// Sends `signal` to the process `info` describes, if it is still that
/// process (same start time). Returns whether it was signalled.
pub fn signal_process(info: &ProcessInfo, signal: Signal) -> bool {
    match crate::fd::open_pidfd(info.pid) {
        Ok(pidfd) => {
            // The pidfd pins the process: if the start time still matches
            // now, the fd refers to the process we found, not a newcomer.
            let same = process_info(info.pid)
                .is_some_and(|now| now.start_time == info.start_time && !now.zombie);
            same && crate::fd::pidfd_send_signal(&pidfd, signal).is_ok()
        }
        Err(error) if error.raw_os_error() == Some(libc::ENOSYS) => {
            // Kernels before 5.3: check and signal, with a tiny reuse race.
            let same = process_info(info.pid)
                .is_some_and(|now| now.start_time == info.start_time && !now.zombie);
            same && kill(Pid::from_raw(info.pid as i32), signal).is_ok()
        }
        Err(_) => false,
    }
}

/// The processes of one command: the session its root leads, and the
/// processes carrying its marker, with their descendants.
#[derive(Debug, Clone)]
pub struct ProcessTree {
    /// The root: session leader and group leader. The caller guarantees it
    /// is not reaped while [`ProcessTree::signal_group`] may be called.
    root: Option<ProcessInfo>,
    marker: Option<RunMarker>,
    /// The process that adopts the tree's orphans once its root is gone
    /// (a sandbox's init): its children are members too.
    adopter: Option<u32>,
}

impl ProcessTree {
    /// The tree of a command whose root (`setsid` leader) is `root_pid`,
    /// not yet reaped.
    pub fn new(root_pid: u32, marker: Option<RunMarker>) -> Self {
        Self {
            root: process_info(root_pid),
            marker,
            adopter: None,
        }
    }

    /// Counts the children of `adopter` as members (see the field). Inside
    /// a sandbox's pid namespace every child of its init is an orphan of a
    /// command whose own process ended: a `setsid` double fork with a
    /// cleared environment (`setsid -f env -i …`), which neither the
    /// session nor the marker finds, is found so.
    #[must_use]
    pub fn with_adopter(mut self, adopter: Option<u32>) -> Self {
        self.adopter = adopter;
        self
    }

    /// The processes carrying `marker` and their descendants (for a command
    /// running inside a longer-lived shell, which must not be stopped).
    pub fn by_marker(marker: RunMarker) -> Self {
        Self {
            root: None,
            marker: Some(marker),
            adopter: None,
        }
    }

    /// The pid of the tree's root, if it has one.
    pub fn root_pid(&self) -> Option<u32> {
        self.root.map(|root| root.pid)
    }

    /// True while the root has not exited.
    pub fn root_alive(&self) -> bool {
        self.root.is_some_and(|root| {
            process_info(root.pid)
                .is_some_and(|now| now.start_time == root.start_time && !now.zombie)
        })
    }

    /// Live processes of the tree other than the root. With
    /// `escapees: false`, only the root's session (cheap: no environ reads).
    pub fn members(&self, escapees: bool) -> Vec<ProcessInfo> {
        let all = all_processes();
        // Nothing started before the root can descend from it.
        let not_before = self.root.map_or(0, |root| root.start_time);
        let root_pid = self.root_pid();
        let mut matched: HashSet<u32> = HashSet::new();
        if let Some(pid) = root_pid {
            matched.insert(pid);
        }
        if escapees && let Some(adopter) = self.adopter {
            matched.insert(adopter);
        }
        for info in &all {
            if info.zombie || info.start_time < not_before {
                continue;
            }
            let in_session = root_pid.is_some_and(|pid| info.session == pid);
            let marked = escapees
                && !in_session
                && self.marker.as_ref().is_some_and(|marker| {
                    std::fs::read(format!("/proc/{}/environ", info.pid))
                        .is_ok_and(|environ| marker.is_in(&environ))
                });
            if in_session || marked {
                matched.insert(info.pid);
            }
        }
        if escapees {
            // Children of found processes, whatever their session or
            // environment (e.g. `setsid env -i server`).
            let children: HashMap<u32, Vec<u32>> = all
                .iter()
                .filter(|info| !info.zombie && info.start_time >= not_before)
                .fold(HashMap::new(), |mut map, info| {
                    map.entry(info.parent).or_default().push(info.pid);
                    map
                });
            let mut stack: Vec<u32> = matched.iter().copied().collect();
            while let Some(pid) = stack.pop() {
                for &child in children.get(&pid).into_iter().flatten() {
                    if matched.insert(child) {
                        stack.push(child);
                    }
                }
            }
        }
        all.into_iter()
            .filter(|info| {
                !info.zombie
                    && Some(info.pid) != root_pid
                    && Some(info.pid) != self.adopter
                    && matched.contains(&info.pid)
            })
            .collect()
    }

    /// Signals the root's process group at once (atomically: processes
    /// forked meanwhile are included). Only while the root is unreaped.
    pub fn signal_group(&self, signal: Signal) {
        if let Some(root) = self.root {
            let _ = killpg(Pid::from_raw(root.pid as i32), signal);
        }
    }

    /// Signals the group and every member outside it.
    pub fn signal_all(&self, signal: Signal, escapees: bool) -> Vec<ProcessInfo> {
        self.signal_group(signal);
        let members = self.members(escapees);
        let group = self.root_pid();
        for member in &members {
            if Some(member.group) != group {
                signal_process(member, signal);
            }
        }
        members
    }

    /// Stops the whole tree: SIGTERM, up to `grace` for it to end, then
    /// SIGKILL, repeated until nothing is left (a process forking as fast as
    /// it can, a fork bomb, keeps adding members while a single sweep runs).
    /// Returns how many processes besides the root were found. The root must
    /// not be reaped before this returns.
    pub async fn terminate(&self, grace: Duration, escapees: bool) -> usize {
        let mut found: HashSet<u32> = HashSet::new();
        let first = self.signal_all(Signal::SIGTERM, escapees);
        // A stopped process keeps SIGTERM pending until it is continued.
        self.signal_all(Signal::SIGCONT, escapees);
        found.extend(first.iter().map(|info| info.pid));
        if self
            .wait_gone(grace, escapees, Signal::SIGTERM, &mut found)
            .await
        {
            return found.len();
        }
        self.signal_all(Signal::SIGKILL, escapees);
        self.wait_gone(KILL_WAIT, escapees, Signal::SIGKILL, &mut found)
            .await;
        found.len()
    }

    /// Waits until the root and every member are gone, or `limit`. Members
    /// found meanwhile get `signal`; with SIGKILL the group is killed again
    /// on every round, so that children forked during a sweep die too.
    async fn wait_gone(
        &self,
        limit: Duration,
        escapees: bool,
        signal: Signal,
        found: &mut HashSet<u32>,
    ) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if signal == Signal::SIGKILL {
                self.signal_group(Signal::SIGKILL);
            }
            let members = self.members(escapees);
            for member in &members {
                if found.insert(member.pid) || signal == Signal::SIGKILL {
                    signal_process(member, signal);
                }
            }
            if members.is_empty() && !self.root_alive() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// SIGKILL to everything at once, without waiting (for `Drop`).
    pub fn kill_now(&self, escapees: bool) {
        self.signal_all(Signal::SIGKILL, escapees);
    }
}

/// Kills the given processes (as found earlier) that are still the same
/// processes, and everything carrying `marker`. For use after the root was
/// reaped, when the group id may no longer be ours.
pub fn kill_survivors(survivors: &[ProcessInfo], marker: Option<&RunMarker>) {
    for info in survivors {
        signal_process(info, Signal::SIGKILL);
    }
    if let Some(marker) = marker {
        for info in ProcessTree::by_marker(marker.clone()).members(true) {
            signal_process(&info, Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_parentheses_in_the_name() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
        let info = parse_stat(42, stat).expect("parsed");
        assert_eq!(
            info,
            ProcessInfo {
                pid: 42,
                parent: 1,
                group: 42,
                session: 42,
                start_time: 12345,
                zombie: false
            }
        );
    }

    #[test]
    fn finds_the_marker_anywhere_in_the_environment() {
        let marker = RunMarker::from_value("7".to_owned());
        assert!(marker.is_in(b"BASHTOOL_RUN_ID=7\0A=1\0"));
        assert!(marker.is_in(b"A=1\0BASHTOOL_RUN_ID=7\0"));
        assert!(!marker.is_in(b"A=1\0BASHTOOL_RUN_ID=77\0"));
        assert!(!marker.is_in(b"XBASHTOOL_RUN_ID=7\0"));
    }
}
