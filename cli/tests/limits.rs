//! `--limit` and `[limits]` with the real binary: bad input is refused
//! with the flag named and nothing runs; limits travel to `bashtool serve`
//! and its own `--limit` caps them; as a user without cgroups, limits
//! asked for are an error naming what is missing and the default is
//! reported as not in force; `bashtool sandbox` reports the cgroups;
//! through `bashtool call`, 300 sleepers under `pids=64` and 600 MB under
//! `memory=256M` end with the note (each load released only once the test
//! read the limit back from the kernel, under a watchdog).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use bashtool_tests::nobody::{Nobody, nobody};
use serde_json::{Value, json};

const BASHTOOL: &str = env!("CARGO_BIN_EXE_bashtool");

fn bashtool(dir: &Path, args: &[&str]) -> Output {
    Command::new(BASHTOOL)
        .args(args)
        .current_dir(dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"))
        .stdin(Stdio::null())
        .output()
        .expect("bashtool runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Prints the `pids.max` of the command's own cgroup (v1, or v2 mounted at
/// /sys/fs/cgroup), whatever the hierarchy.
const PRINT_PIDS_MAX: &str = r#"while IFS=: read -r _ c p; do case ",$c," in *,pids,*) cat "/sys/fs/cgroup/pids$p/pids.max" ;; ,,) [ -f "/sys/fs/cgroup$p/pids.max" ] && cat "/sys/fs/cgroup$p/pids.max" ;; esac; done < /proc/self/cgroup; true"#;

#[test]
fn bad_limits_are_refused_naming_the_flag_and_nothing_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = [
        (
            "pids=0",
            "error: invalid value 'pids=0' for '--limit <NAME=VALUE>': pids=0: the pids limit is a whole number of processes (threads count too) from 1 to 4194304, or off",
        ),
        (
            "memory=lots",
            "error: invalid value 'memory=lots' for '--limit <NAME=VALUE>': memory=lots: the memory limit is a size of at least 1 MiB: a number of bytes (268435456), or a number with K, M, G or T (powers of 1024; KiB, MiB, GiB, TiB mean the same), e.g. 512M, 1.5G, 512MiB; or off",
        ),
        (
            "cpu=0",
            "error: invalid value 'cpu=0' for '--limit <NAME=VALUE>': cpu=0: the cpu limit is a number of CPUs from 0.01 to 1024 (e.g. 0.5, 2, 1.5), or off",
        ),
        (
            "disk=1G",
            "error: invalid value 'disk=1G' for '--limit <NAME=VALUE>': unknown limit 'disk'; the limits are pids, memory and cpu",
        ),
        (
            "pids=64,pids=128",
            "error: invalid value 'pids=64,pids=128' for '--limit <NAME=VALUE>': pids is given twice with different values (64 and 128); give it once",
        ),
    ];
    let marker = dir.path().join("ran");
    for (value, expected) in cases {
        for subcommand in [
            vec!["run", "--limit", value, "--", "touch", "ran"],
            vec!["call", "--limit", value],
            vec!["mcp", "--limit", value],
            vec!["serve", "--limit", value],
            vec!["sandbox", "--limit", value],
        ] {
            let output = bashtool(dir.path(), &subcommand);
            assert_eq!(output.status.code(), Some(2), "{subcommand:?}");
            let text = stderr(&output);
            assert_eq!(
                text.lines().next(),
                Some(expected),
                "{subcommand:?}: {text}"
            );
            assert!(!marker.exists(), "{subcommand:?} ran the command");
        }
    }
    // Across two flags: the same limit with two values.
    let output = bashtool(
        dir.path(),
        &[
            "run", "--limit", "pids=64", "--limit", "pids=128", "--", "touch", "ran",
        ],
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output).lines().next(),
        Some(
            "bashtool: error: --limit pids is given twice with different values (64 and 128); give it once"
        )
    );
    assert!(!marker.exists());
}

#[test]
fn a_bad_limits_section_is_refused_and_nothing_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[limits]\npids = 0\n").expect("write");
    let output = bashtool(
        dir.path(),
        &[
            "run",
            "--config",
            config.to_str().expect("utf-8"),
            "--",
            "touch",
            "ran",
        ],
    );
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains("pids=0: the pids limit is a whole number of processes"),
        "{text}"
    );
    assert!(!dir.path().join("ran").exists());
}

