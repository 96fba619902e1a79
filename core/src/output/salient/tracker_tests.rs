//! Tests of the salient tracker (kept apart: the tracker's own file stays
//! one job).

use super::*;
use crate::output::chunk::Stream;

fn line(number: u64, text: &str) -> OutputLine {
    OutputLine {
        stream: Stream::Stdout,
        text: text.to_owned(),
        number,
        log_line: None,
        original_chars: text.chars().count(),
    }
}

fn tracker_of(lines: &[&str]) -> SalientTracker {
    let mut tracker = SalientTracker::new(&OutputConfig::default());
    for (index, text) in lines.iter().enumerate() {
        tracker.observe(&line(index as u64 + 1, text));
    }
    tracker
}

fn group_texts(tracker: &SalientTracker) -> Vec<Vec<(String, u64, bool)>> {
    tracker
        .groups()
        .iter()
        .map(|group| {
            group
                .entries
                .iter()
                .map(|entry| (entry.line.text.clone(), entry.count, entry.salient))
                .collect()
        })
        .collect()
}

#[test]
fn keeps_a_rustc_error_with_its_location_until_the_blank_line() {
    let tracker = tracker_of(&[
        "   Compiling beta v0.1.0",
        "error[E0308]: mismatched types",
        " --> beta/src/lib.rs:2:21",
        "  |",
        "2 |     let port: u16 = text.trim();",
        "",
        "warning: unused variable",
    ]);
    assert_eq!(
        group_texts(&tracker),
        [vec![
            ("   Compiling beta v0.1.0".to_owned(), 1, false),
            ("error[E0308]: mismatched types".to_owned(), 1, true),
            (" --> beta/src/lib.rs:2:21".to_owned(), 1, false),
            ("  |".to_owned(), 1, false),
            ("2 |     let port: u16 = text.trim();".to_owned(), 1, false),
        ]]
    );
}

#[test]
fn keeps_the_last_frames_before_an_exception_line() {
    let tracker = tracker_of(&[
        "log 1",
        "  File \"app.py\", line 3, in a",
        "    b()",
        "  File \"app.py\", line 8, in b",
        "    return CONFIG[key]",
        "KeyError: 'user'",
        "",
        "log 2",
        "log 3",
    ]);
    let groups = group_texts(&tracker);
    assert_eq!(groups.len(), 1);
    let texts: Vec<&str> = groups[0].iter().map(|entry| entry.0.as_str()).collect();
    assert_eq!(
        texts,
        [
            "  File \"app.py\", line 3, in a",
            "    b()",
            "  File \"app.py\", line 8, in b",
            "    return CONFIG[key]",
            "KeyError: 'user'",
            "",
            "log 2",
        ]
    );
}

#[test]
fn keeps_the_heading_of_an_indented_error_further_back_than_the_context() {
    let tracker = tracker_of(&[
        "src/module27.js",
        "  1:7   warning  'helper' is assigned a value but never used",
        "  2:10  warning  'unused' is defined but never used",
        "  2:21  warning  'b' is defined but never used",
        "  2:26  warning  Unexpected console statement",
        "  3:24  error    'fetchConfg' is not defined  no-undef",
        "",
    ]);
    let numbers: Vec<(u64, bool)> = tracker.groups()[0]
        .entries
        .iter()
        .map(|entry| (entry.line.number, entry.salient))
        .collect();
    assert_eq!(numbers, [(1, false), (5, false), (6, true)]);
}

#[test]
fn collapses_repeated_error_lines_into_one_entry() {
    let mut lines = vec!["start"];
    lines.extend(std::iter::repeat_n("grep: x: Permission denied", 1000));
    let tracker = tracker_of(&lines);
    assert_eq!(
        group_texts(&tracker),
        [vec![
            ("start".to_owned(), 1, false),
            ("grep: x: Permission denied".to_owned(), 1000, true),
        ]]
    );
}

#[test]
fn counts_error_lines_past_the_cap_without_keeping_them() {
    let config = OutputConfig::default();
    let mut tracker = SalientTracker::new(&config);
    for number in 1..=100_000 {
        let text = format!("error: failure number {number}");
        tracker.observe(&line(number * 2, "ok"));
        tracker.observe(&line(number * 2 + 1, &text));
    }
    let kept: usize = tracker
        .groups()
        .iter()
        .flat_map(|group| &group.entries)
        .map(|entry| entry.line.text.len() + 1)
        .sum();
    // The cap, plus at most the one group that crossed it.
    let group = MAX_GROUP_ENTRIES * (config.max_line_chars + 1);
    assert!(kept <= config.budget_chars() * 2 + group, "kept {kept}");
    assert_eq!(tracker.salient_lines(), 100_000);
    assert!(tracker.overflow().count > 90_000);
    assert!(tracker.overflow().recent.len() <= config.budget_chars());
    assert!(tracker.fold().is_dropped());
}

