//! Where commands run when they do not run here: `--remote LINE` (the line
//! starts `bashtool serve` over there) or `--remote-shell LINE` (the line
//! opens a POSIX shell over there, and bashtool starts its own `serve`
//! there, uploading a Linux build first when none of this version is
//! there), and the progress of that upload on stderr.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;

use anyhow::Context as _;
use bashtool_env_remote::{
    BootstrapEvent, CommandTransport, ProgressSink, RemoteConfig, RemoteExec, ServeBinary,
    ShellTransport, Transport,
};

use crate::options::RemoteArgs;

/// A remote environment, as the flags (or the config file) name it.
#[derive(Debug, Clone)]
pub enum Remote {
    /// `--remote LINE`.
    Serve(String),
    /// `--remote-shell LINE`.
    Shell {
        line: String,
        /// The build to upload, if there is one.
        binary: Option<ServeBinary>,
        /// What the `serve` over there is started with.
        serve_args: Vec<String>,
    },
}

impl Remote {
    /// The remote the flags name, else `configured` (the config file's
    /// `remote`); `None` when commands run here. `serve_args` are what a
    /// `serve` started by `--remote-shell` gets ([`crate::options::ToolArgs::serve_args`]).
    /// A `--serve-binary` that cannot be uploaded is refused now, before
    /// anything runs.
    pub fn from_flags(
        remote: &RemoteArgs,
        serve_args: Vec<String>,
        configured: Option<&String>,
    ) -> anyhow::Result<Option<Self>> {
        if let Some(line) = &remote.remote_shell {
            let binary = match &remote.serve_binary {
                Some(path) => Some(
                    ServeBinary::open(path)
                        .map_err(anyhow::Error::from)
                        .context("--serve-binary")?,
                ),
                None => ServeBinary::current_exe(),
            };
            return Ok(Some(Self::Shell {
                line: line.clone(),
                binary,
                serve_args,
            }));
        }
        Ok(remote
            .remote
            .clone()
            .or_else(|| configured.cloned())
            .map(Self::Serve))
    }

    /// The environment over there, with `config`; it connects on first use.
    pub fn exec(&self, config: RemoteConfig) -> RemoteExec {
        let transport: Arc<dyn Transport> = match self {
            Self::Serve(line) => Arc::new(CommandTransport::new(line.clone())),
            Self::Shell {
                line,
                binary,
                serve_args,
            } => Arc::new(
                ShellTransport::new(line.clone(), binary.clone())
                    .serve_args(serve_args.clone())
                    .answer_timeout(config.handshake_timeout)
                    .on_progress(progress_on_stderr(line.clone())),
            ),
        };
        RemoteExec::new(transport, config)
    }
}

/// Prints an upload's progress on stderr: a line when it starts and one
/// when it is done, and the percentage between them on a terminal.
fn progress_on_stderr(line: String) -> ProgressSink {
    let terminal = std::io::stderr().is_terminal();
    Arc::new(move |event: BootstrapEvent<'_>| {
        let mut stderr = std::io::stderr().lock();
        let _ = match event {
            BootstrapEvent::Uploading {
                directory,
                sent: 0,
                total,
            } => writeln!(
                stderr,
                "bashtool: uploading bashtool {} ({}) to {directory} through `{line}`",
                env!("CARGO_PKG_VERSION"),
                mebibytes(total)
            ),
            BootstrapEvent::Uploading { sent, total, .. } if terminal => write!(
                stderr,
                "\rbashtool: {:>3}% of {}",
                sent * 100 / total.max(1),
                mebibytes(total)
            ),
            BootstrapEvent::Uploaded {
                directory,
                total,
                elapsed,
            } => writeln!(
                stderr,
                "{}bashtool: uploaded {} in {:.1} s, checked (size and SHA-256) and installed as {directory}/bashtool",
                if terminal { "\r" } else { "" },
                mebibytes(total),
                elapsed.as_secs_f64()
            ),
            BootstrapEvent::Retrying { reason } => writeln!(
                stderr,
                "{}bashtool: the upload arrived damaged ({reason}); it was deleted over there unused, sending it again",
                if terminal { "\n" } else { "" }
            ),
            BootstrapEvent::NoBash => writeln!(
                stderr,
                "bashtool: no bash over there (`{line}`): commands run with sh"
            ),
            // The percentage off a terminal (a log gets the two lines
            // only), and events this version does not print.
            _ => Ok(()),
        };
    })
}

fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
