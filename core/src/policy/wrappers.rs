//! Commands that run another command, each with its own option syntax:
//! wrappers seen through to the command they run (`sudo`, `env`,
//! `timeout`, `flock FILE`, `chroot DIR`, `unshare`, `busybox`, ...),
//! those that hand a string to a shell (`su -c`, `flock FILE -c`, `script
//! -c`, `ssh HOST …`, `watch`), and those that build commands from their
//! input (`xargs`, GNU `parallel … ::: …`).

use super::nested::Stdin;
use super::options::{self, OptionSpec, Parsed};
use super::words::{self, Segment, Word, joined};

/// What a wrapper runs.
#[derive(Debug)]
pub(crate) enum Peeled<'a> {
    /// The command made of these words of its own.
    Command(&'a [Word]),
    /// Commands built from its arguments and input (`xargs`).
    Commands(Vec<Vec<Word>>),
    /// Shell code (`su -c`, `ssh host …`, `parallel`).
    Scripts(Vec<String>),
    /// Nothing it was given (`command -v rm`, `taskset -p 3 1234`).
    Nothing,
}

/// `name` seen as a wrapper of `rest`; `None` when it is not one.
pub(crate) fn peel<'a>(name: &str, rest: &'a [Word], stdin: &Stdin) -> Option<Peeled<'a>> {
    use Peeled::{Command, Nothing};
    let peeled = match name {
        "sudo" | "sudo-rs" => {
            let parsed = options::parse(rest, &SUDO);
            if parsed.has('e', "edit") {
                // `sudo -e FILE`: edits files.
                Nothing
            } else {
                Command(skip_assignments(parsed.operands))
            }
        }
        "doas" => Command(options::parse(rest, &DOAS).operands),
        "run0" => Command(options::parse(rest, &RUN0).operands),
        "pkexec" => Command(options::parse(rest, &PKEXEC).operands),
        "env" => env(rest),
        "command" => {
            let parsed = options::parse(rest, &NO_VALUES);
            if parsed.has('v', "") || parsed.has('V', "") {
                // `command -v rm` only looks the name up.
                Nothing
            } else {
                Command(parsed.operands)
            }
        }
        "builtin" | "nohup" | "setsid" | "eatmydata" | "nocache" | "catchsegv" | "chronic"
        | "unbuffer" | "torsocks" | "valgrind" | "firejail" | "dbus-run-session" | "linux32"
        | "linux64" | "noglob" | "nocorrect" => Command(options::parse(rest, &NO_VALUES).operands),
        "caffeinate" => Command(options::parse(rest, &CAFFEINATE).operands),
        "cpulimit" => Command(options::parse(rest, &CPULIMIT).operands),
        "tini" => Command(options::parse(rest, &TINI).operands),
        "dumb-init" => Command(options::parse(rest, &DUMB_INIT).operands),
        "chpst" => Command(options::parse(rest, &CHPST).operands),
        // The first operand is a user, a directory or a time.
        "gosu" | "su-exec" | "setuidgid" | "envdir" => after(rest, 1),
        "exec" => Command(options::parse(rest, &EXEC).operands),
        "nice" => Command(options::parse(rest, &NICE).operands),
        "ionice" => Command(options::parse(rest, &IONICE).operands),
        "time" => Command(options::parse(rest, &TIME).operands),
        "stdbuf" => Command(options::parse(rest, &STDBUF).operands),
        "strace" => Command(options::parse(rest, &STRACE).operands),
        "ltrace" => Command(options::parse(rest, &LTRACE).operands),
        "fakeroot" => Command(options::parse(rest, &FAKEROOT).operands),
        "xvfb-run" => Command(options::parse(rest, &XVFB_RUN).operands),
        "proxychains" | "proxychains4" => Command(options::parse(rest, &PROXYCHAINS).operands),
        "cgexec" => Command(options::parse(rest, &CGEXEC).operands),
        "numactl" => Command(options::parse(rest, &NUMACTL).operands),
        "unshare" => Command(options::parse(rest, &UNSHARE).operands),
        "nsenter" => Command(options::parse(rest, &NSENTER).operands),
        "setpriv" => Command(options::parse(rest, &SETPRIV).operands),
        "systemd-run" => Command(options::parse(rest, &SYSTEMD_RUN).operands),
        "prlimit" => {
            let parsed = options::parse(rest, &PRLIMIT);
            if parsed.has('p', "pid") {
                Nothing
            } else {
                Command(parsed.operands)
            }
        }
        // The first operand is the duration.
        "timeout" => after(options::parse(rest, &TIMEOUT).operands, 1),
        "faketime" => after(options::parse(rest, &NO_VALUES).operands, 1),
        "chroot" => after(options::parse(rest, &CHROOT).operands, 1),
        "taskset" => {
            let parsed = options::parse(rest, &NO_VALUES);
            if parsed.has('p', "pid") {
                Nothing
            } else {
                after(parsed.operands, leading(parsed.operands, is_cpu_mask))
            }
        }
        "chrt" => {
            let parsed = options::parse(rest, &CHRT);
            if parsed.has('p', "pid") || parsed.has('m', "max") {
                Nothing
            } else {
                after(parsed.operands, leading(parsed.operands, is_number))
            }
        }
        "setarch" => {
            // `setarch ARCH [options] [program …]`.
            let rest = match rest.first() {
                Some(arch) if !arch.loose_value().starts_with('-') => &rest[1..],
                _ => rest,
            };
            Command(options::parse(rest, &NO_VALUES).operands)
        }
        "flock" => flock(options::parse(rest, &FLOCK).operands),
        "busybox" | "toybox" => match rest.first() {
            // `busybox --list`, `busybox --install`.
            Some(first) if first.loose_value().starts_with('-') => Nothing,
            _ => Command(rest),
        },
        "bwrap" => Command(bwrap_operands(rest)),
        "su" | "runuser" => su(name, rest),
        "sg" => match rest {
            [_group, dash_c, command @ ..] if dash_c.loose_value() == "-c" => {
                Peeled::Scripts(vec![joined(command)])
            }
            [_group, command @ ..] => Peeled::Scripts(vec![joined(command)]),
            [] => Nothing,
        },
        "script" => match options::parse(rest, &SCRIPT).value_of('c', "command") {
            Some(command) => Peeled::Scripts(vec![command.to_owned()]),
            None => Nothing,
        },
        "ssh" => match options::parse(rest, &SSH).operands {
            [_host, command @ ..] if !command.is_empty() => Peeled::Scripts(vec![joined(command)]),
            _ => Nothing,
        },
        "entr" => {
            let parsed = options::parse(rest, &NO_VALUES);
            if parsed.has('s', "") {
                Peeled::Scripts(vec![joined(parsed.operands)])
            } else {
                Command(parsed.operands)
            }
        }
        "watch" => {
            let parsed = options::parse(rest, &WATCH);
            if parsed.has('x', "exec") {
                Command(parsed.operands)
            } else {
                // watch hands its joined arguments to `sh -c`.
                Peeled::Scripts(vec![joined(parsed.operands)])
            }
        }
        // `at` and `batch` run the script on their stdin later.
        "at" | "batch" => {
            let parsed = options::parse(rest, &AT);
            match &stdin.script {
                Some(script) if !parsed.has('f', "") => Peeled::Scripts(vec![script.clone()]),
                _ => Nothing,
            }
        }
        "xargs" => xargs(rest, stdin),
        "parallel" => parallel(rest, stdin),
        _ => return None,
    };
    Some(peeled)
}

