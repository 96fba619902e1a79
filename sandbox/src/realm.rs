//! A realm: the namespaces every command of one sandbox runs in, held by
//! an init process of ours (pid 1 of the realm's pid namespace).
//!
//! One realm per [`super::Sandbox`]: a session has its own (its shell,
//! its commands and its jobs), an environment's stateless calls share
//! theirs. A realm has
//! - its own **pid namespace** with its own `/proc`: bashtool, the other
//!   realms and every process of the host are invisible, so their
//!   environment, memory and file descriptors cannot be read or signalled;
//!   when the init ends, the kernel kills every process left inside;
//! - its own **mount namespace** (the plan in `mounts.rs`): protected paths
//!   read-only, a private `/dev/shm`, a private `devpts` (no other
//!   terminal is visible), bashtool's state directory hidden, a private
//!   `/tmp` in read-only mode;
//! - its own **IPC namespace** (SysV shared memory, semaphores and message
//!   queues of the host are out of reach);
//! - with the network off or limited to allowed domains, its own **network
//!   namespace** (a loopback only; for allowed domains, with the proxy's
//!   listening socket on it, made by the init and handed to us);
//! - for a non-root user, its own **user namespace** mapping the user to
//!   itself (needed to create the others).
//!
//! The init is made with `clone` and these namespace flags (a fork: the
//! child copies our page tables once), takes the mount steps, then execs a
//! small `bash` loop that only waits: it reaps the orphans the kernel hands
//! to it and ends when bashtool closes its end of the hold pipe (bashtool
//! dropped the sandbox or died). A kept realm (jobs that outlive the
//! process that started them) lives on after that until nothing else is
//! left inside. The init is not confined itself: it runs no code of the
//! commands; they cannot trace it (Landlock allows `ptrace` only within a
//! command's own domain), and as pid 1 it ignores every signal sent from
//! inside that it has no handler for (SIGKILL included).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use bashtool_process::{ChildSteps, HelperEnd};

use super::mounts::MountPlan;
use super::namespaces::{
    close_all_except, listen_and_send, loopback_up, receive_descriptor, write_file,
};
use crate::error::Error;

/// The init's loop. fd 3 is the hold pipe: EOF when bashtool lets go. A
/// kept realm then waits until no other process is left (`kill -0 -1`
/// from pid 1 names every other process of the namespace), checking every
/// 2 s on a pipe of its own that never has data.
const HOLD_SCRIPT: &str = "read -r _ <&3";
const KEPT_SCRIPT: &str =
    "read -r _ <&3; exec 3<&-; while kill -0 -1 2>/dev/null; do read -r -t 2 _ <&4; done";

/// What the realm is made of; prepared in the parent (the child may not
/// allocate).
#[derive(Debug)]
pub struct RealmSpec {
    /// A user namespace mapping the user to itself (non-root).
    pub user: bool,
    /// A network namespace with only a loopback (network off or limited).
    pub network: bool,
    /// With `network`: a listening socket on this port of the namespace's
    /// `127.0.0.1`, for the domain proxy ([`Realm::proxy_listener`]).
    pub proxy_port: Option<u16>,
    pub mounts: MountPlan,
    /// Lives on after bashtool lets go, until no process is left inside.
    pub kept: bool,
    /// The init's program (`bash`, resolved beforehand).
    pub shell: PathBuf,
}

/// A running realm: the init and the namespaces' descriptors, which a
/// launch joins.
#[derive(Debug)]
pub struct Realm {
    /// The init's pid on the host.
    init_pid: u32,
    /// A pidfd of the init (our child).
    init: OwnedFd,
    /// Our end of the hold pipe; closing it ends a realm that is not kept.
    hold: Option<OwnedFd>,
    kept: bool,
    pub user: Option<OwnedFd>,
    pub network: Option<OwnedFd>,
    pub ipc: OwnedFd,
    pub mount: OwnedFd,
    pub pid: OwnedFd,
    /// The listening socket on the namespace's loopback that
    /// [`RealmSpec::proxy_port`] asked for, until the proxy takes it.
    pub proxy_listener: Option<OwnedFd>,
}

