//! The server's stdin and stdout, driven by the runtime's event loop where
//! they are pipes or stream sockets, which is how clients start a server:
//! Python's `subprocess` gives pipes, Node's `child_process` a socket pair.
//!
//! Why: tokio's `stdin()` and `stdout()` hand every read and every write to
//! the blocking pool, a thread hand-off each way per message. Measured with
//! 8 calls in flight on `bashtool mcp --stateless`: 420 → 326 µs of the
//! server's CPU per call (medians of 6 runs each, in turns), 1060 → 1150
//! calls/s.
//!
//! Neither way changes the descriptors for anyone else holding them (a
//! parent that kept a copy, a shell after the server exits): a pipe is
//! opened again through `/proc/self/fd`, a new open file description whose
//! `O_NONBLOCK` is ours alone; a socket is never switched to non-blocking,
//! each `recv`/`send` asks not to wait (`MSG_DONTWAIT`). Anything else (a
//! terminal, a file, no `/proc`) keeps tokio's blocking-pool streams, as
//! does every descriptor on other systems than Linux (the relay build).
//!
//! Messages arrive one per line, read with a hard cap ([`read_line`],
//! [`MAX_LINE_BYTES`]) by both servers that read lines from a client, MCP
//! over stdio and `bashtool serve`: the rest of an oversized line is
//! skipped without being kept in memory, and the caller answers it with an
//! error carrying the request's id when either end of the line shows it.

use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::{AsFd, AsRawFd as _, BorrowedFd, OwnedFd};
#[cfg(target_os = "linux")]
use std::os::unix::fs::FileTypeExt as _;
#[cfg(target_os = "linux")]
use std::pin::Pin;
#[cfg(target_os = "linux")]
use std::task::{Context, Poll, ready};

#[cfg(target_os = "linux")]
use bashtool_process::Registered;
#[cfg(target_os = "linux")]
use nix::sys::socket::{MsgFlags, SockType, getsockopt, recv, send, sockopt};
use serde_json::Value;
#[cfg(target_os = "linux")]
use tokio::io::ReadBuf;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWrite, BufReader};
#[cfg(target_os = "linux")]
use tokio::net::unix::pipe;

/// Largest message accepted, newline included: a batch of 64 commands of
/// 256 KiB, plus room. rmcp is given the same cap (its own default is 16 MiB,
/// and a line it drops is never answered).
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;
/// How much of each end of an oversized line is kept to find its id.
const ID_WINDOW_BYTES: usize = 256;
/// What the line buffer keeps of its capacity after an oversized line, so
/// that one such line does not hold 32 MiB for the rest of the connection.
const KEPT_CAPACITY: usize = 64 * 1024;

/// What [`read_line`] read.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// The input ended; nothing was read.
    End,
    /// A line is in the buffer (with its newline, unless the input ended
    /// first).
    Complete,
    /// A line over [`MAX_LINE_BYTES`]: read to its end and dropped. `id`
    /// is the request's id if either end of the line shows it, else null.
    Oversized { size: u64, id: Value },
}

/// Reads one line into `line` (cleared first), never keeping more than
/// [`MAX_LINE_BYTES`] of it. Not cancel safe: a caller that stops waiting
/// for it must stop reading `reader`.
pub async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> io::Result<Line> {
    line.clear();
    if (&mut *reader)
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', line)
        .await?
        == 0
    {
        return Ok(Line::End);
    }
    if line.len() <= MAX_LINE_BYTES {
        return Ok(Line::Complete);
    }
    let size = if line.ends_with(b"\n") {
        line.len() as u64
    } else {
        skip_line(reader, line).await?
    };
    let id = oversized_id(&line[..ID_WINDOW_BYTES.min(line.len())], tail(line));
    line.clear();
    line.shrink_to(KEPT_CAPACITY);
    Ok(Line::Oversized { size, id })
}

/// The error text for an oversized line of `size` bytes.
pub fn oversized_message(size: u64) -> String {
    format!(
        "message of {size} bytes is larger than the limit of {} MiB",
        MAX_LINE_BYTES / (1024 * 1024)
    )
}

