//! Interactive jobs with real programs in a real pseudo-terminal. States
//! are asserted, never timings; every wait has a generous deadline, and
//! process deaths are checked in `/proc`, not with the code under test.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bashtool_env_local::{
    Detection, InteractiveJob, InteractiveOptions, InteractiveState, Key, LocalConfig, Snapshot,
    interactive_launch,
};
use bashtool_process::RunMarker;
use tokio::time::Instant;

/// Long enough for a loaded machine; the states, not the time, are tested.
const PATIENCE: Duration = Duration::from_secs(20);

fn start_with(command: &str, env: &[(&str, &str)], options: InteractiveOptions) -> InteractiveJob {
    common::start_job(command, env, options)
}

fn start(command: &str) -> InteractiveJob {
    start_with(command, &[], InteractiveOptions::default())
}

fn soon() -> Instant {
    Instant::now() + PATIENCE
}

fn keys(names: &[&str]) -> Vec<Key> {
    Key::parse_all(names).expect("known keys")
}

fn exited_with(snapshot: &Snapshot, code: i32) -> bool {
    matches!(&snapshot.state, InteractiveState::Exited(exit) if exit.code == Some(code))
}

/// True while `pid` exists and is not a zombie, read from `/proc`.
fn pid_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

/// Waits until `pid` is gone, up to the patience; true when it is.
async fn gone(pid: u32) -> bool {
    let deadline = soon();
    while pid_running(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// The pids of `parent`'s children named `name`, from `/proc`.
fn children_named(parent: u32, name: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let comm = stat
                .split('(')
                .nth(1)
                .and_then(|rest| rest.rsplit_once(')'));
            let Some((comm, rest)) = comm else {
                return false;
            };
            let parent_field = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            comm == name && parent_field == Some(parent)
        })
        .collect()
}

