//! The signals that stop bashtool: SIGTERM (a harness timeout, a service
//! manager), SIGINT (Ctrl-C) and SIGHUP (a closed terminal). They are
//! caught, never left to kill the process: `run` and `call` cancel the
//! call, which stops the command's whole process tree instead of leaving
//! it running; the servers (`mcp`, `mcp --http`, `serve`) stop their
//! commands and jobs, then exit.

use anyhow::Context as _;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// SIGTERM, SIGINT and SIGHUP, caught from [`StopSignals::install`] on.
pub struct StopSignals {
    terminate: Signal,
    interrupt: Signal,
    hangup: Signal,
}

impl StopSignals {
    /// Catches the three signals from now on. Needs a tokio runtime.
    pub fn install() -> anyhow::Result<Self> {
        Ok(Self {
            terminate: signal(SignalKind::terminate()).context("installing a SIGTERM handler")?,
            interrupt: signal(SignalKind::interrupt()).context("installing a SIGINT handler")?,
            hangup: signal(SignalKind::hangup()).context("installing a SIGHUP handler")?,
        })
    }

    /// Waits for the next of them and returns its name (`"SIGTERM"`, ...).
    ///
    /// Cancel safe, as tokio's `Signal::recv` is: in a `select!` whose
    /// other branch wins, a signal that arrived meanwhile is not lost but
    /// returned by the next call.
    pub async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.hangup.recv() => "SIGHUP",
        }
    }
}

/// Cancels `cancel` on the first of the three signals. Needs a tokio
/// runtime.
pub fn cancel_on_signals(cancel: CancellationToken) -> anyhow::Result<()> {
    let mut signals = StopSignals::install()?;
    tokio::spawn(async move {
        signals.next().await;
        cancel.cancel();
    });
    Ok(())
}