const fn spec(
    short_with_value: &'static str,
    long_with_value: &'static [&'static str],
) -> OptionSpec {
    OptionSpec {
        short_with_value,
        long_with_value,
    }
}

const NO_VALUES: OptionSpec = spec("", &[]);
const SUDO: OptionSpec = spec(
    "ugCDhprtTUR",
    &[
        "user",
        "group",
        "close-from",
        "chdir",
        "chroot",
        "host",
        "prompt",
        "role",
        "type",
        "command-timeout",
        "other-user",
    ],
);
const DOAS: OptionSpec = spec("uC", &[]);
const RUN0: OptionSpec = spec(
    "ugD",
    &[
        "user",
        "group",
        "nice",
        "chdir",
        "setenv",
        "property",
        "description",
        "slice",
        "unit",
        "machine",
        "background",
        "shell-prompt-prefix",
    ],
);
const PKEXEC: OptionSpec = spec("", &["user"]);
const ENV: OptionSpec = spec("uCSP", &["unset", "chdir", "split-string"]);
const EXEC: OptionSpec = spec("a", &[]);
const NICE: OptionSpec = spec("n", &["adjustment"]);
const IONICE: OptionSpec = spec("cnpPu", &["class", "classdata", "pid", "pgid", "uid"]);
const TIME: OptionSpec = spec("fo", &["format", "output"]);
const TIMEOUT: OptionSpec = spec("sk", &["signal", "kill-after"]);
const STDBUF: OptionSpec = spec("ioe", &["input", "output", "error"]);
const WATCH: OptionSpec = spec("nq", &["interval", "equexit"]);
const STRACE: OptionSpec = spec("abeEIoOpPsSuUX", &[]);
const LTRACE: OptionSpec = spec("aADeFlnopsuwx", &[]);
const FAKEROOT: OptionSpec = spec("lfsib", &["lib", "faked"]);
const XVFB_RUN: OptionSpec = spec(
    "efnpsw",
    &[
        "error-file",
        "auth-file",
        "server-num",
        "xauth-protocol",
        "server-args",
        "wait",
    ],
);
const PROXYCHAINS: OptionSpec = spec("f", &[]);
const CAFFEINATE: OptionSpec = spec("tw", &[]);
const CPULIMIT: OptionSpec = spec("lpe", &["limit", "pid", "exe", "cpu"]);
const TINI: OptionSpec = spec("pe", &[]);
const DUMB_INIT: OptionSpec = spec("r", &["rewrite"]);
const CHPST: OptionSpec = spec("uUe/nlLmdofpcrt", &[]);
const CGEXEC: OptionSpec = spec("g", &[]);
const NUMACTL: OptionSpec = spec(
    "impNCP",
    &[
        "interleave",
        "preferred",
        "membind",
        "cpunodebind",
        "physcpubind",
    ],
);
const UNSHARE: OptionSpec = spec(
    "RwSG",
    &[
        "root",
        "wd",
        "setuid",
        "setgid",
        "propagation",
        "setgroups",
        "map-user",
        "map-group",
        "map-users",
        "map-groups",
        "monotonic",
        "boottime",
    ],
);
const NSENTER: OptionSpec = spec("tSGW", &["target", "setuid", "setgid", "wdns"]);
const SETPRIV: OptionSpec = spec(
    "",
    &[
        "ambient-caps",
        "inh-caps",
        "bounding-set",
        "ruid",
        "euid",
        "rgid",
        "egid",
        "reuid",
        "regid",
        "groups",
        "securebits",
        "pdeathsig",
        "selinux-label",
        "apparmor-profile",
        "landlock-access",
        "landlock-rule",
        "seccomp-filter",
    ],
);
const SYSTEMD_RUN: OptionSpec = spec(
    "upEHMC",
    &[
        "unit",
        "property",
        "description",
        "slice",
        "setenv",
        "uid",
        "gid",
        "nice",
        "working-directory",
        "host",
        "machine",
        "capsule",
        "service-type",
        "on-active",
        "on-boot",
        "on-startup",
        "on-unit-active",
        "on-unit-inactive",
        "on-calendar",
        "timer-property",
        "path-property",
        "socket-property",
    ],
);
const PRLIMIT: OptionSpec = spec("po", &["pid", "output"]);
const CHROOT: OptionSpec = spec("", &["userspec", "groups"]);
const CHRT: OptionSpec = spec("TPD", &["sched-runtime", "sched-period", "sched-deadline"]);
const FLOCK: OptionSpec = spec("wE", &["timeout", "wait", "conflict-exit-code"]);
const SU: OptionSpec = spec(
    "gGswcu",
    &[
        "group",
        "supp-group",
        "shell",
        "whitelist-environment",
        "command",
        "session-command",
        "user",
    ],
);
const SCRIPT: OptionSpec = spec(
    "IOBTmEoc",
    &[
        "log-in",
        "log-out",
        "log-io",
        "log-timing",
        "logging-format",
        "echo",
        "output-limit",
        "command",
    ],
);
const SSH: OptionSpec = spec("BbcDEeFIiJLlmOopPQRSWw", &[]);
const AT: OptionSpec = spec("qfut", &[]);
const XARGS: OptionSpec = spec(
    "IELnPsdaR",
    &[
        "arg-file",
        "delimiter",
        "eof",
        "max-lines",
        "max-args",
        "max-procs",
        "max-chars",
        "process-slot-var",
    ],
);
const PARALLEL: OptionSpec = spec(
    "jPSaIdEnNLCs",
    &[
        "jobs",
        "sshlogin",
        "sshloginfile",
        "slf",
        "arg-file",
        "delimiter",
        "eof",
        "max-args",
        "max-replace-args",
        "max-lines",
        "colsep",
        "max-chars",
        "results",
        "res",
        "joblog",
        "tmpdir",
        "retries",
        "timeout",
        "delay",
        "halt",
        "memfree",
        "load",
        "basefile",
        "workdir",
        "wd",
        "env",
        "tagstring",
        "tag-string",
        "header",
        "block",
        "recstart",
        "recend",
        "transferfile",
        "return",
        "ssh",
        "termseq",
        "limit",
        "rpl",
        "filter",
        "replace",
    ],
);

