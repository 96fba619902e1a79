//! Descriptors the process layer hands out safely: pidfds and descriptors
//! registered with tokio's reactor. (Registering a raw descriptor is
//! `unsafe` in tokio: nothing may close or replace it while the
//! registration lives. An owning type moved into a [`Registered`], which
//! never hands it out mutably, guarantees that, so [`register`] is safe to
//! call.)

use std::os::fd::{AsRawFd, OwnedFd};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// A type that owns one descriptor for its whole life and always gives it
/// back from `as_raw_fd`: what tokio needs of a registered descriptor.
/// Sealed: implemented here for the types that are so.
pub trait OwnsDescriptor: AsRawFd + sealed::Sealed {}

pub(crate) mod sealed {
    pub trait Sealed {}
    impl Sealed for std::os::fd::OwnedFd {}
    impl Sealed for super::EpollSet {}
}

impl OwnsDescriptor for OwnedFd {}
impl OwnsDescriptor for EpollSet {}

/// An epoll set that tokio can watch (it is readable when one of its
/// descriptors is): a level-triggered set of our own reports only what
/// holds now, where tokio keeps a hang-up it saw for the life of a
/// registration.
#[derive(Debug)]
pub struct EpollSet(nix::sys::epoll::Epoll);

impl EpollSet {
    /// The set, ready to register.
    pub fn new(set: nix::sys::epoll::Epoll) -> Self {
        Self(set)
    }
}

impl AsRawFd for EpollSet {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.0.as_raw_fd()
    }
}

impl std::ops::Deref for EpollSet {
    type Target = nix::sys::epoll::Epoll;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// A descriptor's owner registered with tokio's reactor. It derefs to the
/// `AsyncFd` for waiting and reading, but only shared: `AsyncFd::get_mut`
/// would let a caller swap the descriptor under the registration.
#[derive(Debug)]
pub struct Registered<T: AsRawFd>(AsyncFd<T>);

impl<T: AsRawFd> std::ops::Deref for Registered<T> {
    type Target = AsyncFd<T>;

    fn deref(&self) -> &AsyncFd<T> {
        &self.0
    }
}

/// `owner`, registered with the current runtime for `interest`. Panics
/// outside a runtime, as tokio does.
pub fn register<T: OwnsDescriptor>(owner: T, interest: Interest) -> std::io::Result<Registered<T>> {
    // SAFETY: `OwnsDescriptor` types own their descriptor, never close or
    // replace it through a shared reference, and always return it from
    // `as_raw_fd`; `owner` moves into the `AsyncFd`, which `Registered`
    // never lends mutably, so it stays unchanged until the registration
    // ends.
    unsafe { AsyncFd::register_with_interest(owner, interest) }
        .map(Registered)
        .map_err(|error| error.into_parts().1)
}

/// A pidfd of `pid` (Linux 5.3+). Race-free for our own unreaped child;
/// for another process, check after opening that it is still the process
/// you meant (its start time), since the pid may have been reused.
pub fn open_pidfd(pid: u32) -> std::io::Result<OwnedFd> {
    let pid = rustix::process::Pid::from_raw(
        i32::try_from(pid).map_err(|_| std::io::Error::from_raw_os_error(libc::ESRCH))?,
    )
    .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ESRCH))?;
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).map_err(Into::into)
}

/// Sends `signal` through a pidfd: it reaches the process the pidfd was
/// opened on, never a later process with the same pid.
pub fn pidfd_send_signal(pidfd: &OwnedFd, signal: nix::sys::signal::Signal) -> std::io::Result<()> {
    let signal = rustix::process::Signal::from_named_raw(signal as i32)
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    rustix::process::pidfd_send_signal(pidfd, signal).map_err(Into::into)
}