/// Failure codes the init reports on its pipe before it execs, one byte.
mod failed {
    pub const MAPS: u8 = 1;
    pub const LOOPBACK: u8 = 2;
    pub const MOUNTS: u8 = 3;
    pub const PROC: u8 = 4;
    pub const DEVPTS: u8 = 5;
    pub const COVERS: u8 = 6;
    pub const STDIO: u8 = 7;
    pub const EXEC: u8 = 8;
    pub const PROXY: u8 = 9;
}

/// Data the child uses, all allocated before the clone.
struct Prepared {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    shell: CString,
    argv: [*const libc::c_char; 4],
    envp: [*const libc::c_char; 2],
    // Owners of what `argv` and `envp` point to.
    _strings: [CString; 4],
}

impl Realm {
    /// Makes the realm: clones the init into new namespaces, lets it take
    /// the mount steps and exec its loop, and opens its namespaces.
    pub fn create(spec: &RealmSpec) -> Result<Self, Error> {
        let prepared = prepare(spec)?;
        let (hold_read, hold_write) = pipe("the realm's hold pipe")?;
        let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWIPC;
        if spec.user {
            flags |= libc::CLONE_NEWUSER;
        }
        if spec.network {
            flags |= libc::CLONE_NEWNET;
        }
        // The init makes the proxy's listener in the new network namespace
        // and sends it back over this pair (a multithreaded process cannot
        // join a namespace of a user namespace of its own to make it).
        let channel = match spec.proxy_port {
            Some(_) if spec.network => Some(socket_pair()?),
            _ => None,
        };
        let steps = InitSteps {
            spec,
            prepared: &prepared,
            hold: hold_read.as_raw_fd(),
            channel: channel.as_ref().map(|(_, theirs)| theirs.as_raw_fd()),
        };
        let end = bashtool_process::fork_helper(flags, &steps).map_err(|error| {
            unsupported(
                "namespaces",
                &format!("clone with new pid, mount and IPC namespaces was refused ({error})"),
            )
        })?;
        drop(hold_read);
        let channel = channel.map(|(ours, _)| ours);
        let pid = match end {
            HelperEnd::Running { pid } => pid as libc::pid_t,
            HelperEnd::Returned(code) => {
                return Err(init_failure(
                    u8::try_from(code).unwrap_or(failed::EXEC),
                    spec,
                ));
            }
        };
        let init = bashtool_process::open_pidfd(pid as u32).map_err(|source| Error::Setup {
            step: "opening a pidfd of the realm's init".to_owned(),
            source,
        });
        let init = match init {
            Ok(init) => init,
            Err(error) => {
                kill_and_reap(pid);
                return Err(error);
            }
        };
        let open = |name: &str| {
            std::fs::File::open(format!("/proc/{pid}/ns/{name}"))
                .map(OwnedFd::from)
                .map_err(|source| Error::Setup {
                    step: format!("opening the realm's {name} namespace"),
                    source,
                })
        };
        let namespaces = (|| {
            Ok::<_, Error>((
                spec.user.then(|| open("user")).transpose()?,
                spec.network.then(|| open("net")).transpose()?,
                open("ipc")?,
                open("mnt")?,
                open("pid")?,
            ))
        })();
        let (user, network, ipc, mount, pid_namespace) = match namespaces {
            Ok(namespaces) => namespaces,
            Err(error) => {
                kill_and_reap(pid);
                return Err(error);
            }
        };
        let proxy_listener = match channel.as_ref().map(receive_descriptor).transpose() {
            Ok(listener) => listener,
            Err(source) => {
                kill_and_reap(pid);
                return Err(Error::Setup {
                    step: "receiving the proxy's listening socket from the realm's init".to_owned(),
                    source,
                });
            }
        };
        Ok(Self {
            init_pid: pid as u32,
            init,
            hold: Some(hold_write),
            kept: spec.kept,
            user,
            network,
            ipc,
            mount,
            pid: pid_namespace,
            proxy_listener,
        })
    }

    /// The init's pid on the host: the parent of every orphan inside.
    pub fn init_pid(&self) -> u32 {
        self.init_pid
    }