/// Reads and drops the rest of an oversized line in buffer-sized pieces,
/// keeping only the first [`ID_WINDOW_BYTES`] of `line` and its last
/// [`ID_WINDOW_BYTES`] (where clients often put the id). Returns the
/// line's whole size.
async fn skip_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> io::Result<u64> {
    let mut size = line.len() as u64;
    let mut last = tail(line).to_vec();
    line.truncate(ID_WINDOW_BYTES);
    loop {
        let (consumed, done) = {
            let available = reader.fill_buf().await?;
            if available.is_empty() {
                break;
            }
            let newline = available.iter().position(|byte| *byte == b'\n');
            let take = newline.map_or(available.len(), |index| index + 1);
            last.extend_from_slice(&available[..take]);
            let excess = last.len().saturating_sub(ID_WINDOW_BYTES);
            last.drain(..excess);
            (take, newline.is_some())
        };
        reader.consume(consumed);
        size += consumed as u64;
        if done {
            break;
        }
    }
    line.extend_from_slice(&last);
    Ok(size)
}

fn tail(line: &[u8]) -> &[u8] {
    &line[line.len().saturating_sub(ID_WINDOW_BYTES)..]
}

/// The id of an oversized request, when one of its ends shows it at the top
/// level of the object: `{"jsonrpc":"2.0","id":7,...` or `...},"id":7}`.
/// Best effort: without it the error goes out with a null id.
fn oversized_id(head: &[u8], tail: &[u8]) -> Value {
    let head = String::from_utf8_lossy(head);
    let tail = String::from_utf8_lossy(tail);
    // Before the first nested value, everything is at the top level.
    let head_top = head
        .trim_start()
        .strip_prefix('{')
        .map(|rest| rest.split(['{', '[']).next().unwrap_or_default());
    // After the last nested value closes, likewise.
    let tail_top = tail
        .trim_end()
        .strip_suffix('}')
        .map(|rest| rest.rsplit(['}', ']']).next().unwrap_or_default());
    [head_top, tail_top]
        .into_iter()
        .flatten()
        .find_map(id_in)
        .unwrap_or(Value::Null)
}

/// The value of `"id":` in a run of top-level members, if it is whole.
fn id_in(members: &str) -> Option<Value> {
    let start = members.find("\"id\"")? + 4;
    let value = members[start..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    let end = match value.strip_prefix('"') {
        Some(quoted) => quoted.find('"')? + 2,
        None => value
            .find(|character: char| {
                !(character.is_ascii_alphanumeric() || "-+.".contains(character))
            })
            .unwrap_or(value.len()),
    };
    let id: Value = serde_json::from_str(&value[..end]).ok()?;
    (id.is_number() || id.is_string()).then_some(id)
}

/// What the server reads its messages from.
pub type Input = Box<dyn AsyncRead + Unpin + Send>;
/// What the server writes its messages to.
pub type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// The server's stdin.
pub fn input() -> Input {
    #[cfg(target_os = "linux")]
    if let Ok(Some(reader)) = reader_for(io::stdin().as_fd()) {
        return reader;
    }
    Box::new(tokio::io::stdin())
}

/// A reader of `file` (`bashtool serve` keeps its stdin on a private
/// descriptor): through the event loop where it is a pipe or a stream
/// socket, else through the blocking pool.
#[cfg(target_os = "linux")]
pub fn reader_of(file: std::fs::File) -> Input {
    match reader_for(file.as_fd()) {
        Ok(Some(reader)) => reader,
        _ => Box::new(tokio::fs::File::from_std(file)),
    }
}

/// The server's stdout.
pub fn output() -> Output {
    #[cfg(target_os = "linux")]
    if let Ok(Some(writer)) = writer_for(io::stdout().as_fd()) {
        return writer;
    }
    Box::new(tokio::io::stdout())
}

/// What a descriptor is, as far as choosing how to drive it goes.
#[cfg(target_os = "linux")]
enum Kind {
    Pipe,
    StreamSocket,
    Other,
}

#[cfg(target_os = "linux")]
fn kind_of(fd: BorrowedFd<'_>) -> io::Result<Kind> {
    let file_type = std::fs::File::from(fd.try_clone_to_owned()?)
        .metadata()?
        .file_type();
    if file_type.is_fifo() {
        Ok(Kind::Pipe)
    } else if file_type.is_socket() && getsockopt(&fd, sockopt::SockType)? == SockType::Stream {
        Ok(Kind::StreamSocket)
    } else {
        Ok(Kind::Other)
    }
}

/// A reader of `fd` driven by the event loop, or `None` where only the
/// blocking pool can read it.
#[cfg(target_os = "linux")]
fn reader_for(fd: BorrowedFd<'_>) -> io::Result<Option<Input>> {
    driven(
        fd,
        |path| Ok(Box::new(pipe::OpenOptions::new().open_receiver(path)?) as Input),
        |socket| Box::new(socket) as Input,
    )
}

/// A writer of `fd` driven by the event loop, or `None` where only the
/// blocking pool can write it. A pipe nobody reads any more cannot be
/// opened again (ENXIO): the fallback's first write then fails as it
/// would have.
#[cfg(target_os = "linux")]
fn writer_for(fd: BorrowedFd<'_>) -> io::Result<Option<Output>> {
    driven(
        fd,
        |path| Ok(Box::new(pipe::OpenOptions::new().open_sender(path)?) as Output),
        |socket| Box::new(socket) as Output,
    )
}

/// `fd` as the event loop drives it: a pipe opened again through `path`
/// by `from_pipe`, a stream socket by `from_socket`; `None` for anything
/// else.
#[cfg(target_os = "linux")]
fn driven<T>(
    fd: BorrowedFd<'_>,
    from_pipe: impl FnOnce(String) -> io::Result<T>,
    from_socket: impl FnOnce(Socket) -> T,
) -> io::Result<Option<T>> {
    Ok(match kind_of(fd)? {
        Kind::Pipe => Some(from_pipe(format!("/proc/self/fd/{}", fd.as_raw_fd()))?),
        Kind::StreamSocket => Some(from_socket(Socket::new(fd)?)),
        Kind::Other => None,
    })
}

/// A stream socket read and written without waiting, through a copy of
/// the descriptor registered with the event loop.
#[cfg(target_os = "linux")]
struct Socket {
    fd: Registered<OwnedFd>,
}

#[cfg(target_os = "linux")]
impl Socket {
    fn new(fd: BorrowedFd<'_>) -> io::Result<Self> {
        let copy = fd.try_clone_to_owned()?;
        Ok(Self {
            fd: bashtool_process::register(
                copy,
                tokio::io::Interest::READABLE | tokio::io::Interest::WRITABLE,
            )?,
        })
    }
}

#[cfg(target_os = "linux")]
impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut ready = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match ready.try_io(|fd| Ok(recv(fd.as_raw_fd(), unfilled, MsgFlags::MSG_DONTWAIT)?)) {
                Ok(Ok(read)) => {
                    buf.advance(read);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(error)) if error.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(error)) => return Poll::Ready(Err(error)),
                // Not readable after all: the readiness is cleared; wait again.
                Err(_would_block) => {}
            }
        }
    }
}

