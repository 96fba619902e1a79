//! The seccomp filter: the system calls that would undo or step around the
//! other layers (mounts, namespaces, chroot, kernel modules, raw handles)
//! fail with `EPERM`. Assembled once in the parent; the child installs it
//! with one system call.
//!
//! `ptrace` and `kill` are left to the realm's pid namespace (nothing
//! outside has a pid a command can name) and to Landlock, which keeps
//! `ptrace` within a command's own tree (a debugger inside works on its own
//! children).
//!
//! The program is written by hand rather than generated (seccompiler): the
//! kernel caches the verdict of every system call whose path through the
//! filter reads only the call number, so only `clone` and `ioctl` run the
//! filter at all. A generated filter of the same rules cost ~0.15 ms per
//! `bash -c true` (15%).
//!
//! The call numbers are found by a binary search, not a chain of
//! comparisons: to fill that cache, the kernel runs the filter in an
//! emulator for every call number when the filter is installed, with
//! interrupts off, at each install (once per spawner thread, else per
//! sandboxed launch; see `crate::spawner`). With a chain of 35
//! comparisons that took ~45 µs per launch (measured: a 44-instruction
//! chain against one that stops the emulator at once); the search takes
//! about 10 steps per number.

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
const NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWCGROUP) as u32;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// On x86_64, x32 system calls carry this bit and the same audit arch.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Offsets in `struct seccomp_data`: nr, arch, then the arguments (the low
/// 32 bits of argument `i` at `16 + 8 i` on little-endian machines).
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;
const ARGUMENT_0_LOW: u32 = 16;
const ARGUMENT_1_LOW: u32 = 24;

const LOAD: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JUMP_EQUAL: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JUMP_AT_LEAST: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JUMP_ANY_BIT: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const RETURN: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const DENY: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
/// `clone3` keeps its flags in memory a filter cannot read; `ENOSYS` makes
/// libc fall back to `clone`, whose flags the filter checks.
const NOT_IMPLEMENTED: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

/// Where a conditional jump goes.
#[derive(Clone, Copy)]
enum Target {
    Next,
    Allow,
    Deny,
    NotImplemented,
    Clone,
    Ioctl,
    /// An instruction by its index in the program.
    At(usize),
}

/// A small assembler: instructions with symbolic targets, resolved once the
/// layout is known (cBPF jumps are forward offsets of at most 255).
struct Assembler {
    code: Vec<(u16, u32, Target, Target)>,
}

impl Assembler {
    fn push(&mut self, code: u16, value: u32, if_true: Target, if_false: Target) {
        self.code.push((code, value, if_true, if_false));
    }

    /// A binary search of the loaded call number among `calls` (sorted,
    /// not empty), jumping to the target of the one it equals, to `Allow`
    /// if none.
    fn search(&mut self, calls: &[(u32, Target)]) {
        /// Below this many, comparing each costs no more than halving.
        const LEAF: usize = 4;
        if calls.len() <= LEAF {
            for (index, &(call, target)) in calls.iter().enumerate() {
                let otherwise = if index + 1 == calls.len() {
                    Target::Allow
                } else {
                    Target::Next
                };
                self.push(JUMP_EQUAL, call, target, otherwise);
            }
            return;
        }
        let (lower, upper) = calls.split_at(calls.len() / 2);
        let split = self.code.len();
        self.push(JUMP_AT_LEAST, upper[0].0, Target::Next, Target::Next);
        self.search(lower);
        self.code[split].2 = Target::At(self.code.len());
        self.search(upper);
    }

    /// Resolves the targets. A target without its label, or one further
    /// than a cBPF jump reaches (255 instructions), is an error: either
    /// would send a call to the wrong verdict.
    fn finish(self, labels: &[(usize, Target)]) -> Result<Vec<libc::sock_filter>, Error> {
        let invalid = |message: String| Error::Setup {
            step: "assembling the seccomp filter".to_owned(),
            source: std::io::Error::other(message),
        };
        let position = |target: Target, index: usize| -> Result<u8, Error> {
            let at = match target {
                Target::Next => index + 1,
                Target::At(at) => at,
                other => labels
                    .iter()
                    .find(|(_, label)| {
                        std::mem::discriminant(label) == std::mem::discriminant(&other)
                    })
                    .map(|(at, _)| *at)
                    .ok_or_else(|| invalid(format!("instruction {index}: no such label")))?,
            };
            at.checked_sub(index + 1)
                .and_then(|offset| u8::try_from(offset).ok())
                .ok_or_else(|| {
                    invalid(format!(
                        "instruction {index}: a jump to {at} is not 0..=255 instructions forward"
                    ))
                })
        };
        self.code
            .iter()
            .enumerate()
            .map(|(index, &(code, k, if_true, if_false))| {
                Ok(libc::sock_filter {
                    code,
                    jt: position(if_true, index)?,
                    jf: position(if_false, index)?,
                    k,
                })
            })
            .collect()
    }
}