fn call_json(dir: &Path, args: &[&str], input: &Value) -> Value {
    let mut command = Command::new(BASHTOOL);
    command
        .arg("call")
        .args(args)
        .current_dir(dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"));
    bashtool_tests::call_json(command, &input.to_string()).0
}

#[test]
fn limits_reach_a_remote_serve_and_its_own_limit_caps_them() {
    if bashtool_tests::cgroups::skip_here() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = format!("{BASHTOOL} serve");
    let result = call_json(
        dir.path(),
        &["--remote", &serve, "--limit", "pids=64"],
        &json!({"command": PRINT_PIDS_MAX}),
    );
    assert_eq!(result["content"][0]["text"], "stdout:\n64\nexit code 0");
    assert_eq!(result["details"]["limits"]["pids"], 64);
    // The server's own --limit holds against a looser one asked for.
    let capped = format!("{BASHTOOL} serve --limit pids=32");
    let result = call_json(
        dir.path(),
        &["--remote", &capped, "--limit", "pids=64"],
        &json!({"command": PRINT_PIDS_MAX}),
    );
    assert_eq!(result["content"][0]["text"], "stdout:\n32\nexit code 0");
    assert_eq!(result["details"]["limits"]["pids"], 32);
    // Locally, the same flag.
    let result = call_json(
        dir.path(),
        &["--limit", "pids=48"],
        &json!({"command": PRINT_PIDS_MAX}),
    );
    assert_eq!(result["content"][0]["text"], "stdout:\n48\nexit code 0");
}

/// The binary as the unprivileged user, in its `work` directory, with its
/// own state directory.
fn as_nobody(user: &Nobody, args: &[&str]) -> Command {
    let mut command = user.command(args);
    command
        .current_dir(user.home.join("work"))
        .env("BASHTOOL_STATE_DIR", user.home.join("state"));
    command
}

/// True when the unprivileged user cannot make cgroups here (the usual
/// case: v1 is root's, and no v2 subtree is delegated to uid 65534).
fn has_no_cgroups(user: &Nobody) -> bool {
    let output = as_nobody(user, &["sandbox"])
        .stdin(Stdio::null())
        .output()
        .expect("sandbox");
    String::from_utf8_lossy(&output.stdout).contains("not in force: ")
}

#[test]
fn without_cgroups_asked_limits_are_an_error_and_the_default_is_said_to_be_off() {
    let Some(user) = nobody(Path::new(BASHTOOL)) else {
        eprintln!("skipped: not root, so no other user to run as");
        return;
    };
    if !has_no_cgroups(&user) {
        eprintln!("skipped: uid 65534 has cgroups here");
        return;
    }
    let output = as_nobody(
        &user,
        &["run", "--limit", "memory=256M", "--", "touch", "ran"],
    )
    .stdin(Stdio::null())
    .output()
    .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.starts_with(
            "bashtool: error: --limit memory=256 MiB: the memory limit cannot be enforced here: "
        ),
        "{text}"
    );
    assert!(
        text.contains("commands do not run without the limits asked for"),
        "{text}"
    );
    assert!(!user.home.join("work/ran").exists());
    // The default pids limit is not in force, and the result says so.
    let mut call = as_nobody(&user, &["call"]);
    call.stderr(Stdio::piped());
    let (result, _) = bashtool_tests::call_json(call, &json!({"command": "true"}).to_string());
    assert_eq!(result["details"]["success"], true, "{result}");
    let limits = &result["details"]["limits"];
    assert_eq!(limits.get("pids"), None, "{limits}");
    assert!(
        limits["not_in_force"].as_str().is_some_and(|reason| reason
            .starts_with("bashtool's default pids limit (4096) is not in force here: pids: ")),
        "{limits}"
    );
    let sandbox = as_nobody(&user, &["sandbox"])
        .stdin(Stdio::null())
        .output()
        .expect("sandbox");
    let report = String::from_utf8_lossy(&sandbox.stdout);
    assert!(
        report.contains("  limits per command: pids off, memory off, cpu off\n"),
        "{report}"
    );
    assert!(
        report.contains(
            "  not in force: bashtool's default pids limit (4096) is not in force here: "
        ),
        "{report}"
    );
}