/// Most commands or scripts one wrapper builds from its input.
const MAX_BUILT: usize = 64;

fn after(operands: &[Word], count: usize) -> Peeled<'_> {
    Peeled::Command(operands.get(count..).unwrap_or_default())
}

/// 1 when the first operand is what `is_wanted` says, else 0.
fn leading(operands: &[Word], is_wanted: fn(&str) -> bool) -> usize {
    usize::from(
        operands
            .first()
            .is_some_and(|first| is_wanted(&first.loose_value())),
    )
}

/// `03`, `0x3f`, `0-3,7`, `0-31:2`.
fn is_cpu_mask(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|character| character.is_ascii_hexdigit() || "xX,-:".contains(character))
}

fn is_number(value: &str) -> bool {
    !value.is_empty() && value.chars().all(|character| character.is_ascii_digit())
}

fn skip_assignments(words: &[Word]) -> &[Word] {
    let start = words
        .iter()
        .position(|word| !options::is_assignment(word))
        .unwrap_or(words.len());
    &words[start..]
}

/// `env [-i] [-u NAME] [-C DIR] [-S STRING] [-] [NAME=VALUE]… [COMMAND …]`.
fn env(rest: &[Word]) -> Peeled<'_> {
    let parsed = options::parse(rest, &ENV);
    if let Some(split) = parsed.value_of('S', "split-string") {
        // `env -S 'rm -rf /'` splits its value into words.
        let mut script = split.to_owned();
        script.push(' ');
        script.push_str(&joined(parsed.operands));
        return Peeled::Scripts(vec![script]);
    }
    // A lone `-` is `-i`.
    let mut operands = parsed.operands;
    while let Some((first, rest)) = operands.split_first() {
        if first.loose_value() == "-" || options::is_assignment(first) {
            operands = rest;
        } else {
            break;
        }
    }
    Peeled::Command(operands)
}

