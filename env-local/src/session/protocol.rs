//! Records the shell writes on the control FIFO. Only the driver writes
//! there: the shell opens it for each record and holds no descriptor of it
//! while a command runs, and a status counts only with the call's nonce,
//! which the shell reads after the command. So nothing a command prints can
//! be taken for a record.
//!
//! Each record ends with a NUL (the one byte no path can contain):
//! - `R`: the shell finished starting.
//! - `W`: the shell finished writing a snapshot asked for by a line.
//! - `<pid>\n...S <id> <nonce> <status> P<cwd>`: call `<id>` ended with
//!   `<status>`; the pids before it are background jobs it left running;
//!   `<cwd>` runs to the end. (No newline after the status: the shell
//!   writes up to each newline with its own write(2), and each wakes us.)

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record {
    Ready,
    Saved,
    Status {
        id: u64,
        nonce: String,
        status: i32,
        jobs: Vec<u32>,
        cwd: PathBuf,
    },
    /// Anything else (never written by the driver; ignored).
    Unknown,
}

/// Takes every complete record out of `pending`, leaving a partial one.
pub(crate) fn take_records(pending: &mut Vec<u8>) -> Vec<Record> {
    let mut records = Vec::new();
    let mut start = 0;
    while let Some(length) = memchr::memchr(0, &pending[start..]) {
        records.push(parse(&pending[start..start + length]));
        start += length + 1;
    }
    pending.drain(..start);
    records
}

fn parse(record: &[u8]) -> Record {
    match record.first() {
        Some(b'R') => Record::Ready,
        Some(b'W') => Record::Saved,
        Some(b'S' | b'0'..=b'9') => parse_status(record).unwrap_or(Record::Unknown),
        _ => Record::Unknown,
    }
}

fn parse_status(record: &[u8]) -> Option<Record> {
    let mut jobs = Vec::new();
    let mut rest = record;
    // Pid lines are digits only, so the first line that is not is the
    // status.
    while rest.first().is_some_and(u8::is_ascii_digit) {
        let end = rest.iter().position(|&byte| byte == b'\n')?;
        jobs.push(std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?);
        rest = &rest[end + 1..];
    }
    // `S <id> <nonce> <status> P<cwd>`: the cwd, which may hold spaces and
    // newlines, is everything after the fourth space.
    let mut fields = rest.splitn(5, |&byte| byte == b' ');
    if fields.next()? != b"S" {
        return None;
    }
    let mut field = || std::str::from_utf8(fields.next()?).ok();
    let id = field()?.parse().ok()?;
    let nonce = field()?.to_owned();
    let status = field()?.parse().ok()?;
    let cwd = fields.next()?.strip_prefix(b"P")?;
    Some(Record::Status {
        id,
        nonce,
        status,
        jobs,
        cwd: PathBuf::from(OsString::from_vec(cwd.to_vec())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_with_jobs_and_a_cwd_with_newlines() {
        let mut pending = b"R\x0041\n42\nS 3 n3 127 P/tmp/a b\nPb\0S 4".to_vec();
        let records = take_records(&mut pending);
        assert_eq!(
            records,
            vec![
                Record::Ready,
                Record::Status {
                    id: 3,
                    nonce: "n3".to_owned(),
                    status: 127,
                    jobs: vec![41, 42],
                    cwd: PathBuf::from("/tmp/a b\nPb"),
                }
            ]
        );
        assert_eq!(pending, b"S 4");
    }

    #[test]
    fn records_in_other_shapes_are_unknown() {
        let mut pending = b"S 1 n1 0\nP/\0S 1 n1 0 /\0S 1 n1 x P/\x004x\nS 1 n1 0 P/\0".to_vec();
        assert_eq!(take_records(&mut pending), vec![Record::Unknown; 4]);
    }

    #[test]
    fn status_without_jobs() {
        let mut pending = b"S 1 n1 0 P/\0".to_vec();
        assert_eq!(
            take_records(&mut pending),
            vec![Record::Status {
                id: 1,
                nonce: "n1".to_owned(),
                status: 0,
                jobs: vec![],
                cwd: PathBuf::from("/"),
            }]
        );
    }
}
