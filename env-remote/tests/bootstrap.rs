//! `ShellTransport` against real shells on this machine (`sh -c LINE`
//! opening dash, bash or busybox's ash with `HOME` and `TMPDIR` in a temp
//! dir): the private directory, the upload and its checks, the second
//! start that uploads nothing, a damaged or cut upload sent again, and the
//! errors for what cannot work. The uploaded "bashtool" is a copy of
//! `/bin/true`: an ELF executable that answers `--version` and, started as
//! `serve`, exits at once, which ends the link. The real `serve` is in
//! the CLI's tests (`cli/tests/bootstrap_*.rs`).

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bashtool_env_remote::{BootstrapEvent, Error, ServeBinary, ShellTransport, Transport};
use tokio::io::AsyncReadExt as _;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A temp dir with `home/` and `tmp/`, and a copy of `/bin/true` to upload.
struct Place {
    _temp: tempfile::TempDir,
    root: PathBuf,
    binary: PathBuf,
}

impl Place {
    fn new() -> Self {
        let temp = tempfile::tempdir().expect("temp dir");
        let root = temp.path().canonicalize().expect("canonical");
        std::fs::create_dir(root.join("home")).expect("home");
        std::fs::create_dir(root.join("tmp")).expect("tmp");
        let binary = root.join("bashtool-build");
        std::fs::copy("/bin/true", &binary).expect("copy /bin/true");
        Self {
            _temp: temp,
            root,
            binary,
        }
    }

    /// A line that opens `shell` with this place's HOME and TMPDIR.
    fn line(&self, shell: &str) -> String {
        format!(
            "HOME='{root}/home' TMPDIR='{root}/tmp' XDG_CACHE_HOME= exec {shell}",
            root = self.root.display()
        )
    }

    fn cache(&self) -> PathBuf {
        self.root.join(format!("home/.cache/bashtool/{VERSION}"))
    }

    fn build(&self) -> ServeBinary {
        ServeBinary::open(&self.binary).expect("an ELF executable")
    }
}

/// The events of a transport, as text.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<String>>>);

impl Events {
    fn sink(&self) -> bashtool_env_remote::ProgressSink {
        let events = Arc::clone(&self.0);
        Arc::new(move |event: BootstrapEvent<'_>| {
            let text = match event {
                BootstrapEvent::Uploading { sent: 0, total, .. } => {
                    format!("uploading {total}")
                }
                BootstrapEvent::Uploading { .. } => return,
                BootstrapEvent::Uploaded {
                    directory, total, ..
                } => format!("uploaded {total} to {directory}"),
                BootstrapEvent::Retrying { reason } => format!("retrying: {reason}"),
                BootstrapEvent::NoBash => "no bash".to_owned(),
                _ => format!("{event:?}"),
            };
            events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(text);
        })
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Connects, then reads the link to its end (the fake serve exits at once;
/// the input is closed first, for a filter in the line that waits for it).
async fn connect(transport: &ShellTransport) -> Result<(), Error> {
    let mut link = transport.connect().await?;
    drop(link.writer);
    let mut rest = Vec::new();
    link.reader
        .read_to_end(&mut rest)
        .await
        .expect("read the link");
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    if let Some(process) = link.process {
        process.finish(Duration::from_secs(5)).await;
    }
    Ok(())
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).expect("metadata").mode() & 0o7777
}

/// The shells to test as the far side: the ones installed.
fn shells() -> Vec<&'static str> {
    ["dash", "bash", "busybox sh"]
        .into_iter()
        .filter(|shell| {
            let program = shell.split(' ').next().unwrap_or_default();
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {program}"))
                .output()
                .is_ok_and(|output| output.status.success())
        })
        .collect()
}