/// `flock [options] FILE COMMAND …`, `flock [options] FILE -c STRING`,
/// `flock [options] FD`.
fn flock(operands: &[Word]) -> Peeled<'_> {
    match operands {
        [_file, dash_c, script, ..]
            if matches!(dash_c.loose_value().as_str(), "-c" | "--command") =>
        {
            Peeled::Scripts(vec![script.loose_value()])
        }
        [_file, command @ ..] => Peeled::Command(command),
        [] => Peeled::Nothing,
    }
}

/// `su [options] [-] [USER [ARG…]]` and `runuser`: `-c STRING` (options
/// may follow the user) runs a string; `runuser -u USER [--] COMMAND …`
/// runs a command.
fn su<'a>(name: &str, rest: &'a [Word]) -> Peeled<'a> {
    let (parsed, _operands) = options::parse_permuted(rest, &SU);
    if let Some(command) = parsed
        .value_of('c', "command")
        .or_else(|| parsed.value_of('\0', "session-command"))
    {
        return Peeled::Scripts(vec![command.to_owned()]);
    }
    if name == "runuser" && parsed.has('u', "user") {
        return Peeled::Command(options::parse(rest, &SU).operands);
    }
    // A login shell, or a script file run by the user's shell.
    Peeled::Nothing
}

