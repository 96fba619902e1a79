//! The contract suite: every promise of the [`CommandExec`] and [`Jobs`]
//! ports, as one async function each that takes a [`Subject`], run against
//! every environment of the workspace (`tests/tests/contract.rs`; the
//! remote adapter's in `cli/tests/contract_remote.rs`).
//!
//! The promises come in two groups, listed once, in
//! [`contract_suite!`](crate::contract_suite):
//!
//! - **port** (`contract/port.rs`): what any environment must do, fake or
//!   real: exit codes and signals come back, output in order and bounded,
//!   the call's directory and variables, what a timeout and a cancel
//!   return, and the jobs port (cursor reads never skip, wait never stops
//!   a job, unknown ids are errors). They also run against env-mock
//!   ([`mock_subject`]).
//! - **process** (`contract/process.rs`): what only real processes can
//!   show: a process tree that dies on timeout, cancel, drop and stop, a
//!   leftover that does not hold the call, a command the kernel stops. Each
//!   says in the list why a fake cannot keep it.
//!
//! Both files deny dead code and nothing but the list makes their
//! functions reachable, so a promise left off the list does not compile.
//!
//! Liveness is decided here from `/proc`, never by the code under test, and
//! every wait is for an event with a deadline.

#[cfg(doc)]
use bashtool_core::{CommandExec, Jobs};

mod mock;
mod port;
mod process;
mod subject;

pub use mock::mock_subject;
pub use subject::{SAFETY, Subject};

/// Declares one test per promise of the suite, in a module named
/// `$environment`, each built from a fresh `$subject` (an expression giving
/// a [`Subject`]):
///
/// ```ignore
/// // Every promise, on a multi-threaded runtime (real processes):
/// contract_suite!(local_exec, local());
/// // The port-level promises only, on the runtime the attribute names:
/// contract_suite!(mock, mock_subject(), port, #[tokio::test(start_paused = true)]);
/// ```
///
/// The list of promises below is the only one: the tests of every
/// environment and the functions' registration in
/// `bashtool_tests::contract` are both generated from it.
#[macro_export]
macro_rules! contract_suite {
    // The promises, by group; `$then` is the rule to hand them to.
    (@promises $($then:tt)*) => {
        $crate::contract_suite! { $($then)*
            port {
                exit_codes,
                signals,
                interleaving,
                huge_output_is_bounded,
                cwd_and_env_per_call,
                a_missing_directory_is_an_error,
                a_timeout_returns_the_output_so_far,
                a_cancel_returns_the_output_so_far,
                cancel_wins_over_a_flood,
                background_job_lifecycle,
                a_wait_that_times_out_leaves_the_job_running,
                stopping_a_job_ends_it,
                an_unknown_job_is_an_error,
            }
            process {
                timeout_stops_the_tree:
                    "a fake starts no process tree whose death the test could see in /proc",
                cancel_stops_the_tree:
                    "a fake starts no process tree whose death the test could see in /proc",
                drop_stops_the_tree:
                    "a fake starts no process tree whose death the test could see in /proc",
                no_hang_on_a_leftover:
                    "needs a real process that outlives the command and holds its output open",
                stopping_a_job_stops_its_tree:
                    "a fake job has no processes (and no pid) to stop",
                a_stopped_command_is_detected:
                    "needs a real process that the kernel stops (SIGSTOP)",
            }
        }
    };
    // Registration, expanded once in `bashtool_tests::contract`: the
    // promise functions are reachable from nowhere else.
    (@register
        port { $($port:ident,)* }
        process { $($process:ident: $why:literal,)* }
    ) => {
        pub use port::{$($port),*};
        $(
            #[doc = concat!("Not run against env-mock: ", $why, ".")]
            pub use process::$process;
        )*
    };
    (@suite $environment:ident, $subject:expr, #[$runtime:meta], every promise;
        port { $($port:ident,)* }
        process { $($process:ident: $why:literal,)* }
    ) => {
        $crate::contract_suite!(@tests $environment, $subject, #[$runtime];
            $($port)* $($process)*);
    };
    (@suite $environment:ident, $subject:expr, #[$runtime:meta], port promises;
        port { $($port:ident,)* }
        process { $($process:ident: $why:literal,)* }
    ) => {
        $crate::contract_suite!(@tests $environment, $subject, #[$runtime]; $($port)*);
    };
    (@tests $environment:ident, $subject:expr, #[$runtime:meta]; $($promise:ident)*) => {
        mod $environment {
            #[allow(unused_imports)]
            use super::*;

            $(
                #[$runtime]
                async fn $promise() {
                    $crate::contract::$promise($subject).await;
                }
            )*
        }
    };
    ($environment:ident, $subject:expr) => {
        $crate::contract_suite!(@promises @suite $environment, $subject,
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)], every promise;);
    };
    ($environment:ident, $subject:expr, port, #[$runtime:meta]) => {
        $crate::contract_suite!(@promises @suite $environment, $subject, #[$runtime],
            port promises;);
    };
}

crate::contract_suite!(@promises @register);
