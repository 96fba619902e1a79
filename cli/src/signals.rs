//! The signals that stop bashtool: SIGTERM (a harness timeout, a service
//! manager), SIGINT (Ctrl-C) and SIGHUP (a closed terminal). They are
//! caught, never left to kill the process: `run` and `call` cancel the
//! call, which stops the command's whole process tree instead of leaving
//! it running; the servers (`mcp`, `mcp --http`, `serve`) stop their
//! commands and jobs, then exit. On Windows the same three are Ctrl-C,
//! Ctrl-Break and the console closing.

use anyhow::Context as _;
#[cfg(unix)]
use tokio::signal::unix::{Signal, SignalKind, signal};
#[cfg(windows)]
use tokio::signal::windows::{CtrlBreak, CtrlC, CtrlClose, ctrl_break, ctrl_c, ctrl_close};
use tokio_util::sync::CancellationToken;

/// SIGTERM, SIGINT and SIGHUP, caught from [`StopSignals::install`] on.
#[cfg(unix)]
pub struct StopSignals {
    terminate: Signal,
    interrupt: Signal,
    hangup: Signal,
}

/// Ctrl-C, Ctrl-Break and the console closing, caught from
/// [`StopSignals::install`] on.
#[cfg(windows)]
pub struct StopSignals {
    interrupt: CtrlC,
    brk: CtrlBreak,
    close: CtrlClose,
}

#[cfg(windows)]
impl StopSignals {
    /// Catches the three events from now on. Needs a tokio runtime.
    pub fn install() -> anyhow::Result<Self> {
        Ok(Self {
            interrupt: ctrl_c().context("installing a Ctrl-C handler")?,
            brk: ctrl_break().context("installing a Ctrl-Break handler")?,
            close: ctrl_close().context("installing a console-close handler")?,
        })
    }

    /// Waits for the next of them and returns its name, in the Unix
    /// spelling the logs use (`"SIGINT"`, ...). Cancel safe.
    pub async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.brk.recv() => "SIGBREAK",
            _ = self.close.recv() => "SIGHUP",
        }
    }
}

#[cfg(unix)]
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
