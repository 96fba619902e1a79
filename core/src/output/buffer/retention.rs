//! Retention: numbering completed lines and keeping what formatting needs,
//! a head window and a tail window within the budget, and the salient lines.

use crate::output::buffer::{MAX_SPARE_TEXTS, OutputBuffer};
use crate::output::chunk::Stream;
use crate::output::lines::OutputLine;

impl OutputBuffer {
    pub(super) fn line_cost(&self, line: &OutputLine) -> usize {
        line.original_chars.min(self.config.max_line_chars) + 1
    }
    /// Numbers a completed line and keeps what formatting needs of it.
    /// `may_hold_anchor: false` when the chunk's prefilter pass found no
    /// error anchor in it.
    pub(super) fn add_line(
        &mut self,
        stream: Stream,
        text: String,
        log_line: Option<u64>,
        original_chars: usize,
        window: Option<crate::output::salient::MiddleWindow>,
        may_hold_anchor: bool,
    ) {
        self.total_lines += 1;
        let line = OutputLine {
            stream,
            text,
            number: self.total_lines,
            log_line,
            original_chars,
        };
        let cost = self.line_cost(&line);
        let budget = self.config.budget_chars();
        // A `stdout:`/`stderr:` header is shown where the stream changes; with
        // interleaved streams the headers would otherwise escape the budget.
        let header = if self.last_stream.is_some_and(|last| last != line.stream) {
            crate::output::lines::HEADER_COST
        } else {
            0
        };
        self.last_stream = Some(line.stream);
        self.total_cost += (cost + header) as u64;
        self.salient
            .observe_with_hint(&line, window, may_hold_anchor);
        if !self.head_full {
            if self.head_cost + cost <= budget || self.head.is_empty() {
                self.head_cost += cost;
                self.head.push(line.clone());
            } else {
                self.head_full = true;
            }
        }
        self.tail_cost += cost;
        self.tail.push_back(line);
        while self.tail.len() > 1 && self.tail_cost > budget {
            if let Some(dropped) = self.tail.pop_front() {
                self.tail_cost -= self.line_cost(&dropped);
                // Reuse the allocation for the next line instead of a
                // malloc/free pair per line.
                if self.spare_texts.len() < MAX_SPARE_TEXTS
                    && dropped.text.capacity() <= self.line_cap * 4
                {
                    self.spare_texts.push(dropped.text);
                }
            }
        }
    }
}
