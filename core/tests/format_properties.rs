//! Properties of the model-facing text for any output, in both shortening
//! modes: within the budget plus fixed overhead, first and last line kept,
//! no panic on any input.

use bashtool_core::{
    OutputBuffer, OutputConfig, Shortening, Stream, abbreviate_line, format_output,
};
use proptest::prelude::*;

/// Markers, the first stream header and (error-aware) group markers.
const FIXED_OVERHEAD: usize = 400;

fn config(shortening: Shortening, tokens: usize) -> OutputConfig {
    OutputConfig {
        shortening,
        max_output_tokens: tokens,
        ..OutputConfig::default()
    }
}

fn buffer_of(config: &OutputConfig, chunks: &[(bool, String)]) -> OutputBuffer {
    let mut buffer = OutputBuffer::new(config);
    for (stderr, text) in chunks {
        let stream = if *stderr {
            Stream::Stderr
        } else {
            Stream::Stdout
        };
        buffer.push(stream, text);
    }
    buffer.finish();
    buffer
}

fn lines_strategy(max_line: usize) -> impl Strategy<Value = Vec<(bool, String)>> {
    let line = prop_oneof![
        "[a-z0-9 ]{0,30}",
        "(error|warning|FAILED|Traceback)[: a-z]{0,20}",
        "[^\r\n]{0,60}",
        "[é🦀x]{0,100}",
        prop::string::string_regex(&format!("[a-z]{{0,{max_line}}}")).expect("regex"),
    ];
    prop::collection::vec((any::<bool>(), line), 1..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn text_stays_within_budget_plus_overhead(
        lines in lines_strategy(3000),
        tokens in 10_usize..2500,
        error_aware in any::<bool>(),
    ) {
        let shortening = if error_aware { Shortening::ErrorAware } else { Shortening::Plain };
        let config = config(shortening, tokens);
        let chunks: Vec<(bool, String)> = lines.into_iter().map(|(stderr, line)| (stderr, line + "\n")).collect();
        let text = format_output(&buffer_of(&config, &chunks), &config).text;
        // At least one whole (abbreviated) line each side, whatever the budget.
        let floor = 2 * (config.max_line_chars + 1);
        let limit = config.budget_chars().max(floor) + FIXED_OVERHEAD;
        prop_assert!(text.chars().count() <= limit, "{} > {limit}", text.chars().count());
    }

    #[test]
    fn first_and_last_lines_are_kept(
        lines in lines_strategy(700),
        tokens in 50_usize..2500,
        error_aware in any::<bool>(),
    ) {
        let shortening = if error_aware { Shortening::ErrorAware } else { Shortening::Plain };
        let config = config(shortening, tokens);
        let chunks: Vec<(bool, String)> = lines.iter().map(|(stderr, line)| (*stderr, format!("{line}\n"))).collect();
        let text = format_output(&buffer_of(&config, &chunks), &config).text;
        let first = &lines[0].1;
        let last = &lines[lines.len() - 1].1;
        prop_assert!(text.contains(abbreviate_line(first, config.max_line_chars).as_ref()), "first line {first:?} missing");
        prop_assert!(text.contains(abbreviate_line(last, config.max_line_chars).as_ref()), "last line {last:?} missing");
    }

    #[test]
    fn any_bytes_in_any_chunking_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..5000),
        cuts in prop::collection::vec(0_usize..5000, 0..20),
        error_aware in any::<bool>(),
    ) {
        let shortening = if error_aware { Shortening::ErrorAware } else { Shortening::Plain };
        let config = config(shortening, 100);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut boundaries: Vec<usize> = cuts.into_iter().filter(|cut| text.is_char_boundary(*cut) && *cut <= text.len()).collect();
        boundaries.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for cut in boundaries.into_iter().chain([text.len()]) {
            if cut >= start {
                chunks.push((cut % 2 == 0, text[start..cut].to_owned()));
                start = cut;
            }
        }
        let formatted = format_output(&buffer_of(&config, &chunks), &config);
        prop_assert!(formatted.text.chars().count() <= 2 * 801 + FIXED_OVERHEAD + 400);
    }
}
