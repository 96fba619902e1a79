//! What the bootstrap says to the shell over there, and what it answers.
//!
//! One line goes first, `exec /bin/sh -c '<PROGRAM>' bashtool-bootstrap`:
//! whatever shell the transport opened (a login shell over ssh may be bash,
//! zsh or fish) replaces itself with a POSIX `sh` running [`program`]. Only
//! that line is sent before the answer comes, because a shell reading its
//! commands from a pipe may read far ahead of the line it runs (dash and
//! busybox ash do), and would swallow whatever followed. The program is
//! one line with no `'`, `\` or `!`, so every shell passes it on as is.
//!
//! The program finds or makes a private directory, hashes the `bashtool`
//! there, and answers with one marked line ([`Answer::Probe`]). Then it
//! reads one command line with `read` (which takes no byte beyond its line
//! in every shell):
//!
//! - `start ARGS`: it execs `bashtool serve ARGS`, which reads the rest of
//!   the pipe (the protocol's handshake, already on its way);
//! - `upload SHA256 SIZE`: it copies the rest of its input into a temp file
//!   until the input ends, checks size and SHA-256, makes it executable,
//!   renames it into place, runs `--version` once, answers
//!   ([`Answer::Uploaded`] or [`Answer::Failed`]), and exits. The input
//!   ends when the bootstrap closes it, so nothing depends on a command
//!   reading an exact number of bytes (busybox `head -c` reads ahead too);
//!   and a link cut short leaves a short file that is never renamed.
//!
//! Every answer starts with a marker that holds a random nonce, so that a
//! login banner cannot be mistaken for one.

use std::fmt::Write as _;

use super::binary::Architecture;

/// The argument `$0` of the program (what `ps` shows over there).
const PROGRAM_NAME: &str = "bashtool-bootstrap";

/// The program over there, one line. `MARKER`, `VERSION` and `LOADER` are
/// replaced by [`program`] with values made of safe characters only.
///
/// The directory: `$XDG_CACHE_HOME/bashtool/VERSION` (when absolute), else
/// `~/.cache/bashtool/VERSION`, else `${TMPDIR:-/tmp}/bashtool-UID/VERSION`;
/// each level made 0700, and used only when it is a directory (not a link)
/// that belongs to this user and that no one else may enter: a directory
/// someone else made in a shared `/tmp` is never trusted.
const PROGRAM: &str = r#"export LC_ALL=C; umask 077;
m=MARKER; v=VERSION; l=LOADER; uid=$(id -u 2>/dev/null);
say() { printf "%s %s" "$m" "$*"; echo; };
miss=; for t in id uname cat mkdir chmod mv rm ls wc sha256sum; do command -v $t >/dev/null 2>&1 || miss="$miss $t"; done;
[ -z "$miss" ] || { say missing $miss; exit 0; };
private() { p=$1;
 [ -d "$p" ] || e=$(mkdir "$p" 2>&1) || [ -d "$p" ] || { printf "%s" "$e"; return 1; };
 [ -L "$p" ] && { printf "%s is a symbolic link" "$p"; return 1; };
 set -- $(ls -ldn "$p" 2>/dev/null);
 [ "$3" = "$uid" ] || { printf "%s belongs to uid %s, not to uid %s" "$p" "$3" "$uid"; return 1; };
 chmod 700 "$p" 2>/dev/null; set -- $(ls -ldn "$p" 2>/dev/null);
 case $1 in drwx------|drwx------.) return 0;; esac;
 printf "%s has mode %s, not drwx------" "$p" "$1"; return 1; };