    /// A path on the host that resolves inside the realm's mount
    /// namespace (through `/proc/<init>/root`).
    pub fn inside(&self, path: &Path) -> PathBuf {
        let relative = path.strip_prefix("/").unwrap_or(path);
        PathBuf::from(format!("/proc/{}/root", self.init_pid)).join(relative)
    }

    /// True while the init runs (a launch into a realm whose init died
    /// fails: the kernel refuses new processes in its pid namespace).
    pub fn is_alive(&self) -> bool {
        let mut poll = libc::pollfd {
            fd: self.init.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on one pollfd of ours with a zero timeout; a pidfd
        // is readable once its process exited.
        let ready = unsafe { libc::poll(&raw mut poll, 1, 0) };
        ready == 0
    }
}

impl Drop for Realm {
    fn drop(&mut self) {
        // The init reads EOF and ends; the kernel then kills what is left
        // inside (unless the realm is kept, when the init waits for it).
        drop(self.hold.take());
        if !self.kept {
            // SAFETY: pidfd_send_signal on our pidfd with no siginfo.
            unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    self.init.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                );
            }
        }
        // Reaping the init waits until every process of its namespace is
        // gone (or, kept, until it ends by itself): not on this thread.
        let pid = self.init_pid as libc::pid_t;
        let _ = std::thread::Builder::new()
            .name("bashtool-realm".to_owned())
            .stack_size(64 * 1024)
            .spawn(move || reap(pid));
    }
}

fn prepare(spec: &RealmSpec) -> Result<Prepared, Error> {
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let c = |text: &str| CString::new(text).map_err(|_| setting("a NUL byte in a prepared string"));
    let shell = super::mounts::c_path(&spec.shell)?;
    let strings = [
        c("bashtool-realm")?,
        c("-c")?,
        c(if spec.kept { KEPT_SCRIPT } else { HOLD_SCRIPT })?,
        c("LC_ALL=C")?,
    ];
    let argv = [
        strings[0].as_ptr(),
        strings[1].as_ptr(),
        strings[2].as_ptr(),
        std::ptr::null(),
    ];
    let envp = [strings[3].as_ptr(), std::ptr::null()];
    Ok(Prepared {
        uid_map: format!("{uid} {uid} 1\n").into_bytes(),
        gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        shell,
        argv,
        envp,
        _strings: strings,
    })
}

/// The init's steps, in the helper child of `fork_helper`.
struct InitSteps<'a> {
    spec: &'a RealmSpec,
    prepared: &'a Prepared,
    hold: RawFd,
    /// Where the proxy's listener goes, if the realm has one.
    channel: Option<RawFd>,
}

// SAFETY: `init_child` makes only system calls (close_range, writes to
// /proc files, mount, dup2, execve) on the data `prepare` made before the
// fork and on descriptors; it allocates nothing and takes no lock.
unsafe impl ChildSteps for InitSteps<'_> {
    fn run(&self, report: std::os::fd::BorrowedFd<'_>) -> i32 {
        i32::from(init_child(
            self.spec,
            self.prepared,
            report.as_raw_fd(),
            self.hold,
            self.channel,
        ))
    }
}

