//! Exit statuses exist only while this process does not ignore `SIGCHLD`.
//! With `SIGCHLD` set to `SIG_IGN` (or a handler with `SA_NOCLDWAIT`) the
//! kernel reaps every child itself, and each command's status is lost:
//! every call would end with "exit code unknown", and commands would
//! inherit the ignored `SIGCHLD` too (a program waiting for its own
//! children then gets `ECHILD`). A host may start us so: the disposition
//! is inherited across exec (a Python parent that set `SIG_IGN`, some
//! supervisors). So before the first child, an ignored `SIGCHLD` is put
//! back to its default; a handler keeps running, without `SA_NOCLDWAIT`.
//! A host that relied on the kernel to reap its own children must then
//! reap them.

use std::sync::Once;

/// Makes sure the children we start leave an exit status (see the module
/// documentation). Cheap after the first call: one atomic load.
pub fn keep_exit_statuses() {
    static CHECKED: Once = Once::new();
    CHECKED.call_once(|| {
        // SAFETY: sigaction reads and writes local structs; the handler,
        // if any, is kept as it was.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGCHLD, std::ptr::null(), &raw mut current) != 0 {
                return;
            }
            let ignored = current.sa_sigaction == libc::SIG_IGN;
            if !ignored && current.sa_flags & libc::SA_NOCLDWAIT == 0 {
                return;
            }
            let mut kept = current;
            if ignored {
                kept.sa_sigaction = libc::SIG_DFL;
            }
            kept.sa_flags &= !libc::SA_NOCLDWAIT;
            libc::sigaction(libc::SIGCHLD, &raw const kept, std::ptr::null_mut());
        }
    });
}