why=; d=;
pick() { case $1 in /*) ;; *) return 1;; esac;
 r=$(private "$1/$2" && private "$1/$2/$v") && { d=$1/$2/$v; return 0; };
 why="$why${why:+; }$r"; return 1; };
c=${XDG_CACHE_HOME:-}; case $c in /*) ;; *) c=${HOME:+${HOME%/}/.cache};; esac;
case $c in /*) [ -d "$c" ] || e=$(mkdir -p "$c" 2>&1) || why="$e";; esac;
t=${TMPDIR:-/tmp}; t=${t%/};
pick "$c" bashtool || pick "${t:-/}" "bashtool-$uid" || { say nodir "$why"; exit 0; };
b=$d/bashtool; h=none;
if [ -h "$b" ]; then h=link; elif [ -f "$b" ] && [ -x "$b" ]; then h=$(sha256sum < "$b" 2>/dev/null); h=${h%% *}; fi;
s=sh; command -v bash >/dev/null 2>&1 && s=bash;
n=none; [ -z "$l" ] || { n=missing; [ -e "$l" ] && n=present; };
say probe "$(uname -s)" "$(uname -m)" "${h:-unreadable}" $s $n "$d";
read -r w a || exit 0;
case $w in
start) eval "set -- $a"; exec "$b" serve "$@";;
upload) set -- $a; f=$d/.upload.$$; rm -f "$f";
 command -v find >/dev/null 2>&1 && find "$d" -name ".upload.*" -mmin +60 -exec rm -f {} + 2>/dev/null;
 e=$(cat 2>&1 >"$f") || { rm -f "$f"; say failed write "$e"; exit 0; };
 z=$(wc -c < "$f"); z=$((z+0)); h=$(sha256sum < "$f"); h=${h%% *};
 if [ "$z" = "$2" ] && [ "$h" = "$1" ]; then :; else rm -f "$f"; say corrupt "$z" "$h"; exit 0; fi;
 e=$(chmod 755 "$f" 2>&1 && mv -f "$f" "$b" 2>&1) || { rm -f "$f"; say failed write "$e"; exit 0; };
 e=$("$b" --version 2>&1 >/dev/null) || { say failed exec "$e"; exit 0; };
 say uploaded; exit 0;;
esac"#;

/// The first and only line sent before the program answers: the program,
/// run by `/bin/sh` in place of the shell the transport opened.
pub fn launch_line(marker: &str, version: &str, loader: Option<&str>) -> String {
    format!(
        "exec /bin/sh -c '{}' {PROGRAM_NAME}\n",
        program(marker, version, loader)
    )
}

/// The program with its values in place, on one line.
pub fn program(marker: &str, version: &str, loader: Option<&str>) -> String {
    debug_assert!(marker.chars().all(is_safe) && version.chars().all(is_safe));
    // A loader path of unusual characters is not checked over there (the
    // upload's `--version` run still finds out).
    let loader = loader
        .filter(|path| path.chars().all(is_safe))
        .unwrap_or("");
    PROGRAM
        .replace('\n', " ")
        .replace("MARKER", marker)
        .replace("VERSION", version)
        .replace("LOADER", loader)
}

/// Characters that need no quoting anywhere in the program.
fn is_safe(character: char) -> bool {
    character.is_ascii_alphanumeric() || "._+-/@:".contains(character)
}

/// A `start` command: the words `bashtool serve` gets, each quoted for the
/// `eval` over there.
pub fn start_line(serve_args: &[String]) -> String {
    let mut line = String::from("start");
    for word in serve_args {
        line.push(' ');
        line.push_str(&quote(word));
    }
    line.push('\n');
    line
}

/// An `upload` command for a file of `size` bytes with digest `sha256`.
pub fn upload_line(sha256: &str, size: u64) -> String {
    format!("upload {sha256} {size}\n")
}

/// One word in POSIX single quotes (`'` as `'\''`).
fn quote(word: &str) -> String {
    let mut quoted = String::with_capacity(word.len() + 2);
    quoted.push('\'');
    for character in word.chars() {
        if character == '\'' {
            quoted.push_str(r"'\''");
        } else {
            quoted.push(character);
        }
    }
    quoted.push('\'');
    quoted
}

/// What the far side found, in its first answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// `uname -s`.
    pub system: String,
    /// `uname -m`.
    pub machine: String,
    /// The SHA-256 of the `bashtool` there, if there is one.
    pub installed: Option<String>,
    /// bash is on its `PATH` (else commands run with `sh`).
    pub has_bash: bool,
    /// The dynamic loader the upload needs is there (`None`: it needs none).
    pub loader_present: Option<bool>,
    /// The private directory the binary lives in.
    pub directory: String,
}

impl Probe {
    /// The architecture over there, if bashtool knows it.
    pub fn architecture(&self) -> Option<Architecture> {
        Architecture::from_uname(&self.machine)
    }
}

/// A marked line from the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Probe(Probe),
    /// Tools the program needs are not on `PATH` there.
    Missing(Vec<String>),
    /// No private directory could be made; why, for each candidate.
    NoDirectory(String),
    /// The upload arrived whole and runs.
    Uploaded,
    /// The upload arrived with another size or digest: it was deleted.
    Corrupt {
        size: String,
        sha256: String,
    },
    /// Writing (`write`) or running (`exec`) the upload failed.
    Failed {
        stage: String,
        message: String,
    },
}

/// The answer in `line` when it carries `marker`; `None` for any other line.
pub fn parse_answer(marker: &str, line: &str) -> Option<Answer> {
    let rest = line.trim_end_matches(['\r', '\n']).strip_prefix(marker)?;
    let rest = rest.strip_prefix(' ')?;
    let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    Some(match kind {
        "probe" => {
            let mut words = rest.splitn(6, ' ');
            let mut next = || words.next().unwrap_or_default().to_owned();
            let (system, machine, installed, shell, loader, directory) =
                (next(), next(), next(), next(), next(), next());
            Answer::Probe(Probe {
                system,
                machine,
                installed: (!matches!(installed.as_str(), "none" | "unreadable" | "link"))
                    .then_some(installed),
                has_bash: shell == "bash",
                loader_present: match loader.as_str() {
                    "present" => Some(true),
                    "missing" => Some(false),
                    _ => None,
                },
                directory,
            })
        }
        "missing" => Answer::Missing(rest.split_whitespace().map(str::to_owned).collect()),
        "nodir" => Answer::NoDirectory(rest.to_owned()),
        "uploaded" => Answer::Uploaded,
        "corrupt" => {
            let (size, sha256) = rest.split_once(' ').unwrap_or((rest, ""));
            Answer::Corrupt {
                size: size.to_owned(),
                sha256: sha256.to_owned(),
            }
        }
        "failed" => {
            let (stage, message) = rest.split_once(' ').unwrap_or((rest, ""));
            Answer::Failed {
                stage: stage.to_owned(),
                message: message.to_owned(),
            }
        }
        _ => return None,
    })
}

/// A new marker: fixed text and 16 random hex digits.
pub fn new_marker() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    // `RandomState` is seeded from the system's randomness: enough for a
    // tag that a banner must not match by chance (it guards no secret).
    let mut marker = String::from("@@bashtool-");
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(std::process::id().into());
    let _ = write!(marker, "{:016x}", hasher.finish());
    marker
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_one_line_any_shell_passes_on_unchanged() {
        let text = program("@@bashtool-00ff", "0.1.0", Some("/lib64/ld.so.2"));
        assert!(!text.contains('\n'));
        for forbidden in ['\'', '\\', '!'] {
            assert!(!text.contains(forbidden), "{forbidden} in the program");
        }
        assert!(text.contains("m=@@bashtool-00ff; v=0.1.0; l=/lib64/ld.so.2;"));
        assert!(
            launch_line("@@m", "0.1.0", None)
                .starts_with("exec /bin/sh -c 'export LC_ALL=C; umask 077; m=@@m; v=0.1.0; l=; ")
        );
        assert!(launch_line("@@m", "0.1.0", None).ends_with("' bashtool-bootstrap\n"));
        // A loader path that would need quoting is left out.
        assert!(program("@@m", "1", Some("/a b'c")).contains(" l=; "));
    }

    #[test]
    fn quotes_the_serve_arguments_for_eval() {
        assert_eq!(
            start_line(&["--sandbox".into(), "off".into(), "it's a dir".into()]),
            "start '--sandbox' 'off' 'it'\\''s a dir'\n"
        );
        assert_eq!(start_line(&[]), "start\n");
        assert_eq!(upload_line("ab12", 99), "upload ab12 99\n");
    }

    #[test]
    fn reads_marked_answers_only() {
        let marker = "@@bashtool-1234";
        assert_eq!(
            parse_answer(
                marker,
                "@@bashtool-1234 probe Linux x86_64 none sh missing /root/.cache/bashtool/0.1.0\n"
            ),
            Some(Answer::Probe(Probe {
                system: "Linux".into(),
                machine: "x86_64".into(),
                installed: None,
                has_bash: false,
                loader_present: Some(false),
                directory: "/root/.cache/bashtool/0.1.0".into(),
            }))
        );
        let probe = parse_answer(
            marker,
            "@@bashtool-1234 probe Linux aarch64 abc bash none /tmp/bashtool-0/my dir/0.1.0",
        );
        let Some(Answer::Probe(probe)) = probe else {
            panic!("a probe")
        };
        assert_eq!(probe.installed.as_deref(), Some("abc"));
        assert!(probe.has_bash);
        assert_eq!(probe.loader_present, None);
        assert_eq!(probe.directory, "/tmp/bashtool-0/my dir/0.1.0");
        assert_eq!(probe.architecture(), Some(Architecture::Aarch64));
        assert_eq!(
            parse_answer(marker, "@@bashtool-1234 missing  sha256sum wc"),
            Some(Answer::Missing(vec!["sha256sum".into(), "wc".into()]))
        );
        assert_eq!(
            parse_answer(
                marker,
                "@@bashtool-1234 failed write cat: write error: No space left on device"
            ),
            Some(Answer::Failed {
                stage: "write".into(),
                message: "cat: write error: No space left on device".into()
            })
        );
        assert_eq!(
            parse_answer(marker, "@@bashtool-1234 corrupt 12 ffee"),
            Some(Answer::Corrupt {
                size: "12".into(),
                sha256: "ffee".into()
            })
        );
        assert_eq!(
            parse_answer(marker, "@@bashtool-1234 uploaded"),
            Some(Answer::Uploaded)
        );
        assert_eq!(parse_answer(marker, "Welcome to Ubuntu"), None);
        assert_eq!(parse_answer(marker, "@@bashtool-9999 uploaded"), None);
        assert_eq!(parse_answer(marker, "@@bashtool-12345 uploaded"), None);
    }

    #[test]
    fn markers_differ() {
        let first = new_marker();
        assert_eq!(first.len(), "@@bashtool-".len() + 16);
        assert_ne!(first, new_marker());
    }
}
