//! Line assembly: joining chunks into lines per stream, keeping only the
//! two ends of very long lines, and `\r` redraws (the last state wins).

use crate::output::buffer::pending::{PendingLine, keep_last_chars};
use crate::output::buffer::{OutputBuffer, stream_index};
use crate::output::chunk::Stream;

impl OutputBuffer {
    pub(super) fn append_pending(&mut self, index: usize, stream: Stream, piece: &str) {
        if piece.is_empty() {
            return;
        }
        if self.pending[index].carriage_return {
            self.restart_pending(index, stream);
        }
        let cap = self.line_cap;
        let half = cap / 2;
        let pending = &mut self.pending[index];
        let piece_chars = piece.chars().count();
        pending.total_chars += piece_chars;
        let head_room = half.saturating_sub(pending.head_chars);
        if head_room > 0 {
            let taken_bytes = piece
                .char_indices()
                .nth(head_room)
                .map_or(piece.len(), |(byte, _)| byte);
            let taken = &piece[..taken_bytes];
            pending.head.push_str(taken);
            pending.head_chars += taken.chars().count();
            let remainder = &piece[taken_bytes..];
            pending.tail.push_str(remainder);
            pending.tail_chars += remainder.chars().count();
        } else {
            pending.tail.push_str(piece);
            pending.tail_chars += piece_chars;
        }
        // Amortized trim: let the tail grow to `cap`, then keep its last half.
        if pending.tail_chars > cap {
            let drop_chars = pending.tail_chars - half;
            let drop_bytes = pending
                .tail
                .char_indices()
                .nth(drop_chars)
                .map_or(pending.tail.len(), |(byte, _)| byte);
            {
                // Error-aware shortening wants the text around an error even
                // in the middle of a line of megabytes: look before forgetting.
                // A token cut by the trim point is still seen whole.
                let mut overlap = (drop_bytes + 64).min(pending.tail.len());
                while !pending.tail.is_char_boundary(overlap) {
                    overlap -= 1;
                }
                let (dropped, rest) = pending.tail.split_at(overlap);
                let kept = pending.middle_window.take();
                pending.middle_window = self.salient.middle_window(kept, dropped, rest);
            }
            pending.tail.drain(..drop_bytes);
            pending.tail_chars = half;
        }
        if self.log.is_some() {
            let pending = &mut self.pending[index];
            pending.unlogged.push_str(piece);
            // A line this long would be lost to the log if we waited for its
            // end: write it as it comes.
            if pending.total_chars > cap {
                self.flush_pending_to_log(index, stream);
            }
        }
    }
    pub(super) fn restart_pending(&mut self, index: usize, stream: Stream) {
        let was_logged = self.pending[index].logged_chars > 0;
        if was_logged {
            // The redrawn line is already partly in the log: end it there.
            self.finish_logged_line(index, stream);
        }
        self.pending[index] = PendingLine::default();
    }
    pub(super) fn complete_line(&mut self, stream: Stream) {
        let index = stream_index(stream);
        let pending = std::mem::take(&mut self.pending[index]);
        let mut log_line = pending.log_line;
        if self.log.is_some() {
            if pending.logged_chars > 0 {
                self.pending[index].unlogged.clone_from(&pending.unlogged);
                self.pending[index].logged_chars = pending.logged_chars;
                self.pending[index].log_line = pending.log_line;
                self.finish_logged_line(index, stream);
                self.pending[index] = PendingLine::default();
            } else {
                self.log_begin_line(stream);
                log_line = Some(self.log_lines + 1);
                self.log_write(&pending.unlogged);
                self.log_write("\n");
            }
        }
        let mut text = pending.head;
        text.push_str(keep_last_chars(
            &pending.tail,
            pending.tail_chars,
            self.line_cap / 2,
        ));
        let window = pending.middle_window;
        self.add_line(stream, text, log_line, pending.total_chars, window, true);
    }
}