#[tokio::test]
async fn uploads_once_then_starts_what_is_there() {
    for shell in shells() {
        let place = Place::new();
        let events = Events::default();
        let transport =
            ShellTransport::new(place.line(shell), Some(place.build())).on_progress(events.sink());
        connect(&transport).await.expect(shell);
        let size = std::fs::metadata(&place.binary).expect("size").len();
        let cache = place.cache();
        assert_eq!(
            events.take(),
            [
                format!("uploading {size}"),
                format!("uploaded {size} to {}", cache.display())
            ],
            "{shell}"
        );
        let installed = cache.join("bashtool");
        assert_eq!(
            std::fs::read(&installed).expect("installed"),
            std::fs::read(&place.binary).expect("build")
        );
        assert_eq!(mode(&installed), 0o755, "{shell}");
        assert_eq!(mode(&cache), 0o700, "{shell}");
        assert_eq!(mode(cache.parent().expect("parent")), 0o700, "{shell}");
        assert_eq!(
            std::fs::read_dir(&cache).expect("list").count(),
            1,
            "no temp file left"
        );
        // The second start finds it and uploads nothing.
        connect(&transport).await.expect(shell);
        assert_eq!(events.take(), Vec::<String>::new(), "{shell}");
        // Another build of the same version is uploaded over it.
        std::fs::copy("/bin/false", &place.binary).expect("another build");
        let other =
            ShellTransport::new(place.line(shell), Some(place.build())).on_progress(events.sink());
        // `false --version` fails: the upload is refused before it is ever
        // started as serve.
        let error = connect(&other).await.expect_err("false does not run");
        assert!(
            matches!(&error, Error::UploadFailed { stage, .. } if stage == "exec"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn without_a_build_only_what_is_there_is_started() {
    let place = Place::new();
    let none = ShellTransport::new(place.line("sh"), None);
    let error = connect(&none).await.expect_err("nothing to upload");
    assert_eq!(
        error.to_string(),
        format!(
            "`{}`: no bashtool serve {VERSION} in {} over there, and no Linux build to upload; pass --serve-binary PATH with a static build for x86_64 (x86_64-unknown-linux-musl)",
            place.line("sh"),
            place.cache().display()
        )
    );
    let with = ShellTransport::new(place.line("sh"), Some(place.build()));
    connect(&with).await.expect("uploaded");
    connect(&none).await.expect("what is there is started");
}

/// A filter between the link and the shell that damages the first
/// connection's bytes (`flip`: one byte at `offset`; `cut`: everything
/// from `offset` on, closing the shell's input) and passes later
/// connections through.
const FILTER: &str = r#"
import os, sys
state, offset, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
first = not os.path.exists(state)
open(state, "a").close()
position = 0
while True:
    data = os.read(0, 65536)
    if not data:
        break
    if first and mode == "cut" and position + len(data) > offset:
        os.write(1, data[: offset - position])
        sys.exit(0)
    if first and mode == "flip" and position <= offset < position + len(data):
        data = bytearray(data)
        data[offset - position] ^= 0xFF
        data = bytes(data)
    os.write(1, data)
    position += len(data)
"#;

#[tokio::test]
async fn a_damaged_or_cut_upload_is_deleted_and_sent_again() {
    for mode in ["flip", "cut"] {
        let place = Place::new();
        std::fs::write(place.root.join("filter.py"), FILTER).expect("filter");
        let line = format!(
            "python3 '{root}/filter.py' '{root}/state' 6000 {mode} | {shell}",
            root = place.root.display(),
            shell = place.line("sh").replacen("exec ", "", 1),
        );
        let events = Events::default();
        let cache = place.cache();
        let seen_at_retry = Arc::new(Mutex::new(Vec::new()));
        let transport = {
            let sink = events.sink();
            let seen = Arc::clone(&seen_at_retry);
            let cache = cache.clone();
            ShellTransport::new(line, Some(place.build())).on_progress(Arc::new(
                move |event: BootstrapEvent<'_>| {
                    if let BootstrapEvent::Retrying { .. } = event {
                        // What the damaged upload left over there.
                        let left: Vec<String> = std::fs::read_dir(&cache)
                            .map(|entries| {
                                entries
                                    .flatten()
                                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                                    .collect()
                            })
                            .unwrap_or_default();
                        seen.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(left);
                    }
                    sink(event);
                },
            ))
        };
        connect(&transport).await.expect(mode);
        let events = events.take();
        let size = std::fs::metadata(&place.binary).expect("size").len();
        assert_eq!(events.len(), 4, "{mode}: {events:?}");
        assert_eq!(events[0], format!("uploading {size}"));
        assert!(events[1].starts_with("retrying: "), "{mode}: {events:?}");
        if mode == "flip" {
            assert!(
                events[1].ends_with(&format!(
                    "arrived instead of {size} bytes with SHA-256 {}",
                    place.build().sha256()
                )),
                "{events:?}"
            );
        }
        assert_eq!(events[2], format!("uploading {size}"));
        assert_eq!(events[3], format!("uploaded {size} to {}", cache.display()));
        // Nothing of the damaged upload was there to be started.
        assert_eq!(
            *seen_at_retry.lock().unwrap_or_else(PoisonError::into_inner),
            vec![Vec::<String>::new()],
            "{mode}"
        );
        assert_eq!(
            std::fs::read(cache.join("bashtool")).expect("installed"),
            std::fs::read(&place.binary).expect("build")
        );
    }
}

#[tokio::test]
async fn a_directory_that_is_not_private_is_never_used() {
    let place = Place::new();
    let top = place.root.join("home/.cache/bashtool");
    std::fs::create_dir_all(&top).expect("mkdir");
    let events = Events::default();
    let transport =
        ShellTransport::new(place.line("sh"), Some(place.build())).on_progress(events.sink());
    // Ours but open to others: made private, and used.
    std::fs::set_permissions(&top, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    connect(&transport).await.expect("connects");
    assert_eq!(mode(&top), 0o700);
    assert!(events.take()[1].ends_with(&place.cache().display().to_string()));
    if nix::unistd::geteuid().is_root() {
        // Someone else's: the temp dir is used instead.
        std::fs::remove_dir_all(&top).expect("rm");
        std::fs::create_dir(&top).expect("mkdir");
        std::os::unix::fs::chown(&top, Some(65534), Some(65534)).expect("chown");
        connect(&transport).await.expect("connects");
        let uid = nix::unistd::geteuid();
        let fallback = place.root.join(format!("tmp/bashtool-{uid}/{VERSION}"));
        assert_eq!(
            events.take().last().map(String::as_str),
            Some(
                format!(
                    "uploaded {} to {}",
                    place.build().size(),
                    fallback.display()
                )
                .as_str()
            )
        );
        assert_eq!(mode(&fallback), 0o700);
        // And when that one is someone else's too, neither is used.
        let tmp_top = fallback.parent().expect("parent");
        std::fs::remove_dir_all(tmp_top).expect("rm");
        std::fs::create_dir(tmp_top).expect("mkdir");
        std::os::unix::fs::chown(tmp_top, Some(65534), Some(65534)).expect("chown");
        let error = connect(&transport).await.expect_err("no private directory");
        assert_eq!(
            error.to_string(),
            format!(
                "`{}`: no private directory for bashtool could be made over there ({} belongs to uid 65534, not to uid {uid}; {} belongs to uid 65534, not to uid {uid})",
                place.line("sh"),
                top.display(),
                tmp_top.display()
            )
        );
    }
    // A symbolic link is not a directory of ours, wherever it points.
    std::fs::remove_dir_all(place.root.join("home/.cache")).expect("rm");
    std::fs::create_dir_all(place.root.join("home/.cache")).expect("mkdir");
    std::fs::create_dir(place.root.join("elsewhere")).expect("mkdir");
    std::os::unix::fs::symlink(place.root.join("elsewhere"), &top).expect("symlink");
    let error = connect(&ShellTransport::new(
        format!(
            "TMPDIR=/nonexistent-{} {}",
            std::process::id(),
            place.line("sh")
        ),
        Some(place.build()),
    ))
    .await
    .expect_err("refused");
    assert!(
        error
            .to_string()
            .contains(&format!("{} is a symbolic link", top.display())),
        "{error}"
    );
}

#[tokio::test]
async fn a_line_that_opens_no_posix_shell_is_named() {
    let place = Place::new();
    let quiet = ShellTransport::new("cat > /dev/null", Some(place.build()))
        .answer_timeout(Duration::from_secs(1));
    assert_eq!(
        connect(&quiet).await.expect_err("no shell").to_string(),
        "`cat > /dev/null` did not answer within 1 s as a POSIX shell; it must open one over there, e.g. `ssh devbox`, `docker exec -i box sh` or `kubectl exec -i pod -- sh`"
    );
    let gone = ShellTransport::new(
        "echo 'Welcome!'; echo 'no such container' >&2; exit 1",
        None,
    );
    assert_eq!(
        connect(&gone).await.expect_err("no shell").to_string(),
        "`echo 'Welcome!'; echo 'no such container' >&2; exit 1` ended before answering as a POSIX shell; it must open one over there, e.g. `ssh devbox`, `docker exec -i box sh` or `kubectl exec -i pod -- sh` (it said: Welcome!; no such container)"
    );
    let bare = ShellTransport::new(
        format!("PATH=/nonexistent {}", place.line("/bin/sh")),
        Some(place.build()),
    );
    assert_eq!(
        connect(&bare).await.expect_err("no tools").to_string(),
        format!(
            "`{}`: the shell over there lacks id, uname, cat, mkdir, chmod, mv, rm, ls, wc, sha256sum, which the upload needs (coreutils or busybox provide them)",
            bare.shell_line()
        )
    );
}

#[tokio::test]
async fn a_build_for_another_architecture_is_not_uploaded() {
    let place = Place::new();
    let mut header = std::fs::read(&place.binary).expect("read");
    // e_machine: aarch64 (this host is x86_64 in CI).
    header[18..20].copy_from_slice(&183_u16.to_le_bytes());
    std::fs::write(&place.binary, header).expect("write");
    let transport = ShellTransport::new(place.line("sh"), Some(place.build()));
    let error = connect(&transport).await.expect_err("refused");
    if std::env::consts::ARCH == "x86_64" {
        assert_eq!(
            error.to_string(),
            format!(
                "`{}` leads to x86_64, but {} is built for aarch64; pass --serve-binary PATH with a build for x86_64 (x86_64-unknown-linux-musl)",
                place.line("sh"),
                place.binary.display()
            )
        );
    }
    assert!(!place.cache().join("bashtool").exists());
}

/// A far side whose `uname` names a system or an architecture there is no
/// build for: nothing is uploaded or started, and the error names it.
#[tokio::test]
async fn an_unknown_system_or_architecture_is_named() {
    let place = Place::new();
    let fake = place.root.join("fake-bin");
    std::fs::create_dir(&fake).expect("mkdir");
    let uname = fake.join("uname");
    for (system, machine, expected) in [
        (
            "Linux",
            "mips",
            "leads to an unknown architecture `mips`; bashtool can be uploaded to x86_64, aarch64",
        ),
        (
            "Darwin",
            "arm64",
            "leads to a Darwin system; bashtool serve runs only on Linux (a Linux container or host)",
        ),
    ] {
        std::fs::write(
            &uname,
            format!("#!/bin/sh\ncase \"$1\" in -m) echo {machine};; *) echo {system};; esac\n"),
        )
        .expect("write uname");
        std::fs::set_permissions(&uname, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let line = format!("PATH='{}':\"$PATH\" {}", fake.display(), place.line("sh"));
        let transport = ShellTransport::new(line.clone(), Some(place.build()));
        let error = connect(&transport).await.expect_err("refused").to_string();
        assert!(
            error.starts_with(&format!("`{line}` {expected}")),
            "{error}"
        );
        assert!(!place.cache().join("bashtool").exists());
    }
}