#[test]
fn plain_shortening_tracks_nothing() {
    let config = OutputConfig {
        shortening: Shortening::Plain,
        ..OutputConfig::default()
    };
    let mut tracker = SalientTracker::new(&config);
    tracker.observe(&line(1, "error: boom"));
    assert!(tracker.groups().is_empty());
    assert_eq!(tracker.salient_lines(), 0);
}

fn texts_of(tracker: &SalientTracker) -> Vec<Vec<&str>> {
    tracker
        .groups()
        .iter()
        .map(|group| {
            group
                .entries
                .iter()
                .map(|entry| entry.line.text.as_str())
                .collect()
        })
        .collect()
}

#[test]
fn keeps_the_block_a_test_failure_closes_back_to_the_blank_line() {
    let tracker = tracker_of(&[
        "      Start 13: pair_12",
        "",
        "13: Test command: /build/p12",
        "13: pair 12 check 0 ok",
        "13: pair_12: checksum mismatch 0x1f != 0x2e",
        "13/80 Test #13: pair_12 ......***Failed    0.00 sec",
    ]);
    assert_eq!(
        texts_of(&tracker),
        [vec![
            "13: Test command: /build/p12",
            "13: pair 12 check 0 ok",
            "13: pair_12: checksum mismatch 0x1f != 0x2e",
            "13/80 Test #13: pair_12 ......***Failed    0.00 sec",
        ]]
    );
}

#[test]
fn frames_continue_an_error_past_its_fixed_context() {
    let mut lines = vec!["==42== Invalid read of size 4"];
    let frames: Vec<String> = (0..12)
        .map(|depth| format!("==42==    by 0x{depth:04X}: f{depth} (leak.c:{depth})"))
        .collect();
    lines.extend(frames.iter().map(String::as_str));
    lines.push("round 118 window sum 35");
    let tracker = tracker_of(&lines);
    assert_eq!(texts_of(&tracker)[0].len(), 13);
}

#[test]
fn a_blank_line_inside_an_indented_block_is_kept_while_the_block_goes_on() {
    let tracker = tracker_of(&[
        "CMake Error at CMakeLists.txt:63 (find_package):",
        "  By not providing \"FindZLIBX.cmake\" in CMAKE_MODULE_PATH this project",
        "",
        "  Could not find a package configuration file provided by \"ZLIBX\"",
        "",
        "-- Configuring incomplete, errors occurred!",
    ]);
    assert_eq!(
        texts_of(&tracker),
        [vec![
            "CMake Error at CMakeLists.txt:63 (find_package):",
            "  By not providing \"FindZLIBX.cmake\" in CMAKE_MODULE_PATH this project",
            "",
            "  Could not find a package configuration file provided by \"ZLIBX\"",
        ]]
    );
}

#[test]
fn marks_failures_under_a_pending_heading_and_frequent_shapes_as_decoys() {
    let filler: Vec<String> = (0..10).map(|n| format!("filler line {n}")).collect();
    let mut lines = vec![
        "Pending: (Failures listed here are expected)",
        "",
        "  Failure/Error: x",
    ];
    lines.extend(filler.iter().map(String::as_str));
    lines.extend(["Failures:", "", "  Failure/Error: y"]);
    lines.extend(filler.iter().map(String::as_str));
    let enoent: Vec<String> = (0..5)
        .map(|n| format!("openat(\"/lib/{n}\") = -1 ENOENT (No such file or directory)"))
        .collect();
    for line in &enoent {
        lines.push(line);
        lines.extend(filler.iter().map(String::as_str));
    }
    let tracker = tracker_of(&lines);
    let decoys: Vec<bool> = tracker.groups().iter().map(|group| group.decoy).collect();
    // The pending failure, the real one, then the ENOENT lines: decoys
    // once their shape was seen three times.
    assert_eq!(decoys, [true, false, false, false, false, true, true]);
}

#[test]
fn repeated_plain_lines_keep_their_numbers_as_context_of_a_later_error() {
    let tracker = tracker_of(&[
        "  at a (x.js:1)",
        "  at a (x.js:1)",
        "  at a (x.js:1)",
        "TypeError: boom",
    ]);
    let numbers: Vec<(u64, u64)> = tracker.groups()[0]
        .entries
        .iter()
        .map(|entry| (entry.line.number, entry.count))
        .collect();
    assert_eq!(numbers, [(1, 3), (4, 1)]);
}

#[test]
fn repeated_error_lines_are_each_classified_not_taken_as_plain() {
    let tracker = tracker_of(&["plain", "error: x", "error: x", "error: x", "plain"]);
    assert_eq!(tracker.salient_lines(), 3);
    assert_eq!(
        group_texts(&tracker),
        [vec![
            ("plain".to_owned(), 1, false),
            ("error: x".to_owned(), 3, true),
            ("plain".to_owned(), 1, false),
        ]]
    );
}

/// What a tracker ends with, for comparing two of them.
fn outcome(tracker: &SalientTracker) -> String {
    format!(
        "{:?} {:?} {:?} {:?} {:?} {:?}",
        tracker.groups(),
        tracker.overflow(),
        tracker.fold().settled(),
        tracker.ring,
        tracker.heading,
        tracker.novelty
    )
}

