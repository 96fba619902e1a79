//! The copier of a background job's output: the job writes into a pipe,
//! and this small shell copies it into the output file, within the file's
//! size cap ([`CapLayout`]): once the output outgrows the cap, the file
//! holds its first part, a marker line that says how many bytes were
//! dropped, and its last part, and a job that prints forever cannot fill
//! the disk while the model still sees its latest output.
//!
//! Why a process of its own: the job outlives the process that started it
//! (`bashtool call` exits at once), so the copier must too; and a copy
//! forked from that process would keep a copy of its memory for as long as
//! the job runs. Why not `RLIMIT_FSIZE` on the job: it applies to every
//! file the job writes (a build's artifacts), and the job gets SIGXFSZ
//! (killed) or `EFBIG` at the cap instead of its output being cut.
//!
//! The copier runs outside the job's sandbox (it is ours, and it needs the
//! log directory, which a sandboxed job may not see), in a session of its
//! own (a stop of the job's process group does not reach it), with `LC_ALL=C`
//! (`dd`'s report is parsed, and the marker's length counted in bytes). It
//! copies with `dd` in blocks that never pass the cap, and past it
//! rewrites the file through a new one renamed over it, so a reader never
//! sees half a rotation. It ends when the pipe ends (every writer of the
//! job gone), after a last rotation that leaves the file a function of the
//! output alone: its first `head` bytes, the marker, its last `tail` bytes.
//!
//! While it runs it holds (as descriptor 3) the lock file that marks the
//! output in use, so no pruning removes it, and it removes that file when
//! done. If copying fails (a full disk), it says so in the file and
//! discards the rest, so the job is not killed by a broken pipe.

use std::ffi::OsString;
use std::os::fd::OwnedFd;

use bashtool_core::{ExecError, format_bytes};

use crate::logs::{CapLayout, JobOutputFile, output_lock_path};
use crate::spawn;
use bashtool_process::Launch;
use bashtool_process::{ChildIo, RootProcess, Sink};

