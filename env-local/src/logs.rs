//! The log directory: one log file per call, total size and count capped,
//! oldest removed first; and the output files of background jobs.
//!
//! A log that cannot be created or written never fails a call: the call
//! runs without one and says so.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Buffer of the log writer: few syscalls for chatty commands.
const LOG_BUFFER: usize = 256 * 1024;
/// Longest part of the command used in a file name.
const MAX_SLUG_CHARS: usize = 40;

#[derive(Debug)]
struct Record {
    path: PathBuf,
    size: Arc<AtomicU64>,
    open: Arc<AtomicBool>,
}

#[derive(Debug, Default)]
struct State {
    sequence: u64,
    logs: VecDeque<Record>,
}

/// The log directory of one environment.
#[derive(Debug)]
pub struct LogDir {
    dir: PathBuf,
    max_files: usize,
    max_bytes: u64,
    state: Mutex<State>,
}

/// A log file being written: a buffered writer that stops at the size cap.
#[derive(Debug)]
pub struct LogWriter {
    file: BufWriter<File>,
    written: Arc<AtomicU64>,
    limit: u64,
    truncated: Arc<AtomicBool>,
    open: Arc<AtomicBool>,
}

/// What the caller keeps of a log after handing its writer to the buffer.
#[derive(Debug, Clone)]
pub struct LogHandle {
    pub path: PathBuf,
    written: Arc<AtomicU64>,
    truncated: Arc<AtomicBool>,
    limit: u64,
}

impl LogHandle {
    /// The note to give the model when the log was cut at the cap.
    pub fn truncation_note(&self) -> Option<String> {
        self.truncated.load(Ordering::Relaxed).then(|| {
            format!(
                "the log file stops at {} bytes, its size cap; the rest of the output was not logged",
                self.limit
            )
        })
    }

    pub fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

impl Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.truncated.load(Ordering::Relaxed) {
            // Swallow: the output buffer goes on counting lines for the model.
            return Ok(bytes.len());
        }
        let written = self.written.load(Ordering::Relaxed);
        let room = self.limit.saturating_sub(written);
        if (bytes.len() as u64) > room {
            let fits = usize::try_from(room).unwrap_or(usize::MAX);
            self.file.write_all(&bytes[..fits])?;
            let marker = format!(
                "\n[log truncated: the log size cap of {} bytes was reached]\n",
                self.limit
            );
            self.file.write_all(marker.as_bytes())?;
            self.written
                .store(written + room + marker.len() as u64, Ordering::Relaxed);
            self.truncated.store(true, Ordering::Relaxed);
            return Ok(bytes.len());
        }
        self.file.write_all(bytes)?;
        self.written
            .store(written + bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        let _ = self.file.flush();
        self.open.store(false, Ordering::Relaxed);
    }
}

