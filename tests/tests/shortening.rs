//! Error-aware shortening on a corpus of real outputs
//! (`fixtures/failing-logs`, made by `generate.sh`, `generate-more.sh` and
//! `generate-unseen.sh`): each `NAME.log` is fed to an [`OutputBuffer`] as a
//! command's output would be and formatted with the plain 30/70 split and
//! with the error-aware layout. A failing sample is checked for the lines
//! in `NAME.decisive`; a passing one (`NAME.passing`: a build, an install, a
//! listing) for how many distinct templates of its lines survive per 1,000
//! chars of the result.
//!
//! The corpus is split (file `split`) into a development half, the only one
//! the shortening was tuned on, and a held-out half that measures whether it
//! generalizes to tools nobody looked at while tuning. `SHORTENING_HALF=dev`
//! evaluates the development half alone (so that tuning never sees a
//! held-out result).

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
const DEV_KEPT_REACHED: usize = 119;
const HELD_OUT_KEPT_REACHED: usize = 27;
/// The target: the held-out half keeps every decisive line in at least 95%
/// of its failing samples.
const HELD_OUT_TARGET_PERCENT: usize = 95;
/// The target: the median result of the held-out half is at most this long.
const HELD_OUT_MEDIAN_CHARS: usize = 9_000;
/// The corpus spans at least this many tools, a quarter of them passing.
const MIN_TOOLS: usize = 60;
const MIN_SAMPLES: usize = 150;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Half {
    Dev,
    HeldOut,
}

struct Sample {
    name: String,
    half: Half,
    log: String,
    /// Empty for a passing sample.
    decisive: Vec<String>,
    passing: bool,
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
        .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
        .map(|path| {
            let passing = path.with_extension("passing").exists();
            let decisive = if passing {
                String::new()
            } else {
                std::fs::read_to_string(path.with_extension("decisive")).unwrap_or_else(|_| {
                    panic!("{} has neither .decisive nor .passing", path.display())
                })
            };
            let log = std::fs::read(&path).expect("log file");
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
                passing,
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
    /// Distinct templates of the log's lines that the result shows.
    templates: usize,
}

/// The measuring stick for passing outputs, independent of the method's own
/// masking: a line with its digit runs, hex ids and quoted strings masked and
/// its spaces collapsed.
fn template(line: &str) -> String {
    let mut masked = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(char) = chars.next() {
        if char.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|next| next.is_ascii_hexdigit() || *next == '.')
            {
                chars.next();
            }
            masked.push('N');
        } else if char == '"' || char == '\'' {
            for next in chars.by_ref() {
                if next == char {
                    break;
                }
            }
            masked.push('Q');
        } else if char.is_whitespace() {
            while chars.peek().is_some_and(|next| next.is_whitespace()) {
                chars.next();
            }
            masked.push(' ');
        } else {
            masked.push(char);
        }
    }
    masked
}

fn evaluate(sample: &Sample, config: &OutputConfig) -> Outcome {
    let text = shorten(&sample.log, config);
    let log_lines: std::collections::HashSet<&str> = sample.log.lines().collect();
    let templates: std::collections::HashSet<String> = text
        .lines()
        .filter(|line| log_lines.contains(line))
        .map(template)
        .collect();
    Outcome {
        kept_all: sample.decisive.iter().all(|line| text.contains(line)),
        chars: text.chars().count(),
        templates: templates.len(),
    }
}

/// Distinct templates per 1,000 chars of a result.
fn density(outcome: &Outcome) -> f64 {
    outcome.templates as f64 * 1000.0 / outcome.chars.max(1) as f64
}

/// Which halves to evaluate: both, unless `SHORTENING_HALF=dev`.
fn evaluated(half: Half) -> bool {
    half == Half::Dev || std::env::var("SHORTENING_HALF").as_deref() != Ok("dev")
}

/// `NAME TOOL` lines of the `tools` file.
fn tools() -> std::collections::HashMap<String, String> {
    std::fs::read_to_string(corpus_dir().join("tools"))
        .expect("tools file")
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (name, tool) = line.split_once(' ').expect("`NAME TOOL` lines");
            (name.to_owned(), tool.to_owned())
        })
        .collect()
}

