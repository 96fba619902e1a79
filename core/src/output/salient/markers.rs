//! The markers of the error-aware layout: where a group of error-like lines
//! is in the log, and how many lines (and error-like lines) were omitted.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Location {
    Log(u64),
    Output(u64),
}

impl Location {
    pub(crate) fn line(self) -> u64 {
        match self {
            Self::Log(line) | Self::Output(line) => line,
        }
    }

    pub(crate) fn of_what(self) -> &'static str {
        match self {
            Self::Log(_) => "of the log",
            Self::Output(_) => "of the output",
        }
    }
}

/// The marker before a group of error-like lines (of lines unlike the rest
/// around them, when `rare`).
pub(crate) fn group_marker(gap: u64, first: Location, last: Location, rare: bool) -> String {
    let what = if rare {
        "lines unlike those around them follow"
    } else {
        "error-like lines follow"
    };
    let span = if first.line() == last.line() {
        format!("line {} {}", first.line(), first.of_what())
    } else {
        format!("lines {}-{} {}", first.line(), last.line(), first.of_what())
    };
    if gap == 0 {
        format!("... ({what}, {span}) ...")
    } else {
        let noun = if gap == 1 { "line" } else { "lines" };
        format!("... ({gap} {noun} omitted; {what}, {span}) ...")
    }
}

/// The marker before the tail, with the error-like lines that did not fit.
pub(crate) fn tail_marker(
    gap: u64,
    omitted: u64,
    first_omitted: Option<Location>,
) -> Option<String> {
    let note = first_omitted.filter(|_| omitted > 0).map(|first| {
        let noun = if omitted == 1 { "line" } else { "lines" };
        format!(
            "{omitted} more error-like {noun}, the first at line {} {}",
            first.line(),
            first.of_what()
        )
    });
    let noun = if gap == 1 { "line" } else { "lines" };
    match (gap, note) {
        (0, None) => None,
        (0, Some(note)) => Some(format!("... ({note}, were omitted) ...")),
        (_, None) => Some(format!("... ({gap} {noun} omitted) ...")),
        (_, Some(note)) => Some(format!(
            "... ({gap} {noun} omitted; they include {note}) ..."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_name_the_log_lines_and_the_omitted_errors() {
        assert_eq!(
            group_marker(1180, Location::Log(1203), Location::Log(1210), false),
            "... (1180 lines omitted; error-like lines follow, lines 1203-1210 of the log) ..."
        );
        assert_eq!(
            group_marker(0, Location::Output(7), Location::Output(7), false),
            "... (error-like lines follow, line 7 of the output) ..."
        );
        assert_eq!(
            tail_marker(523, 12, Some(Location::Log(4410))).as_deref(),
            Some(
                "... (523 lines omitted; they include 12 more error-like lines, the first at line 4410 of the log) ..."
            )
        );
        assert_eq!(
            tail_marker(1, 0, None).as_deref(),
            Some("... (1 line omitted) ...")
        );
        assert_eq!(tail_marker(0, 0, None), None);
    }
}
