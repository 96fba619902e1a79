//! Signals to `bashtool run` and `call` (a harness timeout, Ctrl-C, a
//! closed terminal) cancel the call, which stops the command's whole
//! process tree, instead of killing bashtool and leaving the command
//! running.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Cancels `cancel` on SIGTERM, SIGINT or SIGHUP. Needs a tokio runtime.
pub fn cancel_on_signals(cancel: CancellationToken) -> std::io::Result<()> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut hangup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
            _ = hangup.recv() => {}
        }
        cancel.cancel();
    });
    Ok(())
}