proptest::proptest! {
    /// The short path for a repeated line changes nothing: any output made
    /// of lines that repeat (plain, error-like, blank, indented, headings
    /// of decoy sections; runs longer than the look-back ring too) ends the
    /// same with and without it.
    #[test]
    fn the_repeat_path_gives_what_the_full_path_gives(
        picks in proptest::collection::vec((0_usize..9, 1_usize..40), 1..60)
    ) {
        const TEXTS: [&str; 9] = [
            "plain", "error: x", "", "  at frame", "Pending:", "Failures:",
            "  Failure/Error: y", "x.py:3: Undefined name", "KeyError: 'k'",
        ];
        let mut fast = SalientTracker::new(&OutputConfig::default());
        let mut full = SalientTracker::new(&OutputConfig::default());
        full.repeat_path = false;
        let mut number = 0;
        for (pick, repeats) in picks {
            for _ in 0..repeats {
                number += 1;
                fast.observe(&line(number, TEXTS[pick]));
                full.observe(&line(number, TEXTS[pick]));
            }
        }
        proptest::prop_assert_eq!(outcome(&fast), outcome(&full));
    }
}

/// `lines` plain lines of one template (`step 0001 done` …).
fn uniform(count: usize) -> Vec<String> {
    (1..=count)
        .map(|number| format!("step {number:04} done"))
        .collect()
}

#[test]
fn a_line_unlike_the_uniform_lines_before_it_is_kept_as_an_outlier() {
    let mut lines = uniform(200);
    lines.insert(120, "cycle 587: count=77 but the model says 76".to_owned());
    let texts: Vec<&str> = lines.iter().map(String::as_str).collect();
    let tracker = tracker_of(&texts);
    assert_eq!(
        texts_of(&tracker),
        [vec![
            "step 0120 done",
            "cycle 587: count=77 but the model says 76",
            "step 0121 done",
            "step 0122 done",
        ]]
    );
    let group = &tracker.groups()[0];
    assert!(group.rare && tracker.is_worth_showing(group));
    // An outlier is no error-like line.
    assert_eq!(tracker.salient_lines(), 0);
}

#[test]
fn an_outlier_whose_template_comes_back_often_is_not_shown() {
    let mut lines = uniform(100);
    for number in 0..10 {
        lines.push(format!("phase {number} finished"));
        lines.extend(uniform(20));
    }
    let texts: Vec<&str> = lines.iter().map(String::as_str).collect();
    let tracker = tracker_of(&texts);
    let shown = tracker
        .groups()
        .iter()
        .filter(|group| tracker.is_worth_showing(group))
        .count();
    assert!(!tracker.groups().is_empty());
    assert_eq!(shown, 0);
}

#[test]
fn a_new_line_among_new_lines_is_no_outlier() {
    let lines: Vec<String> = (0..200)
        .map(|number| format!("{} is here", "word".repeat(number % 50 + 1)))
        .collect();
    let texts: Vec<&str> = lines.iter().map(String::as_str).collect();
    assert!(tracker_of(&texts).groups().is_empty());
}

#[test]
fn a_message_keeps_the_location_line_above_it() {
    let tracker = tracker_of(&[
        "gfortran -Wall -c m89.f90",
        "gfortran -Wall -c solver.f90",
        "solver.f90:5:17:",
        "",
        "    5 |   b = a * (2.0 +",
        "      |                 1",
        "Error: Syntax error in expression at (1)",
        "gfortran -Wall -c zeta.f90",
    ]);
    assert_eq!(
        texts_of(&tracker),
        [vec![
            "solver.f90:5:17:",
            "",
            "    5 |   b = a * (2.0 +",
            "      |                 1",
            "Error: Syntax error in expression at (1)",
            "gfortran -Wall -c zeta.f90",
        ]]
    );
}

#[test]
fn a_real_failure_inside_a_group_of_decoys_starts_its_own_group() {
    let mut lines: Vec<String> = Vec::new();
    for job in 1..=6 {
        lines.extend((0..10).map(|step| format!("checking job{job} step {step}")));
        lines.push(format!(
            "scripts/job{job}.sh:2:10: error: Iterating over ls output [SC2045]"
        ));
        lines.push(format!(
            "scripts/job{job}.sh:2:15: note: Use ./*glob* [SC2035]"
        ));
    }
    lines.push("scripts/job7.sh:4:1: error: Use 'elif' instead of 'else if' [SC1075]".into());
    let texts: Vec<&str> = lines.iter().map(String::as_str).collect();
    let tracker = tracker_of(&texts);
    let last = tracker.groups().last().expect("groups");
    assert!(!last.decoy);
    assert_eq!(
        last.entries.last().map(|entry| entry.line.text.as_str()),
        Some("scripts/job7.sh:4:1: error: Use 'elif' instead of 'else if' [SC1075]")
    );
    let decoys: Vec<bool> = tracker.groups().iter().map(|group| group.decoy).collect();
    assert_eq!(decoys, [false, false, false, true, true, true, false]);
}
