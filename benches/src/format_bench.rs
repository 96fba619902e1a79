//! Item 6: buffering and shortening a 1-million-line result, against the
//! same for 100 000 lines: linear time, retained memory independent of size.

use std::time::{Duration, Instant};

use bashtool_core::{OutputBuffer, OutputConfig, Stream, format_output};

use crate::effort::Effort;
use crate::stats::{Samples, spread};
use crate::table::Row;

/// Time to push `lines` lines (in 64 KiB chunks) and format, and the chars
/// the buffer retained.
fn shorten(lines: usize) -> (Duration, usize) {
    let config = OutputConfig::default();
    let mut chunk = String::with_capacity(64 * 1024);
    let start = Instant::now();
    let mut buffer = OutputBuffer::new(&config);
    for number in 0..lines {
        if number % 997 == 0 {
            chunk.push_str("error[E0308]: mismatched types at src/lib.rs:12\n");
        } else {
            chunk.push_str("   Compiling some-crate v1.2.3 (/work/project/crates/some-crate)\n");
        }
        if chunk.len() >= 64 * 1024 {
            buffer.push(Stream::Stdout, &chunk);
            chunk.clear();
        }
    }
    buffer.push(Stream::Stdout, &chunk);
    buffer.finish();
    let text = format_output(&buffer, &config).text;
    let elapsed = start.elapsed();
    let retained: usize = buffer
        .head()
        .iter()
        .map(|line| line.text.len())
        .sum::<usize>()
        + buffer.tail().map(|line| line.text.len()).sum::<usize>();
    std::hint::black_box(text);
    (elapsed, retained)
}

pub fn run(effort: Effort) -> Vec<Row> {
    let runs = effort.runs(5);
    let small: Vec<(Duration, usize)> = (0..runs).map(|_| shorten(100_000)).collect();
    let large: Vec<(Duration, usize)> = (0..runs).map(|_| shorten(1_000_000)).collect();
    let small_samples = Samples::from_durations(small.iter().map(|(time, _)| *time).collect());
    let large_samples = Samples::from_durations(large.iter().map(|(time, _)| *time).collect());
    let ratio = large_samples.median().as_secs_f64() / small_samples.median().as_secs_f64();
    let retained_small = small[0].1;
    let retained_large = large[0].1;
    vec![
        Row {
            number: "6",
            what: "buffer + shorten 1 000 000 lines (64 MB)".into(),
            ours: spread(&large_samples),
            baseline: format!("100 000 lines: {}", spread(&small_samples)),
            ratio: format!("{ratio:.1}× for 10× the lines"),
            target: "linear (≈ 10×)",
            met: Some(ratio < 13.0),
        },
        Row {
            number: "6",
            what: "chars retained by the buffer, 1 000 000 lines".into(),
            ours: format!("{retained_large}"),
            baseline: format!("100 000 lines: {retained_small}"),
            ratio: format!(
                "{:.2}×",
                retained_large as f64 / retained_small.max(1) as f64
            ),
            target: "no growth",
            met: Some(retained_large <= retained_small + 1024),
        },
    ]
}
