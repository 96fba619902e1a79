//! The kinds of error-like lines and the context each keeps: shared by the
//! recognizers (the matcher and its byte-level shapes) and the tracker, so
//! that none of them depends on another's internals.

/// What kind of error-like line matched; decides the context kept with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Compiler, linter and tool diagnostics: `error:`, `error[E0308]`,
    /// `x.c:3:5: error:`, `[ERROR]`, `fatal:`, `undefined reference`.
    Diagnostic,
    /// A failing test: `--- FAIL:`, `FAILED`, `not ok`, `✕`, jest's `●`.
    TestFailure,
    /// `thread 'main' panicked at`, Go's `panic:`.
    Panic,
    /// `Traceback (most recent call last):`.
    Traceback,
    /// An exception line (`ValueError: …`, `java.lang.X: …`, `Caused by:`).
    Exception,
    /// Assertion details: pytest's `E   …`, `Expected:`/`Received:`.
    Assertion,
    /// An OS or shell error: `Permission denied`, `command not found`, …
    Failure,
    /// A structured log record at error level.
    LogError,
    /// One of the embedder's extra patterns.
    Custom,
    /// A command's non-zero exit status reported in the output (`exit
    /// status 2`, `exited with code 1`): the block before it is what failed.
    Status,
    /// A line whose template is new where the lines before it were not: an
    /// outlier among uniform lines, kept even without an error word (and
    /// shown only if its template stays rare to the end of the output).
    Rare,
    /// A word that tells of a failure inside a long line (`constraint
    /// failed`, `"reason":`): chooses the window shown of the line only.
    Telling,
}

/// How many lines around a salient line are kept with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Context {
    pub before: usize,
    pub after: usize,
    /// A blank line ends the context after (rustc and gcc end a diagnostic
    /// with one).
    pub stop_at_blank: bool,
    /// The context before is the block the line closes: back to the last
    /// blank line, up to `before` lines (a test's output above its `FAIL`).
    pub block_before: bool,
}

/// The most context lines kept before a salient line (the look-back ring).
pub(crate) const MAX_BEFORE: usize = 16;
/// The most lines of the block that a failure marker closes.
const BLOCK_BEFORE: usize = 12;

impl Kind {
    pub(crate) fn context(self) -> Context {
        let (before, after, stop_at_blank) = match self {
            // rustc: `-->` location, the source line and the carets follow.
            Self::Diagnostic => (1, 8, true),
            // meson, ctest and Go print the assertion above the marker, jest
            // after `●`: the block before, and some lines after.
            Self::TestFailure => (BLOCK_BEFORE, 6, false),
            // A debugger's or a race detector's frames follow the signal.
            Self::Panic => (0, 6, false),
            Self::Traceback | Self::LogError => (0, 0, false),
            // The last frames of a traceback come before the exception line;
            // the failed step's output before its status.
            Self::Exception | Self::Status => (BLOCK_BEFORE, 2, false),
            Self::Assertion | Self::Custom => (1, 2, false),
            // `+ cmd` of `bash -x` before `cmd: command not found`.
            Self::Failure | Self::Telling => (1, 0, false),
            // An outlier: the line that leads to it, and what follows it.
            Self::Rare => (1, 2, true),
        };
        Context {
            before,
            after,
            stop_at_blank,
            block_before: matches!(self, Self::TestFailure | Self::Status),
        }
    }

    /// How much a match says about the failure, to choose among several in
    /// one long line: an exception's name and message over a diagnostic
    /// word, over a log level.
    pub(crate) fn rank(self) -> u8 {
        match self {
            Self::Exception | Self::Traceback | Self::Panic | Self::Assertion => 3,
            Self::Diagnostic | Self::TestFailure | Self::Failure | Self::Status => 2,
            Self::LogError | Self::Custom => 1,
            Self::Rare | Self::Telling => 0,
        }
    }
}

/// A salient line: its kind and the byte offset of the match in the line
/// (always on a char boundary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Match {
    pub kind: Kind,
    pub offset: usize,
}
