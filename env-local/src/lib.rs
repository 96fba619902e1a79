//! `bashtool-env-local` (minimal first version; the hardened one replaces it).
#![allow(clippy::pedantic, clippy::collapsible_if, missing_docs)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use bashtool_core::{
    CommandExec, CommandResult, ExecError, OutputBuffer, OutputConfig, SpawnOptions, Stream,
};
use tokio::io::AsyncReadExt;

mod session;
pub use session::{Session, SessionConfig};

#[derive(Debug, Clone)]
pub struct LocalConfig {
    pub shell: PathBuf,
    pub working_directory: PathBuf,
    pub env: BTreeMap<String, String>,
    pub kill_grace: Duration,
    pub output: OutputConfig,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            shell: PathBuf::from("bash"),
            working_directory: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            env: BTreeMap::new(),
            kill_grace: Duration::from_secs(2),
            output: OutputConfig::default(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct LocalExec {
    config: LocalConfig,
}

impl LocalExec {
    pub fn new(config: LocalConfig) -> Self {
        Self { config }
    }

    pub fn config(&self) -> &LocalConfig {
        &self.config
    }
}

#[async_trait::async_trait]
impl CommandExec for LocalExec {
    async fn spawn(
        &self,
        command: &str,
        options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let cwd = options.cwd.as_ref().map_or_else(
            || self.config.working_directory.clone(),
            |cwd| self.config.working_directory.join(cwd),
        );
        if !cwd.exists() {
            return Err(ExecError::MissingDirectory { path: cwd });
        }
        let start = Instant::now();
        let mut child = tokio::process::Command::new(&self.config.shell)
            .arg("-c")
            .arg(command)
            .current_dir(&cwd)
            .envs(&self.config.env)
            .envs(&options.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| ExecError::Spawn {
                program: self.config.shell.display().to_string(),
                source,
            })?;
        let mut stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let mut output = OutputBuffer::new(&self.config.output);
        let mut out_buf = vec![0u8; 65536];
        let mut err_buf = vec![0u8; 65536];
        let (mut out_open, mut err_open) = (true, true);
        let deadline = options
            .timeout
            .map(|timeout| tokio::time::Instant::now() + timeout);
        let mut timed_out = false;
        let mut cancelled = false;
        while out_open || err_open {
            let sleep = async {
                match deadline {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                read = stdout.read(&mut out_buf), if out_open => match read {
                    Ok(0) | Err(_) => out_open = false,
                    Ok(count) => { let text = String::from_utf8_lossy(&out_buf[..count]); options.emit(Stream::Stdout, &text); output.push(Stream::Stdout, &text); }
                },
                read = stderr.read(&mut err_buf), if err_open => match read {
                    Ok(0) | Err(_) => err_open = false,
                    Ok(count) => { let text = String::from_utf8_lossy(&err_buf[..count]); options.emit(Stream::Stderr, &text); output.push(Stream::Stderr, &text); }
                },
                () = sleep => { timed_out = true; break; }
                () = options.cancel.cancelled() => { cancelled = true; break; }
            }
        }
        if let Some(pid) = child.id() {
            if timed_out || cancelled {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        let status = child.wait().await.ok();
        output.finish();
        use std::os::unix::process::ExitStatusExt;
        Ok(CommandResult {
            exit_code: status.and_then(|status| status.code()),
            signal: status.and_then(|status| status.signal()).map(|signal| {
                nix::sys::signal::Signal::try_from(signal).map_or_else(
                    |_| format!("signal {signal}"),
                    |signal| signal.as_str().to_owned(),
                )
            }),
            duration: start.elapsed(),
            timed_out,
            cancelled,
            output,
            log_file: None,
            notes: Vec::new(),
            background: None,
            shell: None,
            working_directory: Some(cwd),
        })
    }
}
