//! What the table's header says about the run: when, how loaded the
//! machine was at its start and end, and which MCP clients item 7 used.

/// The three load averages from `/proc/loadavg` (1, 5 and 15 minutes), as
/// the kernel prints them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |error| format!("unknown ({error})"),
        |text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        },
    )
}

/// The current UTC date and time, `2026-11-24 11:30 UTC`.
pub fn utc_now() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let days = i64::try_from(seconds / 86_400).unwrap_or(0);
    let (year, month, day) = civil_from_days(days);
    let minutes = seconds % 86_400 / 60;
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        minutes / 60,
        minutes % 60
    )
}

/// Year, month, day of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, proleptic Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = u32::try_from(day_of_year - (153 * month_index + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    })
    .unwrap_or(1);
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The header: date, cores, load at the start and end, client versions.
pub struct Header {
    pub started: String,
    pub load_at_start: String,
}

impl Header {
    /// Taken before the first item runs.
    pub fn at_start() -> Self {
        Self {
            started: utc_now(),
            load_at_start: load_average(),
        }
    }

    /// The lines printed above the table, once the items have run.
    pub fn lines(&self, cores: usize) -> Vec<String> {
        vec![
            format!(
                "Run of {} to {}; machine: {cores} cores; load average (1, 5, 15 min) {} at the start, {} at the end.",
                self.started,
                utc_now(),
                self.load_at_start,
                load_average()
            ),
            format!("MCP clients (item 7): {}.", crate::clients::versions_line()),
            "Times are min / median / max after a warm-up.".into(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn converts_day_counts_to_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_781), (2026, 11, 24));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