/// `$1` the output file, `$2` its cap, `$3` and `$4` the bytes kept from
/// the start and the end, `$5` the marker's text after the count, `$6` the
/// lock file, then the directories of the job's cgroup (removed when the
/// output ends, if the job's processes are gone by then); stdin the job's
/// output.
const COPIER: &str = r#"out=$1 cap=$2 head=$3 tail=$4 rest=$5 lock=$6
umask 077
size=0 omitted=0 marker= sep= done=
nl='
'
# The first part, the marker with the bytes dropped so far, and the last
# $tail bytes, through a new file renamed over the output.
rotate() {
  if [ -z "$marker" ]; then
    held=$((size - head))
    [ -z "$(head -c "$head" -- "$out" | tail -c 1)" ] || sep=$nl
  else
    held=$((size - head - ${#marker}))
  fi
  omitted=$((omitted + held - tail))
  marker="$sep[... $omitted$rest$nl"
  rm -f -- "$out.part"
  { head -c "$head" -- "$out" && printf %s "$marker" && tail -c "$tail" -- "$out"; } >"$out.part" &&
    mv -f -- "$out.part" "$out" || return 1
  size=$((head + ${#marker} + tail))
}
while :; do
  room=$((cap - size))
  if [ "$room" -le 0 ]; then rotate || break; continue; fi
  # Up to 256 reads of the pipe per dd, never past the cap.
  if [ "$room" -ge 65536 ]; then
    block=65536 count=$((room / 65536))
    [ "$count" -le 256 ] || count=256
  else
    block=$room count=1
  fi
  report=$(dd bs="$block" count="$count" 2>&1 >>"$out") || break
  copied=${report##*"$nl"}
  copied=${copied%% *}
  case $copied in ''|*[!0-9]*) break ;; esac
  if [ "$copied" -eq 0 ]; then done=1; break; fi
  size=$((size + copied))
done
if [ -n "$done" ]; then
  if [ -n "$marker" ] && [ $((size - head - ${#marker})) -gt "$tail" ]; then rotate; fi
else
  printf '\n[bashtool: copying the output into this file failed; the rest of it is discarded]\n' >>"$out"
  cat >/dev/null 2>&1 || while IFS= read -r _; do :; done
fi
rm -f -- "$lock"
# The job's cgroup: its last writer (the supervisor) may still be exiting,
# so a few tries; a process the job left running keeps it, and then the
# process that started the job, or the next bashtool, removes it later.
shift 6
tries=10
while [ $# -gt 0 ] && [ $tries -gt 0 ]; do
  left=
  for dir do rmdir -- "$dir" 2>/dev/null || { [ -d "$dir" ] && left="$left x"; }; done
  [ -z "$left" ] && break
  tries=$((tries - 1))
  sleep 0.1
done
"#;

/// The marker's text after the count of dropped bytes. The count comes
/// first (`[... <count>`), so a reader finds it ([`parse_marker`]).
fn marker_rest(layout: CapLayout) -> String {
    format!(
        " bytes omitted here: this file keeps the first {} and the last {} of the output (its size cap is {}) ...]",
        format_bytes(layout.head),
        format_bytes(layout.tail),
        format_bytes(layout.cap)
    )
}

/// Where the marker of a capped output is: it starts at byte `head` (after
/// a newline when the first part does not end with one), and says how many
/// bytes it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Marker {
    /// Where it starts (the first part's length).
    pub start: u64,
    /// Where the last part starts.
    pub end: u64,
    /// Output bytes dropped between the parts.
    pub omitted: u64,
}

/// The marker in `bytes`, the file's bytes from `head` on (at least the
/// marker's length of them), if the output was capped.
pub(crate) fn parse_marker(head: u64, bytes: &[u8]) -> Option<Marker> {
    let body = bytes.strip_prefix(b"\n").unwrap_or(bytes);
    let after = body.strip_prefix(b"[... ")?;
    let digits = after
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    let omitted: u64 = std::str::from_utf8(&after[..digits]).ok()?.parse().ok()?;
    if !after[digits..].starts_with(b" bytes omitted here") {
        return None;
    }
    let line_end = memchr::memchr(b'\n', body)?;
    let length = (bytes.len() - body.len()) + line_end + 1;
    Some(Marker {
        start: head,
        end: head + length as u64,
        omitted,
    })
}

/// The longest marker: enough bytes to read to find one.
pub(crate) const MAX_MARKER: usize = 512;

/// Starts the copier of `output`, reading the job's output from `pipe`.
/// Its handle must be kept until it exits (it is our child to reap).
pub(crate) fn start(
    output: &JobOutputFile,
    pipe: OwnedFd,
    cgroup_dirs: &[std::path::PathBuf],
) -> Result<RootProcess, ExecError> {
    let layout = output.layout;
    let spawn_error = |source: std::io::Error| ExecError::Spawn {
        program: "sh".to_owned(),
        source,
    };
    let lock = OwnedFd::from(output.lock.try_clone().map_err(spawn_error)?);
    let mut argv: Vec<OsString> = vec![
        "sh".into(),
        "-c".into(),
        COPIER.into(),
        "sh".into(),
        output.path.clone().into(),
        layout.cap.to_string().into(),
        layout.head.to_string().into(),
        layout.tail.to_string().into(),
        marker_rest(layout).into(),
        output_lock_path(&output.path).into(),
    ];
    argv.extend(cgroup_dirs.iter().map(|dir| dir.as_os_str().to_owned()));
    let path =
        std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    let env = vec![
        (OsString::from("PATH"), path),
        (OsString::from("LC_ALL"), OsString::from("C")),
    ];
    let cwd = output.path.parent().map_or_else(
        || std::path::PathBuf::from("/"),
        std::path::Path::to_path_buf,
    );
    let spawned = spawn::launch(
        Launch { argv, env, cwd },
        &[],
        ChildIo {
            stdin_pipe: false,
            stdout: Sink::Null,
            stderr: Sink::Null,
            extra: vec![(pipe, 0), (lock, 3)],
            terminal: None,
        },
        None,
    )?;
    Ok(spawned.root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// Runs the copier script on `stream` (written in chunks of growing
    /// size) with a cap of `cap`; checks after every chunk that the file
    /// stays within the cap. Returns the file's bytes at the end.
    fn copy(stream: &[u8], cap: u64) -> Vec<u8> {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join("job-1.out");
        let lock = dir.path().join("job-1.out.lock");
        std::fs::write(&out, b"").expect("create");
        std::fs::write(&lock, b"").expect("create");
        let layout = CapLayout::for_cap(cap);
        let mut copier = std::process::Command::new("sh")
            .arg("-c")
            .arg(COPIER)
            .arg("sh")
            .arg(&out)
            .args([layout.cap, layout.head, layout.tail].map(|number| number.to_string()))
            .arg(marker_rest(layout))
            .arg(&lock)
            .env("LC_ALL", "C")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let mut input = copier.stdin.take().expect("stdin");
        let mut at = 0;
        let mut length = 1;
        while at < stream.len() {
            let end = (at + length).min(stream.len());
            input.write_all(&stream[at..end]).expect("write");
            at = end;
            length = length * 3 % 70_001 + 1;
            let size = std::fs::metadata(&out).expect("stat").len();
            assert!(size <= layout.cap, "{size} > {}", layout.cap);
        }
        drop(input);
        assert!(copier.wait().expect("wait").success());
        assert!(!lock.exists(), "the copier removes its lock file");
        std::fs::read(&out).expect("read")
    }

    /// `assert_eq!` on big texts, showing where they differ.
    fn assert_same(actual: &[u8], expected: &[u8]) {
        if let Some(at) =
            (0..actual.len().min(expected.len())).find(|&at| actual[at] != expected[at])
        {
            let around = |bytes: &[u8]| {
                String::from_utf8_lossy(&bytes[at.saturating_sub(40)..(at + 80).min(bytes.len())])
                    .into_owned()
            };
            panic!(
                "differ at byte {at}: {:?} vs {:?}",
                around(actual),
                around(expected)
            );
        }
        assert_eq!(actual.len(), expected.len());
    }

    #[test]
    fn output_under_the_cap_is_copied_whole() {
        let stream: Vec<u8> = (0..1000)
            .flat_map(|number| format!("{number}\n").into_bytes())
            .collect();
        assert_same(&copy(&stream, 8192), &stream);
    }

    #[test]
    fn output_over_the_cap_keeps_its_first_and_last_parts_and_says_what_was_dropped() {
        let stream: Vec<u8> = (0..200_000)
            .flat_map(|number| format!("line {number}\n").into_bytes())
            .collect();
        let layout = CapLayout::for_cap(64 * 1024);
        let (head, tail) = (8192_usize, 32768_usize);
        assert_eq!((layout.head, layout.tail), (8192, 32768));
        let omitted = stream.len() - head - tail;
        let mut expected = stream[..head].to_vec();
        expected.extend_from_slice(
            format!(
                "\n[... {omitted} bytes omitted here: this file keeps the first 8.0 KiB and the last 32.0 KiB of the output (its size cap is 64.0 KiB) ...]\n"
            )
            .as_bytes(),
        );
        expected.extend_from_slice(&stream[stream.len() - tail..]);
        let file = copy(&stream, layout.cap);
        assert_same(&file, &expected);
        assert_eq!(
            parse_marker(layout.head, &file[head..]).map(|marker| marker.omitted),
            Some(omitted as u64)
        );
    }

    #[test]
    fn a_marker_is_found_at_the_first_parts_end() {
        let rest = marker_rest(CapLayout::for_cap(64 * 1024));
        let file = format!("\n[... 1234{rest}\nthe last part\n");
        assert_eq!(
            parse_marker(100, file.as_bytes()),
            Some(Marker {
                start: 100,
                end: 100 + file.len() as u64 - 14,
                omitted: 1234
            })
        );
        assert_eq!(
            rest,
            " bytes omitted here: this file keeps the first 8.0 KiB and the last 32.0 KiB of the output (its size cap is 64.0 KiB) ...]"
        );
        assert_eq!(parse_marker(100, b"plain output\n"), None);
        assert_eq!(
            parse_marker(100, b"[... 12 bytes of something else]\n"),
            None
        );
    }
}
