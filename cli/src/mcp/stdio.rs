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
//! terminal, a file, no `/proc`) keeps tokio's blocking-pool streams.

use std::io;
use std::os::fd::{AsFd, AsRawFd as _, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileTypeExt as _;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use nix::sys::socket::{MsgFlags, SockType, getsockopt, recv, send, sockopt};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

/// What the server reads its messages from.
pub type Input = Box<dyn AsyncRead + Unpin + Send>;
/// What the server writes its messages to.
pub type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// The server's stdin.
pub fn input() -> Input {
    reader_for(io::stdin().as_fd())
        .ok()
        .flatten()
        .unwrap_or_else(|| Box::new(tokio::io::stdin()))
}

/// The server's stdout.
pub fn output() -> Output {
    writer_for(io::stdout().as_fd())
        .ok()
        .flatten()
        .unwrap_or_else(|| Box::new(tokio::io::stdout()))
}

/// What a descriptor is, as far as choosing how to drive it goes.
enum Kind {
    Pipe,
    StreamSocket,
    Other,
}

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
struct Socket {
    fd: AsyncFd<OwnedFd>,
}

impl Socket {
    fn new(fd: BorrowedFd<'_>) -> io::Result<Self> {
        let copy = fd.try_clone_to_owned()?;
        // SAFETY: the `OwnedFd` moves into the `AsyncFd`, which keeps it
        // open and unchanged until it is dropped.
        #[allow(unsafe_code)]
        let registered = unsafe { AsyncFd::register(copy) };
        Ok(Self {
            fd: registered.map_err(io::Error::from)?,
        })
    }
}

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
    fn a_file_or_a_datagram_socket_keeps_the_blocking_pool() {
        let file = tempfile::tempfile().expect("file");
        let (datagram, _other) = std::os::unix::net::UnixDatagram::pair().expect("pair");
        for fd in [file.as_fd(), datagram.as_fd()] {
            assert!(reader_for(fd).expect("reader").is_none());
            assert!(writer_for(fd).expect("writer").is_none());
        }
    }
}