/// The init's steps before exec; returns the failure code if one failed
/// (on success it execs and never returns).
fn init_child(
    spec: &RealmSpec,
    prepared: &Prepared,
    report: RawFd,
    hold: RawFd,
    channel: Option<RawFd>,
) -> u8 {
    // Hold nothing of bashtool's but the two pipes and the channel (a copy
    // of another realm's hold pipe would keep that realm alive).
    close_all_except(&[report, hold, channel.unwrap_or(report)]);
    if spec.user {
        let maps = write_file(c"/proc/self/setgroups", b"deny")
            .and_then(|()| write_file(c"/proc/self/uid_map", &prepared.uid_map))
            .and_then(|()| write_file(c"/proc/self/gid_map", &prepared.gid_map));
        if maps.is_err() {
            return failed::MAPS;
        }
    }
    if spec.network && loopback_up().is_err() {
        return failed::LOOPBACK;
    }
    if let (Some(port), Some(channel)) = (spec.proxy_port, channel)
        && listen_and_send(port, channel).is_err()
    {
        return failed::PROXY;
    }
    if let Err(step) = spec.mounts.apply_in_new_namespace() {
        return match step {
            super::mounts::Step::Binds => failed::MOUNTS,
            super::mounts::Step::Covers => failed::COVERS,
            super::mounts::Step::Devpts => failed::DEVPTS,
            super::mounts::Step::Proc => failed::PROC,
        };
    }
    // The init keeps nothing of bashtool's standard streams (a copy of an
    // MCP server's stdout would hold its client's pipe open), gets the
    // hold pipe at 3, and, kept, a pipe of its own at 4 and 5 to wait on.
    // SAFETY: plain system calls on our own descriptors.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null < 0
            || libc::dup2(null, 0) < 0
            || libc::dup2(null, 1) < 0
            || libc::dup2(null, 2) < 0
            || libc::dup2(hold, 3) < 0
            // When the hold pipe already was 3, dup2 did nothing and its
            // close-on-exec flag stays: clear it, or the init loses it.
            || libc::fcntl(3, libc::F_SETFD, 0) < 0
        {
            return failed::STDIO;
        }
        if spec.kept {
            let mut idle = [0 as libc::c_int; 2];
            if libc::pipe(idle.as_mut_ptr()) != 0
                || libc::dup2(idle[0], 4) < 0
                || libc::dup2(idle[1], 5) < 0
            {
                return failed::STDIO;
            }
        }
        libc::execve(
            prepared.shell.as_ptr(),
            prepared.argv.as_ptr(),
            prepared.envp.as_ptr(),
        );
    }
    failed::EXEC
}

fn init_failure(code: u8, spec: &RealmSpec) -> Error {
    match code {
        failed::MAPS => unsupported(
            "user namespaces",
            "writing /proc/self/uid_map or gid_map was refused",
        ),
        failed::LOOPBACK => unsupported(
            "network namespaces",
            "the loopback interface of the private network could not be brought up",
        ),
        failed::MOUNTS => unsupported(
            "read-only bind mounts",
            "binding the protected paths read-only was refused",
        ),
        failed::COVERS => unsupported(
            "tmpfs mounts",
            "mounting the private /dev/shm, /tmp or the cover of bashtool's state was refused",
        ),
        failed::DEVPTS => unsupported(
            "a private devpts",
            "mounting a new devpts instance on /dev/pts was refused",
        ),
        failed::PROC => unsupported(
            "a private /proc",
            "mounting /proc for the sandbox's pid namespace was refused (inside a container, \
             parts of the host's /proc hidden by other mounts forbid it)",
        ),
        failed::PROXY => unsupported(
            "a listening socket in the sandbox's network namespace",
            "the domain proxy's socket on the sandbox's 127.0.0.1 could not be made",
        ),
        failed::STDIO => unsupported(
            "namespaces",
            "the realm's init could not set up its descriptors",
        ),
        _ => unsupported(
            "namespaces",
            &format!("the realm's init could not run `{}`", spec.shell.display()),
        ),
    }
}

fn unsupported(feature: &'static str, reason: &str) -> Error {
    Error::Unsupported {
        mode: "namespaces".to_owned(),
        feature,
        reason: reason.to_owned(),
    }
}

fn setting(message: &str) -> Error {
    Error::Setting {
        setting: "sandbox",
        message: message.to_owned(),
    }
}

fn pipe(what: &str) -> Result<(OwnedFd, OwnedFd), Error> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::Setup {
            step: format!("creating {what}"),
            source: std::io::Error::last_os_error(),
        });
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A pair of connected unix datagram sockets (close-on-exec).
fn socket_pair() -> Result<(OwnedFd, OwnedFd), Error> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(Error::Setup {
            step: "creating the channel for the proxy's socket".to_owned(),
            source: std::io::Error::last_os_error(),
        });
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn reap(pid: libc::pid_t) {
    bashtool_process::reap_child(pid as u32);
}

fn kill_and_reap(pid: libc::pid_t) {
    // SAFETY: our own unreaped child: its pid cannot have been reused.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    reap(pid);
}