#[cfg(target_os = "linux")]
impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        // MSG_NOSIGNAL: a client gone is an error here, not a SIGPIPE.
        let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
        loop {
            let mut ready = ready!(self.fd.poll_write_ready(cx))?;
            match ready.try_io(|fd| Ok(send(fd.as_raw_fd(), bytes, flags)?)) {
                Ok(Err(error)) if error.kind() == io::ErrorKind::Interrupted => {}
                Ok(written) => return Poll::Ready(written),
                Err(_would_block) => {}
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Leaves the socket open, as tokio's stdout does: the client sees the
    /// end when the server exits.
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::os::unix::net::UnixStream;

    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    use serde_json::json;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    fn is_nonblocking(fd: BorrowedFd<'_>) -> bool {
        let flags = fcntl(fd, FcntlArg::F_GETFL).expect("F_GETFL");
        OFlag::from_bits_truncate(flags).contains(OFlag::O_NONBLOCK)
    }

    #[tokio::test]
    async fn a_pipe_is_read_and_written_without_changing_its_descriptors() {
        let (read_end, write_end) = std::io::pipe().expect("pipe");
        let mut reader = reader_for(read_end.as_fd())
            .expect("reader")
            .expect("a pipe is driven by the event loop");
        let mut writer = writer_for(write_end.as_fd())
            .expect("writer")
            .expect("a pipe is driven by the event loop");
        writer.write_all(b"{\"id\":1}\n").await.expect("write");
        let mut line = [0_u8; 9];
        reader.read_exact(&mut line).await.expect("read");
        assert_eq!(&line, b"{\"id\":1}\n");
        // The descriptors we were given stay blocking for whoever else
        // holds them.
        assert!(!is_nonblocking(read_end.as_fd()));
        assert!(!is_nonblocking(write_end.as_fd()));
        // The end of input arrives once every writer is gone.
        drop((writer, write_end));
        let mut rest = Vec::new();
        reader
            .read_to_end(&mut rest)
            .await
            .expect("read to the end");
        assert!(rest.is_empty());
    }

    #[tokio::test]
    async fn a_socket_is_read_and_written_without_changing_its_descriptor() {
        let (ours, mut client) = UnixStream::pair().expect("socket pair");
        let mut reader = reader_for(ours.as_fd())
            .expect("reader")
            .expect("a stream socket is driven by the event loop");
        let mut writer = writer_for(ours.as_fd())
            .expect("writer")
            .expect("a stream socket is driven by the event loop");
        assert!(!is_nonblocking(ours.as_fd()));
        client.write_all(b"request\n").expect("client writes");
        let mut line = [0_u8; 8];
        reader.read_exact(&mut line).await.expect("read");
        assert_eq!(&line, b"request\n");
        writer.write_all(b"answer\n").await.expect("write");
        writer.shutdown().await.expect("shutdown");
        let mut answer = [0_u8; 7];
        client.read_exact(&mut answer).expect("client reads");
        assert_eq!(&answer, b"answer\n");
        // A write bigger than the socket's buffer completes as the client
        // reads (it waits for room instead of failing with EAGAIN).
        let big = vec![b'x'; 4 << 20];
        let reading = std::thread::spawn(move || {
            let mut received = vec![0_u8; 4 << 20];
            client
                .read_exact(&mut received)
                .expect("client reads it all");
            drop(client);
            received
        });
        writer.write_all(&big).await.expect("big write");
        assert_eq!(reading.join().expect("client thread"), big);
        // The client gone: the end of input, and no SIGPIPE on a write.
        let mut rest = Vec::new();
        reader
            .read_to_end(&mut rest)
            .await
            .expect("read to the end");
        assert!(rest.is_empty());
        assert!(writer.write_all(b"late\n").await.is_err());
        assert!(!is_nonblocking(ours.as_fd()));
    }

    #[test]
    fn finds_the_id_of_an_oversized_request_at_either_end() {
        let head = br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"#;
        assert_eq!(oversized_id(head, b"xx\"}}}"), json!(12));
        let tail = br#"aaaa"}},"jsonrpc":"2.0","id":"req-9"}"#;
        assert_eq!(
            oversized_id(br#"{"method":"tools/call","params":{"#, tail),
            json!("req-9")
        );
        // An "id" inside the arguments is not the request's.
        let nested = br#"{"method":"tools/call","params":{"arguments":{"id":3,"#;
        assert_eq!(oversized_id(nested, b"aaaa"), Value::Null);
        assert_eq!(oversized_id(b"garbage", b"garbage"), Value::Null);
    }

    #[tokio::test]
    async fn skips_an_oversized_line_keeping_only_its_ends() {
        let mut line = vec![b'a'; 1000];
        let rest = [vec![b'b'; 5000], b"end\nnext\n".to_vec()].concat();
        let mut reader = BufReader::with_capacity(64, rest.as_slice());
        let size = skip_line(&mut reader, &mut line).await.expect("read");
        assert_eq!(size, 1000 + 5000 + 4);
        assert_eq!(line.len(), 2 * ID_WINDOW_BYTES);
        assert!(line.ends_with(b"bend\n"));
        let mut next = String::new();
        reader.read_to_string(&mut next).await.expect("read");
        assert_eq!(next, "next\n");
    }

    #[tokio::test]
    async fn reads_lines_up_to_the_cap_and_reports_the_ones_over_it() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":4,\"params\":\"{}\"}}\n",
            "x".repeat(MAX_LINE_BYTES)
        );
        let input = format!("{{\"id\":1}}\n{big}{{\"id\":2}}\nlast");
        let mut reader = BufReader::new(input.as_bytes());
        let mut line = Vec::new();
        let mut read = Vec::new();
        loop {
            let outcome = read_line(&mut reader, &mut line).await.expect("read");
            if outcome == Line::End {
                break;
            }
            read.push((outcome, String::from_utf8_lossy(&line).into_owned()));
        }
        assert_eq!(
            read,
            vec![
                (Line::Complete, "{\"id\":1}\n".to_owned()),
                (
                    Line::Oversized {
                        size: big.len() as u64,
                        id: json!(4)
                    },
                    String::new()
                ),
                (Line::Complete, "{\"id\":2}\n".to_owned()),
                (Line::Complete, "last".to_owned()),
            ]
        );
        assert!(line.capacity() <= KEPT_CAPACITY.max(4));
        assert_eq!(
            oversized_message(big.len() as u64),
            format!(
                "message of {} bytes is larger than the limit of 32 MiB",
                big.len()
            )
        );
    }

    #[test]
    fn a_file_or_a_datagram_socket_keeps_the_blocking_pool() {
        let file = tempfile::tempfile().expect("file");
        let (datagram, _other) = std::os::unix::net::UnixDatagram::pair().expect("pair");
        for fd in [file.as_fd(), datagram.as_fd()] {
            assert!(reader_for(fd).expect("reader").is_none());
            assert!(writer_for(fd).expect("writer").is_none());
        }
    }
}
