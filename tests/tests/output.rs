//! Output hygiene as the model and the log see it.

use bashtool_tests::{local_exec, run, temp_dir, text};

#[tokio::test]
async fn invalid_utf8_becomes_replacement_characters() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(&exec, r"printf 'a\377b\303(c\n'").await;
    assert_eq!(text(&result), "a\u{FFFD}b\u{FFFD}(c");
}

#[tokio::test]
async fn characters_split_across_writes_stay_whole() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    // The crab's four bytes arrive in three writes, 50 ms apart.
    let result = run(
        &exec,
        r"printf '\360'; sleep 0.05; printf '\237\246'; sleep 0.05; printf '\200 done\n'",
    )
    .await;
    assert_eq!(text(&result), "🦀 done");
}

#[tokio::test]
async fn ansi_and_osc_sequences_are_stripped() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(
        &exec,
        r"printf '\033[1;31merror\033[0m: \033]8;;http://x\033\\link\033]8;;\033\\ \033]0;title\007ok\n'; printf '\033[3'; sleep 0.05; printf '2mgreen\033[0m\n'",
    )
    .await;
    assert_eq!(text(&result), "error: link ok\ngreen");
}

#[tokio::test]
async fn progress_lines_collapse_to_their_last_state() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(
        &exec,
        r"printf '10%%\r'; sleep 0.05; printf '50%%\r100%%\n'; printf 'dos\r\nline\n'",
    )
    .await;
    assert_eq!(text(&result), "100%\ndos\nline");
}

#[tokio::test]
async fn other_control_characters_are_removed() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(&exec, r"printf 'a\000b\007c\tend\n'").await;
    assert_eq!(text(&result), "abc\tend");
}

#[tokio::test]
async fn the_log_gets_the_same_cleaned_text() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(
        &exec,
        r"printf '\033[32mok\033[0m \377\n'; printf '1\r2\n' >&2",
    )
    .await;
    let log = std::fs::read_to_string(result.log_file.expect("a log")).expect("read log");
    assert!(
        log.ends_with("stdout:\nok \u{FFFD}\nstderr:\n2\n"),
        "{log:?}"
    );
}