fn median(values: &mut [usize]) -> usize {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

#[test]
fn corpus_is_large_and_real_enough() {
    let samples = corpus();
    assert!(
        samples.len() >= MIN_SAMPLES,
        "only {} samples",
        samples.len()
    );
    let tools = tools();
    let distinct: std::collections::HashSet<&String> = samples
        .iter()
        .map(|sample| {
            tools
                .get(&sample.name)
                .unwrap_or_else(|| panic!("{} has no tool in `tools`", sample.name))
        })
        .collect();
    assert!(distinct.len() >= MIN_TOOLS, "only {} tools", distinct.len());
    let passing = samples.iter().filter(|sample| sample.passing).count();
    assert!(
        passing * 5 >= samples.len(),
        "only {passing} passing samples of {}",
        samples.len()
    );
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
            sample.passing || !sample.decisive.is_empty(),
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
    failing: usize,
    passing: usize,
    plain_kept: usize,
    aware_kept: usize,
    plain_chars: Vec<usize>,
    aware_chars: Vec<usize>,
    plain_density: Vec<f64>,
    aware_density: Vec<f64>,
    misses: Vec<String>,
}

fn median_of(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

impl Totals {
    fn line(&mut self, label: &str) -> String {
        format!(
            "{label:<9} {:>3} failing: every decisive line kept: plain {:>2} ({:>3}%), error-aware {:>2} ({:>3}%); \
             {:>3} passing: distinct templates per 1,000 chars (median): plain {:.2}, error-aware {:.2}; \
             median length of all: plain {} chars, error-aware {} chars",
            self.failing,
            self.plain_kept,
            percent(self.plain_kept, self.failing),
            self.aware_kept,
            percent(self.aware_kept, self.failing),
            self.passing,
            median_of(&mut self.plain_density),
            median_of(&mut self.aware_density),
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
        "\nsample                                     half      plain              error-aware\n",
    );
    let (mut dev, mut held_out) = (Totals::default(), Totals::default());
    for sample in samples.iter().filter(|sample| evaluated(sample.half)) {
        let plain = evaluate(sample, &plain_config);
        let aware = evaluate(sample, &aware_config);
        let mark = |outcome: &Outcome| {
            if sample.passing {
                format!("{:>4.1}/k", density(outcome))
            } else if outcome.kept_all {
                "kept  ".to_owned()
            } else {
                "LOST  ".to_owned()
            }
        };
        let (label, totals) = match sample.half {
            Half::Dev => ("dev", &mut dev),
            Half::HeldOut => ("held-out", &mut held_out),
        };
        let _ = writeln!(
            table,
            "{:<42} {label:<9} {} {:>5}       {} {:>5}",
            sample.name,
            mark(&plain),
            plain.chars,
            mark(&aware),
            aware.chars
        );
        if sample.passing {
            totals.passing += 1;
            totals.plain_density.push(density(&plain));
            totals.aware_density.push(density(&aware));
        } else {
            totals.failing += 1;
            totals.plain_kept += usize::from(plain.kept_all);
            totals.aware_kept += usize::from(aware.kept_all);
            if !aware.kept_all {
                totals.misses.push(sample.name.clone());
            }
        }
        totals.plain_chars.push(plain.chars);
        totals.aware_chars.push(aware.chars);
        assert!(
            aware.chars <= limit,
            "{}: {} chars over {limit}",
            sample.name,
            aware.chars
        );
    }
    let _ = writeln!(table, "{}", dev.line("dev"));
    let evaluating_held_out = held_out.failing + held_out.passing > 0;
    if evaluating_held_out {
        let _ = writeln!(table, "{}", held_out.line("held-out"));
    }
    println!("{table}");
    assert!(
        dev.aware_kept >= DEV_KEPT_AT_LEAST,
        "regression: dev lost {:?}{table}",
        dev.misses
    );
    assert!(
        median_of(&mut dev.aware_density) > median_of(&mut dev.plain_density),
        "dev: passing outputs keep fewer templates than plain{table}"
    );
    assert!(
        median(&mut dev.aware_chars) <= budget,
        "dev median over budget{table}"
    );
    if evaluating_held_out {
        assert!(
            held_out.aware_kept * 100 >= held_out.failing * HELD_OUT_TARGET_PERCENT,
            "held-out half below {HELD_OUT_TARGET_PERCENT}%: lost {:?}{table}",
            held_out.misses
        );
        assert!(
            held_out.aware_kept >= HELD_OUT_KEPT_AT_LEAST,
            "regression: held-out lost {:?}{table}",
            held_out.misses
        );
        assert!(
            median(&mut held_out.aware_chars) <= HELD_OUT_MEDIAN_CHARS,
            "held-out median over {HELD_OUT_MEDIAN_CHARS} chars{table}"
        );
        assert!(
            median_of(&mut held_out.aware_density) > median_of(&mut held_out.plain_density),
            "held-out: passing outputs keep fewer templates than plain{table}"
        );
    }
}

#[test]
#[ignore = "prints the error-aware text of every sample (or of those named in SHOW), for reading"]
fn show_error_aware_texts() {
    let only = std::env::var("SHOW").unwrap_or_default();
    for sample in corpus() {
        if !evaluated(sample.half)
            || (!only.is_empty() && !only.split(',').any(|name| name == sample.name))
        {
            continue;
        }
        println!(
            "===== {}\n{}",
            sample.name,
            shorten(&sample.log, &config(Shortening::ErrorAware))
        );
    }
}
