//! Records the shell writes on the control FIFO. Only the driver writes
//! there: the shell opens it for each record and holds no descriptor of it
//! while a command runs, and a status counts only with the call's nonce,
//! which the shell reads after the command. So nothing a command prints can
//! be taken for a record.
//!
//! Each record ends with a NUL (the one byte no path can contain):
//! - `R`: the shell finished starting.
//! - `W`: the shell finished writing a snapshot asked for by a line.
//! - `S <id> <nonce> <status>\n<pid>\n...P<cwd>`: call `<id>` ended with
//!   `<status>`; the pids are background jobs it left running; `<cwd>` runs
//!   to the end.

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
    while let Some(end) = pending.iter().position(|&byte| byte == 0) {
        let record: Vec<u8> = pending.drain(..=end).take(end).collect();
        records.push(parse(&record));
    }
    records
}

fn parse(record: &[u8]) -> Record {
    match record.first() {
        Some(b'R') => Record::Ready,
        Some(b'W') => Record::Saved,
        Some(b'S') => parse_status(record).unwrap_or(Record::Unknown),
        _ => Record::Unknown,
    }
}

fn parse_status(record: &[u8]) -> Option<Record> {
    let first_end = record.iter().position(|&byte| byte == b'\n')?;
    let first = std::str::from_utf8(&record[..first_end]).ok()?;
    let mut words = first.split(' ').skip(1);
    let id = words.next()?.parse().ok()?;
    let nonce = words.next()?.to_owned();
    let status = words.next()?.parse().ok()?;
    let mut jobs = Vec::new();
    let mut position = first_end + 1;
    // Pid lines are digits only, so the first line starting with `P` is the
    // cwd, which may itself contain newlines.
    while record.get(position).is_some_and(u8::is_ascii_digit) {
        let end = record[position..]
            .iter()
            .position(|&byte| byte == b'\n')
            .map_or(record.len(), |offset| position + offset);
        jobs.push(
            std::str::from_utf8(&record[position..end])
                .ok()?
                .parse()
                .ok()?,
        );
        position = end + 1;
    }
    if record.get(position) != Some(&b'P') {
        return None;
    }
    let cwd = PathBuf::from(OsString::from_vec(record[position + 1..].to_vec()));
    Some(Record::Status {
        id,
        nonce,
        status,
        jobs,
        cwd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_with_jobs_and_a_cwd_with_newlines() {
        let mut pending = b"R\0S 3 n3 127\n41\n42\nP/tmp/a\nPb\0S 4".to_vec();
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
                    cwd: PathBuf::from("/tmp/a\nPb"),
                }
            ]
        );
        assert_eq!(pending, b"S 4");
    }

    #[test]
    fn status_without_jobs() {
        let mut pending = b"S 1 n1 0\nP/\0".to_vec();
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