/// Waits until `shell` has a `sleep` child (it forks, then execs), up to
/// the patience; returns their pids.
async fn sleep_under(shell: u32) -> Vec<u32> {
    let deadline = soon();
    loop {
        let sleeps = children_named(shell, "sleep");
        if !sleeps.is_empty() || Instant::now() >= deadline {
            return sleeps;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_prompt_is_awaiting_input_and_the_answer_goes_through() {
    let mut job = start("read -p 'Continue? ' answer; echo \"got $answer\"");
    let first = job.wait_until(soon()).await;
    assert_eq!(first.state, InteractiveState::AwaitingInput);
    assert_eq!(first.detection, Some(Detection::Kernel));
    assert_eq!(first.text, "Continue? ");
    assert_eq!(first.screen, None);
    assert_eq!(job.state().await, InteractiveState::AwaitingInput);
    assert!(!first.echo_off);
    let second = job
        .write("yes", &keys(&["Enter"]), soon())
        .await
        .expect("written");
    assert!(exited_with(&second, 0), "{second:?}");
    assert_eq!(second.text, "yes\ngot yes\n");
    assert!(!second.input_hidden);
}

#[tokio::test]
async fn python_evaluates_what_is_typed() {
    let mut job = start("python3 -i -q");
    let prompt = job.wait_until(soon()).await;
    assert_eq!(prompt.state, InteractiveState::AwaitingInput, "{prompt:?}");
    assert!(prompt.text.ends_with(">>> "), "{prompt:?}");
    let answer = job
        .write("1+1", &keys(&["Enter"]), soon())
        .await
        .expect("written");
    assert_eq!(answer.state, InteractiveState::AwaitingInput, "{answer:?}");
    assert_eq!(answer.text, "1+1\n2\n>>> ");
    let end = job
        .write("", &keys(&["C-d"]), soon())
        .await
        .expect("written");
    assert!(exited_with(&end, 0), "{end:?}");
}

#[tokio::test]
async fn text_typed_with_echo_off_is_never_shown_or_logged() {
    const SECRET: &str = "hunter2-do-not-log";
    let log = tempfile::NamedTempFile::new().expect("log file");
    let options = InteractiveOptions {
        log_file: Some(log.reopen().expect("reopen")),
        ..InteractiveOptions::default()
    };
    let mut job = start_with(
        "read -s -p 'Password: ' secret; echo; echo \"length ${#secret}\"",
        &[],
        options,
    );
    let prompt = job.wait_until(soon()).await;
    assert_eq!(prompt.state, InteractiveState::AwaitingInput);
    assert_eq!(prompt.text, "Password: ");
    assert!(prompt.echo_off, "read -s turns echo off: {prompt:?}");
    let done = job
        .write(SECRET, &keys(&["Enter"]), soon())
        .await
        .expect("written");
    assert!(exited_with(&done, 0), "{done:?}");
    assert!(done.input_hidden);
    assert_eq!(done.text, "\nlength 18\n");
    let last = job.stop().await;
    for snapshot in [&prompt, &done, &last] {
        assert!(!format!("{snapshot:?}").contains(SECRET));
    }
    assert!(!job.read(0, usize::MAX).text.contains(SECRET));
    let logged = std::fs::read_to_string(log.path()).expect("log");
    assert_eq!(logged, "Password: \nlength 18\n");
}

#[tokio::test]
async fn control_c_interrupts_the_foreground_command_and_the_shell_survives() {
    let mut job = start_with(
        "exec bash --norc --noprofile -i",
        &[("PS1", "$ ")],
        InteractiveOptions::default(),
    );
    let prompt = job.wait_until(soon()).await;
    assert_eq!(prompt.state, InteractiveState::AwaitingInput, "{prompt:?}");
    let shell = job.pid();
    let short = Instant::now() + Duration::from_millis(800);
    let sleeping = job
        .write("sleep 100", &keys(&["Enter"]), short)
        .await
        .expect("written");
    assert_eq!(sleeping.state, InteractiveState::Running, "{sleeping:?}");
    let sleeps = sleep_under(shell).await;
    assert_eq!(sleeps.len(), 1, "one sleep under the shell");
    let interrupted = job
        .write("", &keys(&["C-c"]), soon())
        .await
        .expect("written");
    assert_eq!(
        interrupted.state,
        InteractiveState::AwaitingInput,
        "{interrupted:?}"
    );
    assert!(gone(sleeps[0]).await, "sleep was interrupted");
    assert!(pid_running(shell), "the shell survived");
    let next = job
        .write("echo alive-$((40 + 2))", &keys(&["Enter"]), soon())
        .await
        .expect("written");
    assert_eq!(next.state, InteractiveState::AwaitingInput, "{next:?}");
    assert!(next.text.lines().any(|line| line == "alive-42"), "{next:?}");
    job.stop().await;
}

#[tokio::test]
async fn a_full_screen_program_returns_its_rendered_screen() {
    let directory = tempfile::tempdir().expect("temp dir");
    let file = directory.path().join("numbers.txt");
    let lines: String = (1..=200).map(|number| format!("line {number}\n")).collect();
    std::fs::write(&file, lines).expect("file written");
    let mut job = start(&format!("less {}", file.display()));
    let shown = job.wait_until(soon()).await;
    assert_eq!(shown.state, InteractiveState::AwaitingInput, "{shown:?}");
    let screen = shown
        .screen
        .expect("a full-screen program shows its screen");
    let rows: Vec<&str> = screen.lines().collect();
    assert_eq!(rows.len(), 40, "{screen}");
    let expected: Vec<String> = (1..=39).map(|number| format!("line {number}")).collect();
    assert_eq!(rows[..39], expected[..]);
    let paged = job
        .write("", &keys(&["PageDown"]), soon())
        .await
        .expect("written");
    let screen = paged.screen.expect("still a screen");
    assert_eq!(screen.lines().next(), Some("line 40"), "{screen}");
    let quit = job.write("q", &[], soon()).await.expect("written");
    assert!(exited_with(&quit, 0), "{quit:?}");
    assert_eq!(quit.screen, None);
}

#[tokio::test]
async fn a_program_that_prints_without_reading_is_running_at_the_yield() {
    let mut job = start("for i in $(seq 1 600); do echo tick $i; sleep 0.05; done");
    let snapshot = job
        .wait_until(Instant::now() + Duration::from_secs(3))
        .await;
    assert_eq!(snapshot.state, InteractiveState::Running, "{snapshot:?}");
    assert!(snapshot.text.starts_with("tick 1\n"), "{snapshot:?}");
    let stopped = job.stop().await;
    assert!(matches!(&stopped.state, InteractiveState::Exited(exit) if exit.stopped));
}

#[tokio::test]
async fn a_silent_program_that_does_not_read_is_running_at_the_yield() {
    let mut job = start("sleep 30");
    let snapshot = job
        .wait_until(Instant::now() + Duration::from_secs(1))
        .await;
    assert_eq!(snapshot.state, InteractiveState::Running, "{snapshot:?}");
    assert_eq!(job.state().await, InteractiveState::Running);
    job.stop().await;
}

#[tokio::test]
async fn stop_kills_the_whole_tree() {
    let mut job =
        start("sleep 300 & echo \"child $!\"; setsid sleep 301 & echo \"escapee $!\"; read line");
    let waiting = job.wait_until(soon()).await;
    assert_eq!(
        waiting.state,
        InteractiveState::AwaitingInput,
        "{waiting:?}"
    );
    let pid_of = |label: &str| -> u32 {
        waiting
            .text
            .lines()
            .find_map(|line| line.strip_prefix(label)?.trim().parse().ok())
            .expect("pid printed")
    };
    let pids = [job.pid(), pid_of("child"), pid_of("escapee")];
    assert!(pids.iter().all(|&pid| pid_running(pid)));
    let stopped = job.stop().await;
    assert!(
        matches!(&stopped.state, InteractiveState::Exited(exit) if exit.stopped && exit.signal.is_some()),
        "{stopped:?}"
    );
    for pid in pids {
        assert!(gone(pid).await, "pid {pid} survived stop");
    }
}

#[tokio::test]
async fn dropping_a_job_kills_the_tree() {
    let mut job = start("sleep 300 & echo \"child $!\"; read line");
    let waiting = job.wait_until(soon()).await;
    assert_eq!(
        waiting.state,
        InteractiveState::AwaitingInput,
        "{waiting:?}"
    );
    let child: u32 = waiting
        .text
        .lines()
        .find_map(|line| line.strip_prefix("child ")?.parse().ok())
        .expect("pid printed");
    let root = job.pid();
    drop(job);
    assert!(gone(root).await, "the root was killed and reaped");
    assert!(gone(child).await, "the child was killed");
}

#[tokio::test]
async fn the_timeout_stops_the_tree() {
    let options = InteractiveOptions {
        timeout: Some(Duration::from_millis(500)),
        ..InteractiveOptions::default()
    };
    let mut job = start_with("sleep 300", &[], options);
    let pid = job.pid();
    let snapshot = job.wait_until(soon()).await;
    assert!(
        matches!(&snapshot.state, InteractiveState::Exited(exit) if exit.timed_out),
        "{snapshot:?}"
    );
    assert!(gone(pid).await);
}

#[tokio::test]
async fn writing_to_an_ended_job_is_an_error() {
    let mut job = start("echo bye");
    let end = job.wait_until(soon()).await;
    assert!(exited_with(&end, 0), "{end:?}");
    assert_eq!(end.text, "bye\n");
    let error = job.write("x", &[], soon()).await.expect_err("closed");
    assert_eq!(
        error.to_string(),
        "the interactive job has ended (exit code 0); its input is closed, start a new one"
    );
}

#[tokio::test]
async fn reads_by_cursor_return_everything_in_order() {
    let mut job = start("seq 1 2000");
    let end = job.wait_until(soon()).await;
    assert!(exited_with(&end, 0));
    let expected: String = (1..=2000).map(|number| format!("{number}\n")).collect();
    assert_eq!(end.text, expected);
    let mut cursor = 0;
    let mut pieces = String::new();
    loop {
        let read = job.read(cursor, 1000);
        if read.text.is_empty() {
            break;
        }
        assert_eq!(read.dropped, 0);
        pieces.push_str(&read.text);
        cursor = read.next;
    }
    assert_eq!(pieces, expected);
}

#[tokio::test]
async fn waiting_in_poll_epoll_or_on_dev_tty_is_awaiting_input() {
    let commands = [
        // poll(2) on stdin, then a line.
        "python3 -c 'import select,sys; p=select.poll(); p.register(0, select.POLLIN); \
         print(\"ready\", flush=True); p.poll(); print(\"got\", sys.stdin.readline().strip())'",
        // epoll_wait(2) on stdin, then a line.
        "python3 -c 'import select,sys; e=select.epoll(); e.register(0, select.EPOLLIN); \
         print(\"ready\", flush=True); e.poll(); print(\"got\", sys.stdin.readline().strip())'",
        // The controlling terminal opened by name, as sudo and ssh do.
        "echo ready; read line < /dev/tty; echo \"got $line\"",
    ];
    for command in commands {
        let mut job = start(command);
        let waiting = job.wait_until(soon()).await;
        assert_eq!(
            waiting.state,
            InteractiveState::AwaitingInput,
            "{command}: {waiting:?}"
        );
        assert_eq!(waiting.detection, Some(Detection::Kernel));
        assert_eq!(waiting.text, "ready\n");
        let done = job
            .write("it", &keys(&["Enter"]), soon())
            .await
            .expect("written");
        assert!(exited_with(&done, 0), "{command}: {done:?}");
        assert_eq!(done.text, "it\ngot it\n", "{command}");
    }
}

#[tokio::test]
async fn a_program_reading_a_pipe_is_not_awaiting_input() {
    // `cat` reads the pipe, not the terminal; nothing reads the terminal.
    let mut job = start("sleep 30 | cat");
    let snapshot = job
        .wait_until(Instant::now() + Duration::from_secs(1))
        .await;
    assert_eq!(snapshot.state, InteractiveState::Running, "{snapshot:?}");
    job.stop().await;
}

#[tokio::test]
async fn a_process_the_kernel_will_not_show_falls_back_to_the_silence_timer() {
    // A non-dumpable process (as setuid programs like sudo are) hides its
    // system calls from other processes of its user; root still sees them.
    let options = InteractiveOptions {
        silence_fallback: Duration::from_millis(500),
        ..InteractiveOptions::default()
    };
    let mut job = start_with(
        "python3 -c 'import ctypes; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); input(\"name? \")'",
        &[],
        options,
    );
    let waiting = job.wait_until(soon()).await;
    assert_eq!(
        waiting.state,
        InteractiveState::AwaitingInput,
        "{waiting:?}"
    );
    // `/proc/self` belongs to our effective user.
    let privileged =
        std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").expect("/proc/self"))
            == 0;
    let expected = if privileged {
        Detection::Kernel
    } else {
        Detection::SilenceTimer
    };
    assert_eq!(waiting.detection, Some(expected));
    assert_eq!(waiting.text, "name? ");
    job.stop().await;
}

#[tokio::test]
async fn a_flood_of_output_keeps_memory_bounded_and_the_log_has_every_line() {
    let log = tempfile::NamedTempFile::new().expect("log file");
    let options = InteractiveOptions {
        text_capacity: 64 * 1024,
        log_file: Some(log.reopen().expect("reopen")),
        ..InteractiveOptions::default()
    };
    let mut job = start_with("seq 1 200000; echo last", &[], options);
    let end = job
        .wait_until(Instant::now() + Duration::from_secs(120))
        .await;
    assert!(exited_with(&end, 0), "{:?}", end.state);
    assert!(end.text.len() <= 64 * 1024, "{}", end.text.len());
    assert!(end.text.ends_with("\n199999\n200000\nlast\n"));
    assert!(end.dropped > 0, "the start no longer fits in memory");
    let expected: String = (1..=200_000).map(|number| format!("{number}\n")).collect();
    let logged = std::fs::read_to_string(log.path()).expect("log");
    assert!(logged == expected + "last\n", "the log has every line");
    // The window holds the end of the stream, and says how much is gone.
    // (The terminal adds `\r` before each `\n`, except that the kernel may
    // drop one under back-pressure, so the stream length is not exact.)
    assert!(end.cursor > logged.len() as u64);
    let tail = job.read(0, usize::MAX);
    assert_eq!(tail.next, end.cursor);
    assert_eq!(tail.dropped, end.dropped);
}

#[tokio::test]
async fn the_terminal_answers_a_cursor_position_query() {
    // Programs like irb ask where the cursor is and wait for the answer.
    let mut job = start(
        "stty -icanon -echo; printf 'ab\\033[6n'; IFS= read -r -d R reply; \
         stty icanon echo; echo \" position ${reply#*[}\"",
    );
    let end = job.wait_until(soon()).await;
    assert!(exited_with(&end, 0), "{end:?}");
    assert_eq!(end.text, "ab position 1;3\n");
}

#[tokio::test]
async fn vi_shows_its_screen_and_takes_keys() {
    let directory = tempfile::tempdir().expect("temp dir");
    let file = directory.path().join("notes.txt");
    std::fs::write(&file, "first line\nsecond line\n").expect("file written");
    let mut job = start(&format!("vim -u NONE -i NONE -n {}", file.display()));
    let shown = job.wait_until(soon()).await;
    assert_eq!(shown.state, InteractiveState::AwaitingInput, "{shown:?}");
    let screen = shown.screen.expect("vim shows a screen");
    assert!(
        screen.starts_with("first line\nsecond line\n~\n"),
        "{screen}"
    );
    // Go to the end of the file, add a line, save and quit.
    let edited = job
        .write("Goadded line", &keys(&["Esc"]), soon())
        .await
        .expect("written");
    assert_eq!(edited.state, InteractiveState::AwaitingInput, "{edited:?}");
    let quit = job
        .write(":wq", &keys(&["Enter"]), soon())
        .await
        .expect("written");
    assert!(exited_with(&quit, 0), "{quit:?}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        "first line\nsecond line\nadded line\n"
    );
}

/// A wrapper like a sandbox: it rewrites the launch and runs a step in the
/// child (here: a umask, async-signal-safe).
#[derive(Debug)]
struct UmaskWrapper;

// SAFETY: `pre_exec` makes one system call (umask) and returns.
#[allow(unsafe_code)]
unsafe impl bashtool_process::Wrapper for UmaskWrapper {
    fn wrap(&self, launch: &mut bashtool_process::Launch) -> Result<(), bashtool_process::Error> {
        launch.env.push(("WRAPPED".into(), "yes".into()));
        Ok(())
    }

    fn needs_pre_exec(&self) -> bool {
        true
    }

    fn pre_exec(&self) -> std::io::Result<()> {
        // SAFETY: umask only sets the process's file mode mask.
        #[allow(unsafe_code)]
        unsafe {
            libc::umask(0o077);
        }
        Ok(())
    }
}

#[tokio::test]
async fn the_wrappers_apply_to_interactive_jobs() {
    let wrappers: Vec<std::sync::Arc<dyn bashtool_process::Wrapper>> =
        vec![std::sync::Arc::new(UmaskWrapper)];
    let marker = RunMarker::new();
    let launch = interactive_launch(
        &LocalConfig::default(),
        "echo \"wrapped=$WRAPPED umask=$(umask)\"; [ -t 0 ] && echo terminal",
        Path::new("/tmp"),
        &BTreeMap::new(),
        &marker,
    );
    let mut job = InteractiveJob::start(launch, &wrappers, marker, InteractiveOptions::default())
        .expect("starts");
    let end = job.wait_until(soon()).await;
    assert!(exited_with(&end, 0), "{end:?}");
    assert_eq!(end.text, "wrapped=yes umask=0077\nterminal\n");
}

#[tokio::test]
async fn input_the_program_does_not_take_is_an_error_at_the_deadline() {
    // Raw mode: the kernel keeps what it cannot pass on and pushes back.
    let mut job = start("stty -icanon -echo; sleep 30");
    let ready = job
        .wait_until(Instant::now() + Duration::from_millis(500))
        .await;
    assert_eq!(ready.state, InteractiveState::Running);
    let text = "x".repeat(1024 * 1024);
    let deadline = Instant::now() + Duration::from_secs(1);
    let error = job.send(&text, &[], deadline).await.expect_err("not taken");
    let bashtool_env_local::Error::InputNotTaken { written, total } = error else {
        panic!("{error}");
    };
    assert_eq!(total, 1024 * 1024);
    assert!(written < total, "{written}");
    job.stop().await;
}

#[tokio::test]
async fn a_line_longer_than_the_line_mode_allows_is_refused() {
    let mut job = start("read line; echo ${#line}");
    let waiting = job.wait_until(soon()).await;
    assert_eq!(waiting.state, InteractiveState::AwaitingInput);
    let error = job
        .send(&"y".repeat(5000), &keys(&["Enter"]), soon())
        .await
        .expect_err("refused");
    assert_eq!(
        error.to_string(),
        "a line of 5000 bytes is longer than the terminal takes in line mode (4095 bytes); \
         nothing was sent: send shorter lines, or pass long text through a file"
    );
    let done = job
        .write(&"y".repeat(4000), &keys(&["Enter"]), soon())
        .await
        .expect("sent");
    assert!(exited_with(&done, 0), "{done:?}");
    assert!(done.text.ends_with("\n4000\n"), "{done:?}");
}

#[tokio::test]
async fn the_terminal_has_the_configured_size_and_can_be_resized() {
    let options = InteractiveOptions {
        size: bashtool_process::TerminalSize {
            columns: 100,
            rows: 30,
        },
        ..InteractiveOptions::default()
    };
    let mut job = start_with("stty size; read line; stty size", &[], options);
    let first = job.wait_until(soon()).await;
    assert_eq!(first.state, InteractiveState::AwaitingInput);
    assert_eq!(first.text, "30 100\n");
    job.resize(bashtool_process::TerminalSize {
        columns: 80,
        rows: 24,
    })
    .expect("resized");
    let end = job
        .write("", &keys(&["Enter"]), soon())
        .await
        .expect("sent");
    assert!(exited_with(&end, 0), "{end:?}");
    assert_eq!(end.text, "\n24 80\n");
}
