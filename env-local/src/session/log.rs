//! Per-call log files, created only when the command printed something: a
//! silent command (`cd`, `export`) should not pay for creating a file
//! (~0.1 ms on ext4), and its log would hold nothing worth reading.
//! Minimal on purpose: env-local's log directory with caps replaces it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bashtool_core::{OutputBuffer, OutputConfig};

/// A log writer that keeps the `$ command` header in memory and creates the
/// file on the first write after it.
struct LazyLog {
    path: PathBuf,
    header: Option<Vec<u8>>,
    file: Option<BufWriter<File>>,
    created: Arc<AtomicBool>,
}

impl Write for LazyLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.file.is_none() {
            if self.header.is_none() {
                self.header = Some(bytes.to_vec());
                return Ok(bytes.len());
            }
            if let Some(parent) = self.path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let mut file = BufWriter::new(File::create(&self.path)?);
            file.write_all(self.header.as_deref().unwrap_or_default())?;
            self.file = Some(file);
            self.created.store(true, Ordering::Release);
        }
        match &mut self.file {
            Some(file) => file.write(bytes),
            None => Ok(bytes.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

/// The output buffer of one call and, once it is known, its log file.
pub(crate) struct CallLog {
    path: PathBuf,
    created: Arc<AtomicBool>,
}

impl CallLog {
    /// A buffer that logs to `<dir>/session-<session>-<call>.log`.
    pub(crate) fn open(
        dir: &Path,
        config: &OutputConfig,
        session: u64,
        call: u64,
        command: &str,
    ) -> (Self, OutputBuffer) {
        let path = dir.join(format!("session-{session}-{call}.log"));
        let created = Arc::new(AtomicBool::new(false));
        let writer = LazyLog {
            path: path.clone(),
            header: None,
            file: None,
            created: Arc::clone(&created),
        };
        let buffer = OutputBuffer::with_log(config, Box::new(writer), command);
        (Self { path, created }, buffer)
    }

    /// The log file, if the command wrote anything (call after `finish`).
    pub(crate) fn path(&self) -> Option<PathBuf> {
        self.created
            .load(Ordering::Acquire)
            .then(|| self.path.clone())
    }
}

/// Where session logs go: `<temp>/bashtool-<pid>/`, as for `LocalExec`.
pub(crate) fn default_dir() -> PathBuf {
    std::env::temp_dir().join(format!("bashtool-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bashtool_core::Stream;

    #[test]
    fn creates_the_file_only_when_there_is_output() {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = OutputConfig::default();
        let (silent, mut buffer) = CallLog::open(dir.path(), &config, 1, 1, "cd /");
        buffer.finish();
        assert_eq!(silent.path(), None);
        let (noisy, mut buffer) = CallLog::open(dir.path(), &config, 1, 2, "echo hi");
        buffer.push(Stream::Stdout, "hi\n");
        buffer.finish();
        let path = noisy.path().expect("log file");
        assert_eq!(
            std::fs::read_to_string(path).expect("read"),
            "$ echo hi\nstdout:\nhi\n"
        );
    }
}