/// The command of `bwrap [options] COMMAND …`; its options take zero to
/// three values each.
fn bwrap_operands(rest: &[Word]) -> &[Word] {
    let mut index = 0;
    while let Some(word) = rest.get(index) {
        let value = word.loose_value();
        if value == "--" {
            return rest.get(index + 1..).unwrap_or_default();
        }
        let Some(option) = value.strip_prefix("--") else {
            break;
        };
        index += 1 + bwrap_values(option);
    }
    rest.get(index..).unwrap_or_default()
}

fn bwrap_values(option: &str) -> usize {
    match option {
        "bind" | "bind-try" | "dev-bind" | "dev-bind-try" | "ro-bind" | "ro-bind-try"
        | "symlink" | "setenv" | "chmod" | "file" | "bind-data" | "ro-bind-data"
        | "overlay-src" => 2,
        "perms" | "size" | "proc" | "dev" | "tmpfs" | "mqueue" | "dir" | "remount-ro" | "chdir"
        | "unsetenv" | "uid" | "gid" | "hostname" | "lock-file" | "sync-fd" | "info-fd"
        | "json-status-fd" | "block-fd" | "userns-block-fd" | "userns" | "userns2" | "pidns"
        | "exec-label" | "file-label" | "seccomp" | "add-seccomp-fd" | "cap-add" | "cap-drop"
        | "args" | "argv0" | "overlay" | "tmp-overlay" | "ro-overlay" => 1,
        _ => 0,
    }
}

/// The words `xargs` or `parallel` would read from stdin, when it is known
/// text (`echo ~ | xargs rm -rf`, `xargs rm -rf <<< /`), each read as the
/// shell would read it.
fn input_words(stdin: &Stdin) -> Option<Vec<Word>> {
    let text = stdin.script.as_ref()?;
    Some(
        text.split(|character: char| character.is_whitespace() || character == '\0')
            .filter(|token| !token.is_empty())
            .take(MAX_BUILT)
            .map(|token| {
                words::decode(token, &mut Vec::new()).unwrap_or_else(|_| Word::literal(token))
            })
            .collect(),
    )
}

/// `word` with each occurrence of `placeholder` in its text replaced by
/// `value`'s segments.
fn replaced(word: &Word, placeholder: &str, value: &Word) -> Word {
    let mut result = Word::default();
    for segment in &word.segments {
        let Segment::Literal { text, quoted } = segment else {
            result.segments.push(segment.clone());
            continue;
        };
        let mut pieces = text.split(placeholder);
        if let Some(first) = pieces.next() {
            result.segments.push(Segment::Literal {
                text: first.to_owned(),
                quoted: *quoted,
            });
        }
        for piece in pieces {
            result.segments.extend(value.segments.iter().cloned());
            result.segments.push(Segment::Literal {
                text: piece.to_owned(),
                quoted: *quoted,
            });
        }
    }
    result
}

