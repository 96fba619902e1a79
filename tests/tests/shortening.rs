//! Error-aware shortening on a corpus of real failing outputs
//! (`fixtures/failing-logs`, made by `generate.sh`): each `NAME.log` is fed
//! to an [`OutputBuffer`] as a command's output would be, formatted with the
//! plain seed-001 split and with the error-aware layout, and checked for the
//! lines in `NAME.decisive`.
//!
//! The corpus is split (file `split`) into a development half, the only one
//! the shortening was tuned on, and a held-out half that measures whether it
//! generalizes to tools nobody looked at while tuning.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bashtool_core::format_output;
use bashtool_core::{OutputBuffer, OutputConfig, Shortening, Stream};

/// Text outside the line budget: the first stream header and the markers
/// around the head and the tail.
const FIXED_OVERHEAD: usize = 300;
/// Chunk size of the simulated pipe reads.
const CHUNK_BYTES: usize = 4096;
/// Samples of each half where the error-aware layout keeps every decisive
/// line, at least (the numbers reached; a regression fails).
const DEV_KEPT_AT_LEAST: usize = DEV_KEPT_REACHED;
const HELD_OUT_KEPT_AT_LEAST: usize = HELD_OUT_KEPT_REACHED;
const DEV_KEPT_REACHED: usize = 37;
const HELD_OUT_KEPT_REACHED: usize = 45;
/// The target: the held-out half keeps every decisive line in at
/// least 95% of its samples.
const HELD_OUT_TARGET_PERCENT: usize = 95;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Half {
    Dev,
    HeldOut,
}

struct Sample {
    name: String,
    half: Half,
    log: String,
    decisive: Vec<String>,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/failing-logs")
}

/// The half of every sample, from the `split` file.
fn halves() -> std::collections::HashMap<String, Half> {
    let split = std::fs::read_to_string(corpus_dir().join("split")).expect("split file");
    split
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (half, name) = line.split_once(' ').expect("`HALF NAME` lines");
            let half = match half {
                "dev" => Half::Dev,
                "held-out" => Half::HeldOut,
                other => panic!("unknown half {other:?} in split"),
            };
            (name.to_owned(), half)
        })
        .collect()
}

fn corpus() -> Vec<Sample> {
    let halves = halves();
    let mut samples: Vec<Sample> = std::fs::read_dir(corpus_dir())
        .expect("corpus dir")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "decisive"))
        .map(|path| {
            let decisive = std::fs::read_to_string(&path).expect("decisive file");
            let log = std::fs::read(path.with_extension("log")).expect("log file");
            let name = path
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default();
            let half = *halves
                .get(&name)
                .unwrap_or_else(|| panic!("{name} is in neither half of `split`"));
            Sample {
                name,
                half,
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
    assert!(samples.len() >= 80, "only {} samples", samples.len());
    let held_out = samples
        .iter()
        .filter(|sample| sample.half == Half::HeldOut)
        .count();
    assert!(
        held_out >= 30 && samples.len() - held_out >= 30,
        "halves of {held_out} and {}",
        samples.len() - held_out
    );
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

/// Totals of one half of the corpus.
#[derive(Default)]
struct Totals {
    samples: usize,
    plain_kept: usize,
    aware_kept: usize,
    plain_chars: Vec<usize>,
    aware_chars: Vec<usize>,
    misses: Vec<String>,
}

impl Totals {
    fn line(&mut self, label: &str) -> String {
        format!(
            "{label:<9} {:>3} samples; every decisive line kept: plain {:>2} ({:>3}%), error-aware {:>2} ({:>3}%); \
             median length: plain {} chars, error-aware {} chars",
            self.samples,
            self.plain_kept,
            percent(self.plain_kept, self.samples),
            self.aware_kept,
            percent(self.aware_kept, self.samples),
            median(&mut self.plain_chars),
            median(&mut self.aware_chars),
        )
    }
}

fn percent(part: usize, whole: usize) -> usize {
    (part * 100).checked_div(whole).unwrap_or(0)
}

#[test]
fn error_aware_keeps_the_decisive_lines_of_real_failures_within_budget() {
    let samples = corpus();
    let plain_config = config(Shortening::Plain);
    let aware_config = config(Shortening::ErrorAware);
    let budget = aware_config.budget_chars();
    let limit = budget + FIXED_OVERHEAD;
    let mut table = String::from(
        "\nsample                                     half      plain       error-aware\n",
    );
    let (mut dev, mut held_out) = (Totals::default(), Totals::default());
    for sample in &samples {
        let plain = evaluate(sample, &plain_config);
        let aware = evaluate(sample, &aware_config);
        let mark = |kept| if kept { "kept" } else { "LOST" };
        let (label, totals) = match sample.half {
            Half::Dev => ("dev", &mut dev),
            Half::HeldOut => ("held-out", &mut held_out),
        };
        let _ = writeln!(
            table,
            "{:<42} {label:<9} {} {:>5}  {} {:>5}",
            sample.name,
            mark(plain.kept_all),
            plain.chars,
            mark(aware.kept_all),
            aware.chars
        );
        totals.samples += 1;
        totals.plain_kept += usize::from(plain.kept_all);
        totals.aware_kept += usize::from(aware.kept_all);
        totals.plain_chars.push(plain.chars);
        totals.aware_chars.push(aware.chars);
        if !aware.kept_all {
            totals.misses.push(sample.name.clone());
        }
        assert!(
            aware.chars <= limit,
            "{}: {} chars over {limit}",
            sample.name,
            aware.chars
        );
    }
    let _ = writeln!(table, "{}", dev.line("dev"));
    let _ = writeln!(table, "{}", held_out.line("held-out"));
    println!("{table}");
    assert!(
        held_out.aware_kept * 100 >= held_out.samples * HELD_OUT_TARGET_PERCENT,
        "held-out half below {HELD_OUT_TARGET_PERCENT}%: lost {:?}{table}",
        held_out.misses
    );
    assert!(
        dev.aware_kept >= DEV_KEPT_AT_LEAST && held_out.aware_kept >= HELD_OUT_KEPT_AT_LEAST,
        "regression: dev lost {:?}, held-out lost {:?}{table}",
        dev.misses,
        held_out.misses
    );
    for totals in [&mut dev, &mut held_out] {
        let median = median(&mut totals.aware_chars);
        assert!(
            median <= budget,
            "median {median} chars over the budget {budget}"
        );
    }
}

#[test]
#[ignore = "prints the error-aware text of every sample (or of those named in SHOW), for reading"]
fn show_error_aware_texts() {
    let only = std::env::var("SHOW").unwrap_or_default();
    for sample in corpus() {
        if !only.is_empty() && !only.split(',').any(|name| name == sample.name) {
            continue;
        }
        println!(
            "===== {}\n{}",
            sample.name,
            shorten(&sample.log, &config(Shortening::ErrorAware))
        );
    }
}
