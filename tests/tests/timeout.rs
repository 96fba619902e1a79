//! Timeout and cancel: the whole tree stops (grandchildren and setsid
//! escapees too), partial output is kept, and the model is told.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bashtool_core::{BashTool, CallContext, SpawnOptions, ToolConfig};
use bashtool_tests::{
    ESCAPEE, grandchildren_script, kill_all, local_exec, pids_in, run_with, survivors_after,
    temp_dir, text,
};
use tokio_util::sync::CancellationToken;

const DEATH_LIMIT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn timeout_stops_the_tree_and_keeps_partial_output() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let script = format!("echo partial\n{}sleep 300", grandchildren_script(3));
    let started = Instant::now();
    let result = run_with(
        &exec,
        &script,
        SpawnOptions::default().timeout(Duration::from_secs(1)),
    )
    .await
    .expect("runs");
    let elapsed = started.elapsed();
    assert!(result.timed_out);
    assert!(!result.cancelled);
    let output = text(&result);
    assert!(output.starts_with("partial"), "{output}");
    let pids = pids_in(&output);
    assert_eq!(pids.len(), 3, "{output}");
    let survivors = survivors_after(&pids, DEATH_LIMIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
    // SIGTERM ends sleep at once: no need for the kill grace.
    assert!(elapsed < Duration::from_millis(1900), "{elapsed:?}");
}

#[tokio::test]
async fn timeout_stops_a_setsid_escapee() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let script = format!("{ESCAPEE}\nsleep 300");
    let result = run_with(
        &exec,
        &script,
        SpawnOptions::default().timeout(Duration::from_secs(1)),
    )
    .await
    .expect("runs");
    assert!(result.timed_out);
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 1, "{}", text(&result));
    let survivors = survivors_after(&pids, DEATH_LIMIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
}

#[tokio::test]
async fn timeout_kills_what_ignores_sigterm_after_the_grace() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let script =
        "trap '' TERM; sh -c 'trap \"\" TERM; echo pid:$$; while :; do sleep 1; done' & sleep 300";
    let started = Instant::now();
    let result = run_with(
        &exec,
        script,
        SpawnOptions::default().timeout(Duration::from_secs(1)),
    )
    .await
    .expect("runs");
    let elapsed = started.elapsed();
    assert!(result.timed_out);
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 1);
    let survivors = survivors_after(&pids, DEATH_LIMIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
    // Timeout (1 s) + grace (1 s) + a little.
    assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
}

#[tokio::test]
async fn cancel_stops_the_tree() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let cancel = CancellationToken::new();
    let printed = Arc::new(std::sync::Mutex::new(String::new()));
    let sink_text = Arc::clone(&printed);
    let trigger = cancel.clone();
    let options = SpawnOptions::default()
        .timeout(Duration::from_secs(30))
        .cancel(cancel)
        .on_output(Arc::new(move |chunk| {
            let mut printed = sink_text.lock().expect("sink lock");
            printed.push_str(&chunk.text);
            if printed.matches("pid:").count() == 3 {
                trigger.cancel();
            }
        }));
    let script = format!("{}{ESCAPEE}\nsleep 300", grandchildren_script(2));
    let result = run_with(&exec, &script, options).await.expect("runs");
    assert!(result.cancelled);
    assert!(!result.timed_out);
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 3, "{}", text(&result));
    let survivors = survivors_after(&pids, DEATH_LIMIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
}

#[tokio::test]
async fn dropping_the_call_stops_the_tree() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let (sender, receiver) = tokio::sync::oneshot::channel::<String>();
    let sender = std::sync::Mutex::new(Some(sender));
    let options = SpawnOptions::default().on_output(Arc::new(move |chunk| {
        if chunk.text.contains("pid:")
            && let Some(sender) = sender.lock().expect("sink lock").take()
        {
            let _ = sender.send(chunk.text.clone());
        }
    }));
    let script = format!("{ESCAPEE}\nsleep 300");
    let call = run_with(&exec, &script, options);
    let printed = tokio::select! {
        printed = receiver => printed.expect("printed"),
        _ = call => panic!("the call ended by itself"),
    };
    let pids = pids_in(&printed);
    assert_eq!(pids.len(), 1);
    let survivors = survivors_after(&pids, DEATH_LIMIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
}

#[tokio::test]
async fn the_model_sees_partial_output_and_the_timeout_line() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let tool = BashTool::new(ToolConfig::default(), Arc::new(exec));
    let result = tool
        .call_with(
            &serde_json::json!({"command": "echo step one; sleep 300", "timeout": 1}),
            CallContext::default(),
        )
        .await;
    assert!(result.is_error);
    let text = result.text();
    assert!(
        text.starts_with("stdout:\nstep one\n[command timed out after 1s; its process tree was stopped and the output so far is above."),
        "{text}"
    );
    assert!(text.contains("mode \"slow\""), "{text}");
}