/// A short, file-name-safe version of the command (`cargo-test`).
fn slug(command: &str) -> String {
    let mut slug = String::new();
    for character in command.chars() {
        if slug.chars().count() >= MAX_SLUG_CHARS {
            break;
        }
        if character.is_ascii_alphanumeric() || character == '_' {
            slug.push(character);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "command".to_owned()
    } else {
        slug.to_owned()
    }
}

impl LogDir {
    pub fn new(dir: PathBuf, max_files: usize, max_bytes: u64) -> Self {
        Self {
            dir,
            max_files: max_files.max(1),
            max_bytes,
            state: Mutex::new(State::default()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn next_path(
        &self,
        state: &mut State,
        prefix: &str,
        command: &str,
        extension: &str,
    ) -> PathBuf {
        state.sequence += 1;
        self.dir.join(format!(
            "{prefix}{:05}-{}.{extension}",
            state.sequence,
            slug(command)
        ))
    }

    fn create_new(&self, path: &Path) -> std::io::Result<File> {
        std::fs::create_dir_all(&self.dir)?;
        OpenOptions::new().write(true).create_new(true).open(path)
    }

    /// Creates the log file of a new call, removing the oldest logs first
    /// when over the caps.
    pub fn create_log(&self, command: &str) -> std::io::Result<(LogWriter, LogHandle)> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.prune(&mut state);
        let (path, file) = loop {
            let path = self.next_path(&mut state, "", command, "log");
            match self.create_new(&path) {
                Ok(file) => break (path, file),
                // Another process shares this directory: take the next number.
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        };
        let written = Arc::new(AtomicU64::new(0));
        let truncated = Arc::new(AtomicBool::new(false));
        let open = Arc::new(AtomicBool::new(true));
        state.logs.push_back(Record {
            path: path.clone(),
            size: Arc::clone(&written),
            open: Arc::clone(&open),
        });
        let writer = LogWriter {
            file: BufWriter::with_capacity(LOG_BUFFER, file),
            written: Arc::clone(&written),
            limit: self.max_bytes,
            truncated: Arc::clone(&truncated),
            open,
        };
        let handle = LogHandle {
            path,
            written,
            truncated,
            limit: self.max_bytes,
        };
        Ok((writer, handle))
    }

    /// Creates the output file of a background job. Job files are not
    /// rotated: a running job must keep its file.
    pub fn create_job_output(&self, command: &str) -> std::io::Result<(PathBuf, File)> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let path = self.next_path(&mut state, "job-", command, "out");
            match self.create_new(&path) {
                Ok(file) => return Ok((path, file)),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
    }

    /// Forgets a log that could not be completed (and removes its file).
    pub fn discard(&self, path: &Path) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.logs.retain(|record| record.path != path);
        let _ = std::fs::remove_file(path);
    }

    /// Removes the oldest closed logs until one more fits in the caps.
    fn prune(&self, state: &mut State) {
        let mut total: u64 = state
            .logs
            .iter()
            .map(|record| record.size.load(Ordering::Relaxed))
            .sum();
        let mut count = state.logs.len();
        let mut index = 0;
        while (count >= self.max_files || total >= self.max_bytes) && index < state.logs.len() {
            if state.logs[index].open.load(Ordering::Relaxed) {
                // Still being written by a running call: keep it.
                index += 1;
                continue;
            }
            if let Some(record) = state.logs.remove(index) {
                let _ = std::fs::remove_file(&record.path);
                total -= record.size.load(Ordering::Relaxed);
                count -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_short_and_safe() {
        assert_eq!(slug("cargo test --workspace"), "cargo-test-workspace");
        assert_eq!(slug("../../etc/passwd"), "etc-passwd");
        assert_eq!(slug("   "), "command");
        assert_eq!(slug(&"x".repeat(100)).len(), MAX_SLUG_CHARS);
    }

    #[test]
    fn caps_the_number_of_logs_removing_the_oldest() {
        let temp = tempfile::tempdir().expect("tempdir");
        let logs = LogDir::new(temp.path().join("logs"), 2, u64::MAX);
        let mut paths = Vec::new();
        for command in ["one", "two", "three"] {
            let (mut writer, handle) = logs.create_log(command).expect("log");
            writer.write_all(b"x").expect("write");
            drop(writer);
            paths.push(handle.path);
        }
        assert!(!paths[0].exists());
        assert!(paths[1].exists() && paths[2].exists());
    }

    #[test]
    fn cuts_a_log_at_the_byte_cap() {
        let temp = tempfile::tempdir().expect("tempdir");
        let logs = LogDir::new(temp.path().to_path_buf(), 10, 10);
        let (mut writer, handle) = logs.create_log("big").expect("log");
        writer.write_all(b"0123456").expect("write");
        writer.write_all(b"789abcdef").expect("write");
        writer.write_all(b"more").expect("write");
        drop(writer);
        let text = std::fs::read_to_string(&handle.path).expect("read");
        assert_eq!(
            text,
            "0123456789\n[log truncated: the log size cap of 10 bytes was reached]\n"
        );
        assert!(handle.truncation_note().is_some());
    }
}