/// The assembled program.
#[derive(Debug)]
pub struct Filters {
    program: Vec<libc::sock_filter>,
}

impl Filters {
    pub fn build() -> Result<Self, Error> {
        if !seccomp_available() {
            return Err(Error::Unsupported {
                mode: "system call filter".to_owned(),
                feature: "seccomp",
                reason: "the kernel was built without CONFIG_SECCOMP_FILTER".to_owned(),
            });
        }
        let mut assembler = Assembler { code: Vec::new() };
        // Another architecture's calls (int 0x80 on x86_64) have other
        // numbers: refuse them all.
        assembler.push(LOAD, ARCH_OFFSET, Target::Next, Target::Next);
        assembler.push(JUMP_EQUAL, AUDIT_ARCH, Target::Next, Target::NotImplemented);
        assembler.push(LOAD, NR_OFFSET, Target::Next, Target::Next);
        assembler.push(
            JUMP_AT_LEAST,
            X32_SYSCALL_BIT,
            Target::NotImplemented,
            Target::Next,
        );
        let mut special: Vec<(u32, Target)> = DENIED
            .iter()
            .map(|&call| (call as u32, Target::Deny))
            .collect();
        special.push((libc::SYS_clone as u32, Target::Clone));
        special.push((libc::SYS_clone3 as u32, Target::NotImplemented));
        special.push((libc::SYS_ioctl as u32, Target::Ioctl));
        special.sort_by_key(|&(call, _)| call);
        assembler.search(&special);
        // Every other call: allowed. The blocks below are reached only by
        // the jumps above (cBPF jumps go forward; the last instruction
        // must be a return).
        assembler.push(RETURN, ALLOW, Target::Next, Target::Next);
        let clone = assembler.code.len();
        assembler.push(LOAD, ARGUMENT_0_LOW, Target::Next, Target::Next);
        assembler.push(JUMP_ANY_BIT, NAMESPACE_FLAGS, Target::Deny, Target::Allow);
        // TIOCSTI pushes characters into a terminal's input: typed commands
        // in whatever shell reads that terminal. The kernel reads the
        // request as 32 bits.
        let ioctl = assembler.code.len();
        assembler.push(LOAD, ARGUMENT_1_LOW, Target::Next, Target::Next);
        assembler.push(
            JUMP_EQUAL,
            libc::TIOCSTI as u32,
            Target::Deny,
            Target::Allow,
        );
        let allow = assembler.code.len();
        assembler.push(RETURN, ALLOW, Target::Next, Target::Next);
        let deny = assembler.code.len();
        assembler.push(RETURN, DENY, Target::Next, Target::Next);
        let not_implemented = assembler.code.len();
        assembler.push(RETURN, NOT_IMPLEMENTED, Target::Next, Target::Next);
        let program = assembler.finish(&[
            (allow, Target::Allow),
            (deny, Target::Deny),
            (not_implemented, Target::NotImplemented),
            (clone, Target::Clone),
            (ioctl, Target::Ioctl),
        ])?;
        Ok(Self { program })
    }

    /// Installs the filter on the calling process; inherited by all it
    /// starts. Async-signal-safe: one system call on prepared memory.
    /// `no_new_privs` must be set before.
    pub fn install(&self) -> std::io::Result<()> {
        let program = libc::sock_fprog {
            len: self.program.len() as libc::c_ushort,
            filter: self.program.as_ptr().cast_mut(),
        };
        // SAFETY: the kernel copies the program from `program`, which points
        // into `self.program`, alive for the duration of the call.
        let result = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0u32,
                &raw const program,
            )
        };
        if result == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

