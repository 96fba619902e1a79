//! Error-aware shortening: when the output is over the budget, repetition
//! is folded by template (every distinct line kept when the folded output
//! fits); otherwise error-like lines and outliers from the omitted middle
//! (with their blocks and line numbers) get a share of the budget. A long
//! line keeps the window around what makes it telling.
//!
//! [`SalientTracker`] recognizes error-like lines while the output streams
//! past the [`OutputBuffer`](crate::output::OutputBuffer) and keeps a bounded
//! number of them; `format_error_aware` lays them out between the head and
//! the tail.

mod choose;
mod decoys;
mod fold;
mod groups;
mod kind;
mod layout;
mod long_lines;
mod markers;
mod patterns;
mod prefilter;
mod shapes;
mod templates;
mod tracker;
mod units;
mod windows;

pub(crate) use layout::format_error_aware;
pub(crate) use long_lines::display_line;

pub(crate) use prefilter::first_anchor;
pub use tracker::SalientTracker;
pub(crate) use windows::MiddleWindow;

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::config::{OutputConfig, Shortening};
    use crate::output::buffer::OutputBuffer;
    use crate::output::chunk::Stream;
    use crate::output::format::format_output;

    /// A budget of 400 chars: small enough to write whole expected texts.
    fn small() -> OutputConfig {
        OutputConfig {
            max_output_tokens: 100,
            ..OutputConfig::default()
        }
    }

    fn numbered(range: std::ops::RangeInclusive<u32>) -> String {
        range.map(|number| format!("ok {number:04}\n")).collect()
    }

    /// Lines that do not fold: each has a template of its own (its number
    /// spelled in letters), so the layout is head, middle and tail.
    fn spelled(range: std::ops::RangeInclusive<u32>) -> String {
        range
            .map(|number| {
                let letters: String = format!("{number:04}")
                    .bytes()
                    .map(|digit| char::from(b'a' + digit - b'0'))
                    .collect();
                format!("ok {letters}\n")
            })
            .collect()
    }

    fn shorten(text: &str, config: &OutputConfig) -> String {
        let buffer = OutputBuffer::from_text(config, Stream::Stdout, text);
        format_output(&buffer, config).text
    }

    #[test]
    fn keeps_an_error_from_the_middle_with_its_context_and_line_number() {
        let text = format!(
            "{}error[E0308]: mismatched types\n --> src/lib.rs:2:21\n\n{}",
            spelled(1..=500),
            spelled(504..=1000)
        );
        assert_eq!(
            shorten(&text, &small()),
            format!(
                "stdout:\n{}... (490 lines omitted; error-like lines follow, lines 500-502 of the output) ...\n\
                 {}error[E0308]: mismatched types\n --> src/lib.rs:2:21\n\
                 ... (476 lines omitted) ...\n{}",
                spelled(1..=9),
                spelled(500..=500),
                spelled(979..=1000)
            )
        );
    }

    #[test]
    fn an_error_among_lines_of_one_template_stays_and_they_fold() {
        let text = format!(
            "{}error[E0308]: mismatched types\n --> src/lib.rs:2:21\n\n{}",
            numbered(1..=500),
            numbered(504..=1000)
        );
        assert_eq!(
            shorten(&text, &small()),
            format!(
                "stdout:\n{}\
                 ... (like \"ok N\", lines 7-494 of the output: 488 lines omitted) ...\n{}\
                 error[E0308]: mismatched types\n --> src/lib.rs:2:21\n\n{}\
                 ... (like \"ok N\", lines 510-994 of the output: 485 lines omitted) ...\n{}",
                numbered(1..=6),
                numbered(495..=500),
                numbered(504..=509),
                numbered(995..=1000)
            )
        );
    }

    #[test]
    fn plain_shortening_loses_the_middle_error() {
        let config = OutputConfig {
            shortening: Shortening::Plain,
            ..small()
        };
        let text = format!("{}error: boom\n{}", numbered(1..=500), numbered(502..=1000));
        let shortened = shorten(&text, &config);
        assert!(!shortened.contains("error: boom"));
        assert!(shortened.contains("... (") && shortened.ends_with("ok 1000\n"));
    }

    #[test]
    fn shares_the_budget_fairly_among_several_errors_and_counts_those_that_do_not_fit() {
        let config = OutputConfig {
            max_output_tokens: 250,
            ..OutputConfig::default()
        };
        let mut text = String::new();
        for block in 0..40 {
            text.push_str(&numbered(block * 100 + 1..=block * 100 + 99));
            text.push_str(&format!("FAILED case {block}\n"));
        }
        text.push_str(&numbered(4001..=4300));
        // Each failure gets its core (the line and its neighbours) before
        // any gets more, so three show instead of two with more context.
        assert_eq!(
            shorten(&text, &config),
            format!(
                "stdout:\n{}\
                 ... (75 lines omitted; error-like lines follow, lines 98-102 of the output) ...\n\
                 {}FAILED case 0\n{}\
                 ... (96 lines omitted; error-like lines follow, lines 199-202 of the output) ...\n\
                 ok 0199\nFAILED case 1\n{}\
                 ... (96 lines omitted; error-like lines follow, lines 299-302 of the output) ...\n\
                 ok 0299\nFAILED case 2\n{}\
                 ... (3945 lines omitted; they include 37 more error-like lines, the first at line 400 of the output) ...\n{}",
                numbered(1..=22),
                numbered(98..=99),
                numbered(101..=102),
                numbered(201..=202),
                numbered(301..=302),
                numbered(4248..=4300)
            )
        );
    }

    #[test]
    fn collapses_repeated_lines_and_folds_a_template() {
        let text = format!(
            "{}{}{}",
            numbered(1..=300),
            "grep: /proc/1/mem: Permission denied\n".repeat(50),
            numbered(351..=700)
        );
        assert_eq!(
            shorten(&text, &small()),
            format!(
                "stdout:\n{}\
                 ... (like \"ok N\", lines 7-294 of the output: 288 lines omitted) ...\n{}\
                 grep: /proc/1/mem: Permission denied (repeated 50 times)\n{}\
                 ... (like \"ok N\", lines 357-694 of the output: 338 lines omitted) ...\n{}",
                numbered(1..=6),
                numbered(295..=300),
                numbered(351..=356),
                numbered(695..=700)
            )
        );
    }

    #[test]
    fn output_that_repeats_one_line_fits_once_collapsed() {
        let text = format!("start\n{}end\n", "waiting for lock\n".repeat(100_000));
        assert_eq!(
            shorten(&text, &OutputConfig::default()),
            "stdout:\nstart\nwaiting for lock (repeated 100000 times)\nend\n"
        );
    }

    #[test]
    fn a_long_line_keeps_the_window_around_its_error() {
        let long = format!(
            "request id=42 records=[{}] status=500 error: quota exceeded for project 7 tail={}",
            "1,".repeat(600),
            "z".repeat(600)
        );
        let text = format!("{}{long}\n{}", numbered(1..=5), numbered(7..=700));
        // The token is at char 1236: 100 chars of each end, and 594 around
        // the token, a third of them before it.
        let shown = format!(
            "{}...{}...{}",
            &long[..100],
            &long[1236 - 198..1236 - 198 + 594],
            &long[long.len() - 100..]
        );
        assert_eq!(
            shorten(&text, &OutputConfig::default()),
            format!("stdout:\n{}{shown}\n{}", numbered(1..=5), numbered(7..=700))
        );
    }

    #[test]
    fn a_huge_line_keeps_the_window_around_an_error_the_buffer_did_not_retain() {
        let config = OutputConfig::default();
        let mut buffer = OutputBuffer::new(&config);
        let push_huge_line = |buffer: &mut OutputBuffer| {
            buffer.push(Stream::Stdout, "start ");
            for _ in 0..5_000 {
                buffer.push(Stream::Stdout, &"x".repeat(100));
            }
            buffer.push(Stream::Stdout, " error: disk quota exceeded ");
            for _ in 0..5_000 {
                buffer.push(Stream::Stdout, &"y".repeat(100));
            }
            buffer.push(Stream::Stdout, " end\n");
        };
        push_huge_line(&mut buffer);
        buffer.finish();
        // First and last 100 chars, and 594 around the token, 198 before it.
        let shown = format!(
            "start {}...{} error: disk quota exceeded {}...{} end",
            "x".repeat(94),
            "x".repeat(197),
            "y".repeat(594 - 197 - 28),
            "y".repeat(96)
        );
        assert_eq!(
            format_output(&buffer, &config).text,
            format!("stdout:\n{shown}\n")
        );
        // The same line in the omitted middle is shown the same way.
        let mut buffer = OutputBuffer::new(&config);
        buffer.push(Stream::Stdout, &numbered(1..=1000));
        push_huge_line(&mut buffer);
        buffer.push(Stream::Stdout, &numbered(1002..=2000));
        buffer.finish();
        let text = format_output(&buffer, &config).text;
        assert!(text.contains(&format!("\n{shown}\n")), "{text}");
    }

    #[test]
    fn first_and_last_lines_are_kept_even_when_huge() {
        let config = OutputConfig {
            max_output_tokens: 10,
            ..OutputConfig::default()
        };
        let text = format!("{}\nerror: middle\n{}\n", "f".repeat(900), "l".repeat(900));
        let shortened = shorten(&text, &config);
        let lines: Vec<&str> = shortened.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[1].starts_with("fff") && lines[3].starts_with("lll"));
        assert_eq!(
            lines[2],
            "... (1 line omitted; they include 1 more error-like line, the first at line 2 of the output) ..."
        );
    }

    #[test]
    fn embedder_patterns_mark_lines_as_error_like() {
        let config = OutputConfig {
            extra_salient_patterns: vec!["DEADLINE_EXCEEDED".to_owned()],
            ..small()
        };
        let text = format!(
            "{}rpc status DEADLINE_EXCEEDED\n{}",
            numbered(1..=500),
            numbered(502..=1000)
        );
        assert!(shorten(&text, &config).contains("rpc status DEADLINE_EXCEEDED\n"));
    }

    #[test]
    fn observes_and_formats_a_million_lines() {
        let config = OutputConfig::default();
        let mut buffer = OutputBuffer::new(&config);
        for number in 0..1_000_000_u32 {
            let line = match number % 250_000 {
                1234 => format!("error: failure {number}\n"),
                _ => format!("compiling module {number}\n"),
            };
            buffer.push(Stream::Stdout, &line);
        }
        buffer.finish();
        let shortened = format_output(&buffer, &config).text;
        assert!(shortened.contains("error: failure 1234\n"));
        assert!(shortened.contains("error: failure 751234\n"));
        assert!(shortened.ends_with("compiling module 999999\n"));
        assert_eq!(buffer.salient().salient_lines(), 4);
    }

    /// Chars outside the line budget: first header and head/tail markers.
    const FIXED_OVERHEAD: usize = 300;

    fn chunks() -> impl Strategy<Value = Vec<(bool, String)>> {
        let line = prop_oneof![
            "[a-z ]{0,20}",
            "error(\\[E[0-9]{4}\\])?: [a-zé🦀 ]{0,30}",
            "(FAILED|not ok|panicked at|Traceback \\(most recent call last\\):|KeyError: 'x')",
            "[a-z\\r]{0,5}",
            ".{0,40}",
            "[xé]{700,1200}( error: x )?[yé]{0,1200}",
        ];
        prop::collection::vec((any::<bool>(), prop::collection::vec(line, 1..8)), 0..120).prop_map(
            |chunks| {
                chunks
                    .into_iter()
                    .map(|(stderr, lines)| (stderr, lines.join("\n") + "\n"))
                    .collect()
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn error_aware_text_stays_within_budget_for_any_input(
            chunks in chunks(),
            tokens in 20_usize..400,
            salient_percent in 0_usize..=100,
        ) {
            let config = OutputConfig {
                max_output_tokens: tokens,
                salient_percent,
                ..OutputConfig::default()
            };
            let mut buffer = OutputBuffer::new(&config);
            for (stderr, text) in &chunks {
                let stream = if *stderr { Stream::Stderr } else { Stream::Stdout };
                buffer.push(stream, text);
            }
            buffer.finish();
            let text = format_output(&buffer, &config).text;
            // The plain layout keeps at least one line each side, whatever its length.
            let floor = 2 * (config.max_line_chars + 1);
            let limit = config.budget_chars().max(floor) + FIXED_OVERHEAD;
            prop_assert!(text.chars().count() <= limit, "{} > {limit}:\n{text}", text.chars().count());
        }
    }
}
