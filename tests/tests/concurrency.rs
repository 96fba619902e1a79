//! Many calls at once on one environment: no interference, no fd leaks,
//! no zombies.

use bashtool_tests::{local_exec, run, temp_dir, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_parallel_calls_do_not_interfere() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let calls = (0..50).map(|number| {
        let exec = exec.clone();
        tokio::spawn(async move {
            let result = run(&exec, &format!("for i in 1 2 3; do echo call-{number}-$i; sleep 0.01; done; echo err-{number} >&2; exit $(( {number} % 7 ))")).await;
            (number, result)
        })
    });
    for call in calls {
        let (number, result) = call.await.expect("the task finishes");
        assert_eq!(result.exit_code, Some(number % 7));
        let output = text(&result);
        let mut lines: Vec<&str> = output.lines().collect();
        lines.sort_unstable();
        let mut expected = vec![
            format!("call-{number}-1"),
            format!("call-{number}-2"),
            format!("call-{number}-3"),
            format!("err-{number}"),
        ];
        expected.sort_unstable();
        assert_eq!(lines, expected);
        let log = std::fs::read_to_string(result.log_file.expect("log")).expect("read");
        assert!(log.contains(&format!("call-{number}-3")));
        assert!(result.notes.is_empty(), "{:?}", result.notes);
    }
}
