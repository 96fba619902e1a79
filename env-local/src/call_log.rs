//! Per-call log files in env-local's capped log directory, created only when
//! the command printed something: a silent command (`true`, `cd`, `export`)
//! should not pay for creating a file (~0.1 ms on ext4), and its log would
//! hold nothing worth reading. Used by `LocalExec` and by sessions.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use bashtool_core::OutputCapture;

use crate::logs::{LogDir, LogHandle, LogWriter};

/// Characters of the command kept for the log file's name.
const NAME_CHARS: usize = 64;

/// A log writer that keeps the `$ command` header in memory and creates the
/// file on the first write after it.
struct LazyLog {
    logs: Arc<LogDir>,
    name: String,
    header: Option<Vec<u8>>,
    writer: Option<LogWriter>,
    handle: Arc<Mutex<Option<LogHandle>>>,
}

impl Write for LazyLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.writer.is_none() {
            if self.header.is_none() {
                self.header = Some(bytes.to_vec());
                return Ok(bytes.len());
            }
            let (mut writer, handle) = self.logs.create_log(&self.name).map_err(|error| {
                std::io::Error::new(
                    error.kind(),
                    format!(
                        "could not create a log file in {}: {error}",
                        self.logs.path().display()
                    ),
                )
            })?;
            writer.write_all(self.header.as_deref().unwrap_or_default())?;
            self.writer = Some(writer);
            *self.handle.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
        }
        match &mut self.writer {
            Some(writer) => writer.write(bytes),
            None => Ok(bytes.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.writer {
            Some(writer) => writer.flush(),
            None => Ok(()),
        }
    }
}

/// What the call keeps of its log after handing the writer to the buffer.
pub(crate) struct CallLog {
    handle: Arc<Mutex<Option<LogHandle>>>,
}

impl CallLog {
    /// Attaches a log that is created lazily in `logs` to `output`.
    pub(crate) fn open(logs: &Arc<LogDir>, output: &OutputCapture, command: &str) -> Self {
        let handle = Arc::new(Mutex::new(None));
        // The file's name is made of the command: masked, like its header.
        let name = match output.redactor() {
            Some(redactor) => redactor.redact(command).chars().take(NAME_CHARS).collect(),
            None => command.chars().take(NAME_CHARS).collect(),
        };
        let writer = LazyLog {
            logs: Arc::clone(logs),
            name,
            header: None,
            writer: None,
            handle: Arc::clone(&handle),
        };
        output.attach_log(Box::new(writer), command);
        Self { handle }
    }

    fn with_handle<T>(&self, read: impl FnOnce(&LogHandle) -> Option<T>) -> Option<T> {
        self.handle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(read)
    }

    /// The log file, if the command wrote anything.
    pub(crate) fn path(&self) -> Option<std::path::PathBuf> {
        self.with_handle(|handle| Some(handle.path.clone()))
    }

    /// The note for a log cut at its size cap.
    pub(crate) fn truncation_note(&self) -> Option<String> {
        self.with_handle(LogHandle::truncation_note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bashtool_core::Stream;

    #[test]
    fn creates_the_file_only_when_there_is_output() {
        let dir = tempfile::tempdir().expect("temp dir");
        let logs = Arc::new(LogDir::new(dir.path().to_path_buf(), 10, 1 << 20));
        let output = OutputCapture::default();
        let silent = CallLog::open(&logs, &output, "cd /");
        output.finish();
        assert_eq!(silent.path(), None);
        let output = OutputCapture::default();
        let noisy = CallLog::open(&logs, &output, "echo hi");
        output.push(Stream::Stdout, b"hi\n");
        output.finish();
        let path = noisy.path().expect("log file");
        assert_eq!(
            std::fs::read_to_string(path).expect("read"),
            "$ echo hi\nstdout:\nhi\n"
        );
    }
}
