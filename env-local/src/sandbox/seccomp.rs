//! The seccomp filters: the system calls that would undo or step around the
//! other layers (mounts, namespaces, chroot, kernel modules, raw handles)
//! fail with `EPERM`. Compiled to BPF once in the parent; the child installs
//! them with one system call each.
//!
//! `ptrace` and `kill` are left to Landlock, which scopes them to the
//! sandbox (a debugger inside works on its own children; nothing outside
//! can be traced or signalled).

// System calls the standard library does not wrap; each block says why it
// is sound.
#![allow(unsafe_code)]

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::error::Error;

/// Denied whatever their arguments.
const DENIED: &[libc::c_long] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_mount_setattr,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    // A file handle opens a file by inode number, around every path check.
    libc::SYS_open_by_handle_at,
    libc::SYS_bpf,
    libc::SYS_acct,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// `clone` flags that create namespaces (a fresh user namespace would give
/// the command every capability over a copy of the sandbox's mounts).
const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
];

/// The two programs, in the order they are installed.
#[derive(Debug)]
pub struct Filters {
    /// Denied calls → `EPERM`.
    deny: BpfProgram,
    /// `clone3` → `ENOSYS`: its flags sit in memory a filter cannot read,
    /// and libc falls back to `clone`, whose flags the first filter checks.
    clone3: BpfProgram,
}

fn arch() -> Result<TargetArch, Error> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|_| Error::SandboxUnsupported {
        mode: "system call filter".to_owned(),
        feature: "seccomp for this architecture",
        reason: format!("{} is not supported", std::env::consts::ARCH),
    })
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
    arch: TargetArch,
) -> Result<BpfProgram, Error> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .and_then(TryInto::try_into)
    .map_err(|error| Error::SandboxSetup {
        step: "compiling the seccomp filter".to_owned(),
        source: std::io::Error::other(error.to_string()),
    })?;
    Ok(filter)
}

fn condition(index: u8, operator: SeccompCmpOp, value: u64) -> Result<SeccompRule, Error> {
    let setup = |error: seccompiler::BackendError| Error::SandboxSetup {
        step: "compiling the seccomp filter".to_owned(),
        source: std::io::Error::other(error.to_string()),
    };
    let condition =
        SeccompCondition::new(index, SeccompCmpArgLen::Qword, operator, value).map_err(setup)?;
    SeccompRule::new(vec![condition]).map_err(setup)
}

impl Filters {
    pub fn build() -> Result<Self, Error> {
        if !seccomp_available() {
            return Err(Error::SandboxUnsupported {
                mode: "system call filter".to_owned(),
                feature: "seccomp",
                reason: "the kernel was built without CONFIG_SECCOMP_FILTER".to_owned(),
            });
        }
        let arch = arch()?;
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED
            .iter()
            .map(|&call| (i64::from(call), Vec::new()))
            .collect();
        let clone_rules = NAMESPACE_FLAGS
            .iter()
            .map(|&flag| condition(0, SeccompCmpOp::MaskedEq(flag), flag))
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(i64::from(libc::SYS_clone), clone_rules);
        // TIOCSTI pushes characters into a terminal's input: typed commands
        // in whatever shell reads that terminal.
        rules.insert(
            i64::from(libc::SYS_ioctl),
            vec![condition(
                1,
                SeccompCmpOp::Eq,
                u64::from(libc::TIOCSTI as u32),
            )?],
        );
        let deny = compile(rules, libc::EPERM, arch)?;
        let clone3 = compile(
            BTreeMap::from([(i64::from(libc::SYS_clone3), Vec::new())]),
            libc::ENOSYS,
            arch,
        )?;
        Ok(Self { deny, clone3 })
    }

    /// Installs both filters on the calling process; inherited by all it
    /// starts. Async-signal-safe: two system calls on prepared memory.
    /// `no_new_privs` must be set before.
    pub fn install(&self) -> std::io::Result<()> {
        install(&self.deny)?;
        install(&self.clone3)
    }
}

#[repr(C)]
struct SockFprog {
    len: libc::c_ushort,
    filter: *const seccompiler::sock_filter,
}

fn install(program: &BpfProgram) -> std::io::Result<()> {
    let fprog = SockFprog {
        len: program.len() as libc::c_ushort,
        filter: program.as_ptr(),
    };
    // SAFETY: the kernel copies the program from `fprog`, which points into
    // `program`, alive for the duration of the call.
    let result = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &raw const fprog,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// True when the kernel accepts seccomp filters.
pub fn seccomp_available() -> bool {
    // SAFETY: PR_GET_SECCOMP takes no pointer; it fails with EINVAL when
    // the kernel has no seccomp at all.
    let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    mode >= 0 && std::path::Path::new("/proc/sys/kernel/seccomp/actions_avail").exists()
}
