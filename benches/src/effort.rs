//! How much work each benchmark item does: the full run that the README
//! table is measured with, or `--quick` for a fast look. Every item takes
//! it, so it lives apart from `main`, which runs the items.

/// How much work each item does.
#[derive(Debug, Clone, Copy)]
pub struct Effort {
    pub quick: bool,
}

impl Effort {
    /// The number of runs for an item whose full run does `full`: a fifth
    /// of it when quick, but never fewer than 3.
    pub fn runs(self, full: usize) -> usize {
        if self.quick { (full / 5).max(3) } else { full }
    }
}
