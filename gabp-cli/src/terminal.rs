//! What the commands print with: [`Palette`] (ANSI colours, or none when `NO_COLOR` is set or the output is not
//! a terminal) and [`Progress`] (a progress bar on stderr when stderr is a terminal).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use gabp_types::shorten;

/// Whether colour is wanted on a stream that `is_terminal` or not: never when `NO_COLOR` is set to anything
/// non-empty (<https://no-color.org>), nor when the stream is not a terminal.
pub fn colour_wanted(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Colours for one output stream (all empty when colour is off).
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    on: bool,
}

impl Palette {
    /// Colours for standard output.
    pub fn stdout() -> Self {
        Palette {
            on: colour_wanted(std::io::stdout().is_terminal()),
        }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Headings.
    pub fn heading(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// What the bridge sends.
    pub fn sent(self, text: &str) -> String {
        self.paint("36", text)
    }

    /// What the mod answers.
    pub fn answer(self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Errors and failures.
    pub fn error(self, text: &str) -> String {
        self.paint("31", text)
    }

    /// Events and warnings.
    pub fn event(self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Side remarks.
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
}

/// A one-line progress bar on stderr, drawn only when stderr is a terminal, redrawn at most 10 times a second,
/// and erased when dropped.
#[derive(Debug)]
pub struct Progress {
    total: u64,
    label: String,
    enabled: bool,
    last_draw: Option<Instant>,
}

const BAR_WIDTH: u64 = 30;

impl Progress {
    /// A bar for `total` steps of what `label` names.
    pub fn new(total: u64, label: impl Into<String>) -> Self {
        Progress {
            total: total.max(1),
            label: label.into(),
            enabled: std::io::stderr().is_terminal(),
            last_draw: None,
        }
    }

    /// Shows `done` of the total steps, with `note` after the bar. Draws the last step always.
    pub fn set(&mut self, done: u64, note: &str) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        let due = self
            .last_draw
            .is_none_or(|last| now.duration_since(last) >= Duration::from_millis(100));
        if !due && done < self.total {
            return;
        }
        self.last_draw = Some(now);
        let filled = (done.min(self.total) * BAR_WIDTH / self.total) as usize;
        let bar = format!(
            "{}{}",
            "#".repeat(filled),
            "-".repeat(BAR_WIDTH as usize - filled)
        );
        let mut line = format!("[{bar}] {done}/{} {}", self.total, self.label);
        if !note.is_empty() {
            line.push_str(": ");
            line.push_str(note);
        }
        // Keep it to one terminal line (99 characters and an ellipsis), so that \r redraws it.
        let line = shorten(&line, 99);
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r\x1b[2K{line}");
        let _ = stderr.flush();
    }

    /// Erases the bar (so that the lines printed next start clean).
    pub fn clear(&mut self) {
        if self.enabled && self.last_draw.is_some() {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[2K");
            let _ = stderr.flush();
            self.last_draw = None;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}