/// True when the kernel accepts seccomp filters.
pub fn seccomp_available() -> bool {
    // SAFETY: PR_GET_SECCOMP takes no pointer; it fails with EINVAL when
    // the kernel has no seccomp at all.
    let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    mode >= 0 && std::path::Path::new("/proc/sys/kernel/seccomp/actions_avail").exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jump_lands_inside_the_program() {
        let filters = Filters::build().expect("filter");
        let length = filters.program.len();
        for (index, instruction) in filters.program.iter().enumerate() {
            if instruction.code & 0x07 == libc::BPF_JMP as u16 {
                assert!(index + 1 + usize::from(instruction.jt) < length, "{index}");
                assert!(index + 1 + usize::from(instruction.jf) < length, "{index}");
            }
        }
        let last = filters.program.last().expect("instructions");
        assert_eq!((last.code, last.k), (RETURN, NOT_IMPLEMENTED));
    }

    /// A jump to `Deny` over `distance` returns: 255 is the furthest a
    /// cBPF jump reaches.
    fn jump_over(distance: usize) -> Result<Vec<libc::sock_filter>, Error> {
        let mut assembler = Assembler { code: Vec::new() };
        assembler.push(JUMP_EQUAL, 1, Target::Deny, Target::Next);
        for _ in 0..distance {
            assembler.push(RETURN, ALLOW, Target::Next, Target::Next);
        }
        let deny = assembler.code.len();
        assembler.push(RETURN, DENY, Target::Next, Target::Next);
        assembler.finish(&[(deny, Target::Deny)])
    }

    #[test]
    fn a_jump_too_far_or_to_a_missing_label_is_refused() {
        assert_eq!(jump_over(255).expect("255 forward")[0].jt, 255);
        let error = jump_over(256).expect_err("256 forward");
        assert!(error.to_string().contains("instruction 0"), "{error}");

        let mut unlabelled = Assembler { code: Vec::new() };
        unlabelled.push(JUMP_EQUAL, 1, Target::Ioctl, Target::Next);
        unlabelled.push(RETURN, ALLOW, Target::Next, Target::Next);
        let error = unlabelled.finish(&[]).expect_err("no Ioctl label");
        assert!(error.to_string().contains("no such label"), "{error}");
    }

    /// What the program returns for a call, run the way the kernel runs
    /// it (the instructions the filter uses; anything else fails the
    /// test), and after how many instructions.
    fn run(
        program: &[libc::sock_filter],
        arch: u32,
        call: u32,
        arguments: [u32; 2],
    ) -> (u32, usize) {
        let (mut pc, mut accumulator) = (0, 0);
        for steps in 1.. {
            let instruction = program[pc];
            let skip = |taken: bool| {
                1 + usize::from(if taken {
                    instruction.jt
                } else {
                    instruction.jf
                })
            };
            pc += match instruction.code {
                LOAD => {
                    accumulator = match instruction.k {
                        NR_OFFSET => call,
                        ARCH_OFFSET => arch,
                        ARGUMENT_0_LOW => arguments[0],
                        ARGUMENT_1_LOW => arguments[1],
                        other => panic!("load of offset {other}"),
                    };
                    1
                }
                JUMP_EQUAL => skip(accumulator == instruction.k),
                JUMP_AT_LEAST => skip(accumulator >= instruction.k),
                JUMP_ANY_BIT => skip(accumulator & instruction.k != 0),
                RETURN => return (instruction.k, steps),
                other => panic!("instruction {other:#x}"),
            };
        }
        unreachable!("the program never returned")
    }

    #[test]
    fn every_call_number_gets_the_verdict_of_the_rules() {
        let program = Filters::build().expect("filter").program;
        for call in 0..1024_u32 {
            let number = libc::c_long::from(call);
            // `clone` and `ioctl` with plain arguments pass; their
            // refused arguments are checked below.
            let expected = if DENIED.contains(&number) {
                DENY
            } else if number == libc::SYS_clone3 {
                NOT_IMPLEMENTED
            } else {
                ALLOW
            };
            assert_eq!(
                run(&program, AUDIT_ARCH, call, [0, 0]).0,
                expected,
                "call {call}"
            );
            // Another architecture's numbering, and x32's, never pass.
            assert_eq!(run(&program, 0x4000_0003, call, [0, 0]).0, NOT_IMPLEMENTED);
            assert_eq!(
                run(&program, AUDIT_ARCH, call | X32_SYSCALL_BIT, [0, 0]).0,
                NOT_IMPLEMENTED
            );
        }
        let clone = libc::SYS_clone as u32;
        assert_eq!(
            run(&program, AUDIT_ARCH, clone, [libc::CLONE_NEWUSER as u32, 0]).0,
            DENY
        );
        assert_eq!(
            run(&program, AUDIT_ARCH, clone, [libc::CLONE_VM as u32, 0]).0,
            ALLOW
        );
        let ioctl = libc::SYS_ioctl as u32;
        assert_eq!(
            run(&program, AUDIT_ARCH, ioctl, [0, libc::TIOCSTI as u32]).0,
            DENY
        );
        assert_eq!(
            run(&program, AUDIT_ARCH, ioctl, [0, libc::TIOCGWINSZ as u32]).0,
            ALLOW
        );
    }

    #[test]
    fn a_plain_call_is_decided_in_a_few_steps() {
        // The kernel emulates the filter for every call number at each
        // install; the search keeps that short (a chain took 37 steps).
        let program = Filters::build().expect("filter").program;
        let longest = (0..512_u32)
            .map(|call| run(&program, AUDIT_ARCH, call, [0, 0]).1)
            .max();
        assert!(
            longest.is_some_and(|steps| steps <= 12),
            "{longest:?} steps"
        );
    }
}