/// `argv` with `{}` (or another placeholder) replaced by `value`.
pub(crate) fn substituted(argv: &[Word], placeholder: &str, value: &Word) -> Vec<Word> {
    argv.iter()
        .map(|word| replaced(word, placeholder, value))
        .collect()
}

/// `xargs [options] [COMMAND [ARG…]]`: the command, with what stdin says
/// when we know it (appended, or in place of `-I`'s placeholder).
fn xargs<'a>(rest: &'a [Word], stdin: &Stdin) -> Peeled<'a> {
    let parsed = options::parse(rest, &XARGS);
    let command = parsed.operands;
    let from_file = parsed.has('a', "arg-file");
    let Some(inputs) = input_words(stdin).filter(|_| !from_file && !command.is_empty()) else {
        return Peeled::Command(command);
    };
    if let Some(placeholder) = replace_string(&parsed) {
        Peeled::Commands(
            inputs
                .iter()
                .map(|input| substituted(command, &placeholder, input))
                .collect(),
        )
    } else {
        let mut argv = command.to_vec();
        argv.extend(inputs);
        Peeled::Commands(vec![argv])
    }
}

fn replace_string(parsed: &Parsed<'_>) -> Option<String> {
    if let Some(placeholder) = parsed.value_of('I', "replace") {
        return Some(placeholder.to_owned());
    }
    (parsed.has('i', "") || parsed.has('\0', "replace")).then(|| "{}".to_owned())
}

/// GNU `parallel [options] COMMAND ::: ARG… [::: ARG…]`: the command is
/// a template that a shell runs once per argument, the argument in place
/// of `{}` (and `{.}`, `{/}`, `{1}`, … or `-I`'s string), or appended.
/// Without `:::`, the arguments come from stdin (`::::` reads them from
/// files we cannot see).
fn parallel<'a>(rest: &'a [Word], stdin: &Stdin) -> Peeled<'a> {
    let parsed = options::parse(rest, &PARALLEL);
    let words = parsed.operands;
    let is_separator = |word: &Word| {
        matches!(
            word.loose_value().as_str(),
            ":::" | ":::+" | "::::" | "::::+"
        )
    };
    let template_end = words.iter().position(is_separator).unwrap_or(words.len());
    let template = &words[..template_end];
    let mut inputs: Vec<Word> = Vec::new();
    let mut from_arguments = false;
    let mut source: Option<String> = None;
    for word in &words[template_end..] {
        if is_separator(word) {
            source = Some(word.loose_value());
            from_arguments = true;
            continue;
        }
        if matches!(source.as_deref(), Some(":::" | ":::+")) && inputs.len() < MAX_BUILT {
            inputs.push(word.clone());
        }
    }
    if !from_arguments && !parsed.has('a', "arg-file") {
        inputs = input_words(stdin).unwrap_or_default();
    }
    if template.is_empty() {
        // Each argument is a command line of its own.
        return Peeled::Scripts(inputs.iter().map(Word::loose_value).collect());
    }
    let template = joined(template);
    if inputs.is_empty() {
        return Peeled::Scripts(vec![template]);
    }
    let mut placeholders = vec![
        "{}".to_owned(),
        "{.}".to_owned(),
        "{/}".to_owned(),
        "{//}".to_owned(),
        "{/.}".to_owned(),
    ];
    placeholders.extend((1..=9).map(|position| format!("{{{position}}}")));
    if let Some(custom) = parsed.value_of('I', "replace") {
        placeholders.push(custom.to_owned());
    }
    let scripts = inputs
        .iter()
        .map(|input| {
            let value = input.to_source();
            if placeholders
                .iter()
                .any(|placeholder| template.contains(placeholder))
            {
                placeholders
                    .iter()
                    .fold(template.clone(), |script, placeholder| {
                        script.replace(placeholder, &value)
                    })
            } else {
                format!("{template} {value}")
            }
        })
        .collect();
    Peeled::Scripts(scripts)
}