#[test]
fn sandbox_reports_the_cgroups_and_the_limits_in_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = bashtool(dir.path(), &["sandbox", "--limit", "pids=512"]);
    let report = String::from_utf8_lossy(&output.stdout);
    let cgroups = report
        .lines()
        .find(|line| line.starts_with("  cgroups: "))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        [
            "  cgroups: v1 and v2 (hybrid)",
            "  cgroups: v1",
            "  cgroups: v2",
            "  cgroups: none"
        ]
        .contains(&cgroups),
        "{cgroups}"
    );
    if bashtool_tests::cgroups::unavailable().is_none() {
        assert_eq!(output.status.code(), Some(0), "{report}");
        assert!(
            report.contains("  limits per command: pids 512, memory off, cpu off\n"),
            "{report}"
        );
        assert!(report.contains("  enforced by: cgroup v"), "{report}");
    }
}

/// A load through `bashtool call`: the command writes its cgroup and
/// waits on a FIFO; the test reads the limit back from the kernel (the
/// first of `limit_files` (v1, v2 names) its cgroups have: `expected`), starts a watchdog on the command's cgroups, lets
/// it go, and returns the result, the cgroups and the watchdog (which
/// kills what is left when dropped, so the test looks before). Nothing
/// loads before the limit is seen.
fn call_under_limit(
    dir: &Path,
    limit: &str,
    load: &str,
    limit_files: &[&str],
    expected: &str,
) -> (Value, Vec<PathBuf>, bashtool_tests::cgroups::Watchdog) {
    use bashtool_tests::cgroups::{Watchdog, dirs_of, read};
    use std::io::Write as _;
    let fifo = dir.join("go.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let report = dir.join("cgroup.txt");
    let command = format!(
        "cat /proc/self/cgroup > '{}'; read -r _ < '{}'; {load}",
        report.display(),
        fifo.display()
    );
    let input = json!({"command": command, "timeout": 8}).to_string();
    let mut call = Command::new(BASHTOOL);
    call.args(["call", "--limit", limit])
        .current_dir(dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"));
    let running = std::thread::spawn(move || bashtool_tests::call_json(call, &input).0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let text = loop {
        match std::fs::read_to_string(&report) {
            Ok(text) if text.ends_with('\n') => break text,
            _ if std::time::Instant::now() > deadline => panic!("no cgroup reported"),
            _ => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    };
    let dirs = dirs_of(&text);
    let limit = dirs
        .iter()
        .find_map(|dir| {
            limit_files
                .iter()
                .map(|file| dir.join(file))
                .find(|path| path.exists())
        })
        .unwrap_or_else(|| panic!("none of {dirs:?} has {limit_files:?}"));
    assert_eq!(read(&limit), expected);
    let watchdog = Watchdog::start(dirs.clone(), std::time::Duration::from_secs(60));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&fifo)
        .expect("open the fifo")
        .write_all(b"go\n")
        .expect("write the fifo");
    (running.join().expect("the call"), dirs, watchdog)
}

#[test]
fn through_the_binary_a_600_mb_allocation_is_killed_at_memory_256m_with_the_note() {
    if bashtool_tests::cgroups::skip_here() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (result, _, _watchdog) = call_under_limit(
        dir.path(),
        "memory=256M",
        "python3 -c 'x = b\"x\" * (600 << 20); print(len(x))'",
        &["memory.limit_in_bytes", "memory.max"],
        &(256_u64 << 20).to_string(),
    );
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(
        text.contains("\n[the command reached its memory limit of 256 MiB and was killed]\n"),
        "{text}"
    );
    assert_eq!(result["details"]["limits"]["memory"], 256_u64 << 20);
}

#[test]
fn through_the_binary_300_sleepers_stop_at_pids_64_with_the_note_and_nothing_left() {
    if bashtool_tests::cgroups::skip_here() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (result, dirs, _watchdog) = call_under_limit(
        dir.path(),
        "pids=64",
        "for i in $(seq 300); do sleep 1000 & done; wait",
        &["pids.max"],
        "64",
    );
    assert_eq!(result["details"]["timed_out"], true, "{result}");
    let notes = result["details"]["notes"].as_array().expect("notes");
    assert!(
        notes.iter().any(|note| note.as_str().is_some_and(
            |note| note.starts_with("the command reached its limit of 64 processes (pids): ")
        )),
        "{notes:?}"
    );
    // Nothing is left in the command's cgroups (or they are gone).
    for dir in &dirs {
        assert_eq!(
            bashtool_tests::cgroups::members(dir),
            Vec::<u32>::new(),
            "{}",
            dir.display()
        );
    }
}
