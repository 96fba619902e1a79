//! Interactive jobs started by a host that ignores the signals a command is
//! stopped with, as a server started in the background by a shell without
//! job control does (SIGINT, SIGQUIT) or under `nohup` (SIGHUP). An ignored
//! signal is inherited across exec, so without a reset Ctrl-C would reach a
//! program that ignores it. This binary ignores them for its whole process,
//! which is why these tests have a file of their own.

mod common;

use std::sync::Once;
use std::time::Duration;

use bashtool_env_local::{InteractiveJob, InteractiveOptions, InteractiveState, Key};
use nix::sys::signal::{SigHandler, Signal, signal};
use tokio::time::Instant;

/// Long enough for a loaded machine; the states, not the time, are tested.
const PATIENCE: Duration = Duration::from_secs(20);

const HOST_IGNORED: [Signal; 5] = [
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGHUP,
    Signal::SIGTERM,
    Signal::SIGPIPE,
];

fn ignore_host_signals() {
    static IGNORED: Once = Once::new();
    IGNORED.call_once(|| {
        for host_signal in HOST_IGNORED {
            // SAFETY: SIG_IGN installs no handler; nothing in this test
            // binary waits for these signals.
            #[allow(unsafe_code)]
            unsafe {
                signal(host_signal, SigHandler::SigIgn).expect("ignore");
            }
        }
    });
}

fn start(command: &str) -> InteractiveJob {
    ignore_host_signals();
    common::start_job(command, &[], InteractiveOptions::default())
}

#[tokio::test]
async fn the_program_in_the_terminal_gets_the_default_action_of_signals_the_host_ignores() {
    let mut job = start("grep SigIgn /proc/self/status");
    let done = job.wait_until(Instant::now() + PATIENCE).await;
    assert!(
        matches!(&done.state, InteractiveState::Exited(exit) if exit.code == Some(0)),
        "{done:?}"
    );
    let mask = done
        .text
        .lines()
        .find_map(|line| line.trim().strip_prefix("SigIgn:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no SigIgn line: {done:?}"));
    for host_signal in HOST_IGNORED {
        let bit = 1_u64 << (host_signal as i32 - 1);
        assert_eq!(mask & bit, 0, "{host_signal} still ignored: {done:?}");
    }
}

#[tokio::test]
async fn control_c_interrupts_the_program_though_the_host_ignores_sigint() {
    let mut job = start("sleep 100");
    let running = job
        .wait_until(Instant::now() + Duration::from_millis(500))
        .await;
    assert_eq!(running.state, InteractiveState::Running, "{running:?}");
    let interrupted = job
        .write(
            "",
            &Key::parse_all(&["C-c"]).expect("known key"),
            Instant::now() + PATIENCE,
        )
        .await
        .expect("written");
    assert!(
        matches!(&interrupted.state, InteractiveState::Exited(exit) if exit.signal.as_deref() == Some("SIGINT")),
        "{interrupted:?}"
    );
}
