//! Error-aware shortening on a corpus of real failing outputs
//! (`fixtures/failing-logs`, made by `generate.sh`): each `NAME.log` is fed
//! to an [`OutputBuffer`] as a command's output would be, formatted with the
//! plain seed-001 split and with the error-aware layout, and checked for the
//! lines in `NAME.decisive`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bashtool_core::format_output;
use bashtool_core::{OutputBuffer, OutputConfig, Shortening, Stream};

/// Text outside the line budget: the first stream header and the markers
/// around the head and the tail.
const FIXED_OVERHEAD: usize = 300;
/// Chunk size of the simulated pipe reads.
const CHUNK_BYTES: usize = 4096;
/// Samples where the error-aware layout may lose a decisive line.
const ALLOWED_MISSES: usize = 2;

struct Sample {
    name: String,
    log: String,
    decisive: Vec<String>,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/failing-logs")
}

fn corpus() -> Vec<Sample> {
    let mut samples: Vec<Sample> = std::fs::read_dir(corpus_dir())
        .expect("corpus dir")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "decisive"))
        .map(|path| {
            let decisive = std::fs::read_to_string(&path).expect("decisive file");
            let log = std::fs::read(path.with_extension("log")).expect("log file");
            Sample {
                name: path
                    .file_stem()
                    .map(|stem| stem.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                log: String::from_utf8_lossy(&log).into_owned(),
                decisive: decisive
                    .lines()
                    .filter(|line| !line.is_empty())
                    .map(str::to_owned)
                    .collect(),
            }
        })
        .collect();
    samples.sort_by(|a, b| a.name.cmp(&b.name));
    samples
}

/// Feeds `text` in pipe-sized chunks (cut on char boundaries), with a log
/// file so that markers name log lines, and formats it.
fn shorten(text: &str, config: &OutputConfig) -> String {
    let mut buffer = OutputBuffer::with_log(config, Box::new(std::io::sink()), "the command");
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(CHUNK_BYTES);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        buffer.push(Stream::Stdout, &rest[..cut]);
        rest = &rest[cut..];
    }
    buffer.finish();
    format_output(&buffer, config).text
}

fn config(shortening: Shortening) -> OutputConfig {
    OutputConfig {
        shortening,
        ..OutputConfig::default()
    }
}

struct Outcome {
    kept_all: bool,
    chars: usize,
}

fn evaluate(sample: &Sample, config: &OutputConfig) -> Outcome {
    let text = shorten(&sample.log, config);
    Outcome {
        kept_all: sample.decisive.iter().all(|line| text.contains(line)),
        chars: text.chars().count(),
    }
}

fn median(values: &mut [usize]) -> usize {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

#[test]
fn corpus_is_large_and_real_enough() {
    let samples = corpus();
    assert!(samples.len() >= 30, "only {} samples", samples.len());
    let budget = OutputConfig::default().budget_chars();
    for sample in &samples {
        assert!(
            !sample.decisive.is_empty(),
            "{} has no decisive line",
            sample.name
        );
        assert!(
            sample.log.chars().count() > budget,
            "{} fits the budget and proves nothing",
            sample.name
        );
        for line in &sample.decisive {
            assert!(sample.log.contains(line), "{}: {line}", sample.name);
        }
    }
}

#[test]
fn error_aware_keeps_the_decisive_lines_of_real_failures_within_budget() {
    let samples = corpus();
    let plain_config = config(Shortening::Plain);
    let aware_config = config(Shortening::ErrorAware);
    let limit = aware_config.budget_chars() + FIXED_OVERHEAD;
    let mut table =
        String::from("\nsample                                     plain     error-aware\n");
    let (mut plain_kept, mut aware_kept) = (0, 0);
    let (mut plain_chars, mut aware_chars) = (Vec::new(), Vec::new());
    let mut misses = Vec::new();
    for sample in &samples {
        let plain = evaluate(sample, &plain_config);
        let aware = evaluate(sample, &aware_config);
        let mark = |kept| if kept { "kept" } else { "LOST" };
        let _ = writeln!(
            table,
            "{:<42} {} {:>5}  {} {:>5}",
            sample.name,
            mark(plain.kept_all),
            plain.chars,
            mark(aware.kept_all),
            aware.chars
        );
        plain_kept += usize::from(plain.kept_all);
        aware_kept += usize::from(aware.kept_all);
        plain_chars.push(plain.chars);
        aware_chars.push(aware.chars);
        if !aware.kept_all {
            misses.push(sample.name.clone());
        }
        assert!(
            aware.chars <= limit,
            "{}: {} chars over {limit}",
            sample.name,
            aware.chars
        );
    }
    let _ = writeln!(
        table,
        "every decisive line kept: plain {plain_kept}/{n}, error-aware {aware_kept}/{n}; \
         median length: plain {} chars, error-aware {} chars",
        median(&mut plain_chars),
        median(&mut aware_chars),
        n = samples.len()
    );
    println!("{table}");
    assert!(
        misses.len() <= ALLOWED_MISSES,
        "error-aware lost decisive lines in {misses:?}{table}"
    );
}

#[test]
#[ignore = "prints the error-aware text of every sample, for reading"]
fn show_error_aware_texts() {
    for sample in corpus() {
        println!(
            "===== {}\n{}",
            sample.name,
            shorten(&sample.log, &config(Shortening::ErrorAware))
        );
    }
}
