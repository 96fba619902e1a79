//! The markdown table the suite prints.

/// One row: what was measured, the numbers, the baseline, the ratio, the
/// target and whether it was met.
#[derive(Debug, Clone)]
pub struct Row {
    pub number: &'static str,
    pub what: String,
    pub ours: String,
    pub baseline: String,
    pub ratio: String,
    pub target: &'static str,
    pub met: Option<bool>,
}

/// Prints `header` (one paragraph per line), then the table.
pub fn print(rows: &[Row], header: &[String]) {
    for line in header {
        println!("{line}\n");
    }
    println!("| # | what | bashtool | baseline (same run) | ratio | target | met |");
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        let met = match row.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "—",
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            row.number, row.what, row.ours, row.baseline, row.ratio, row.target, met
        );
    }
}
