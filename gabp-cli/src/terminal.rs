//! What the commands print with: [`Palette`] (ANSI colours, or none when `NO_COLOR` is set or the output is not
//! a terminal), [`Progress`] and [`CallProgress`] (progress bars on stderr when stderr is a terminal).

use std::io::IsTerminal;
use std::time::Duration;

use gabp_types::shorten;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

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

/// Where progress bars draw: stderr when it is a terminal, else nowhere.
fn bar_target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr_with_hz(10)
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// A one-line progress bar of counted steps on stderr, drawn only when stderr is a terminal, and erased when
/// dropped.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for `total` steps of what `label` names.
    pub fn new(total: u64, label: impl Into<String>) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total.max(1)), bar_target());
        bar.set_style(
            ProgressStyle::with_template("[{bar:30}] {pos}/{len} {prefix}{msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("#>-"),
        );
        bar.set_prefix(label.into());
        Progress { bar }
    }

    /// Shows `done` of the total steps, with `note` after the bar.
    pub fn set(&mut self, done: u64, note: &str) {
        self.bar.set_position(done);
        if note.is_empty() {
            self.bar.set_message("");
        } else {
            self.bar.set_message(format!(": {}", shorten(note, 40)));
        }
    }

    /// Hides the bar while `f` prints, then draws it again.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Erases the bar (so that the lines printed next start clean).
    pub fn clear(&mut self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// The progress of one tool call as the mod reports it: a bar when it says how much there is to do, a spinner
/// otherwise; on stderr when it is a terminal, erased when dropped.
#[derive(Debug)]
pub struct CallProgress {
    bar: ProgressBar,
    sized: bool,
}

/// The bar's length: progress is shown in thousandths of the total.
const STEPS: u64 = 1000;

impl CallProgress {
    /// A spinner for a call of `label`, until the first progress report.
    pub fn new(label: &str) -> Self {
        let bar = ProgressBar::with_draw_target(None, bar_target());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_prefix(label.to_owned());
        bar.enable_steady_tick(Duration::from_millis(100));
        CallProgress { bar, sized: false }
    }

    /// Shows a report: `progress` of `total` (when known), and the mod's message.
    pub fn report(&mut self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let message = message.map(|m| shorten(m, 40).into_owned());
        match total.filter(|t| *t > 0.0) {
            Some(total) => {
                if !self.sized {
                    self.sized = true;
                    self.bar.set_length(STEPS);
                    self.bar.set_style(
                        ProgressStyle::with_template(
                            "[{bar:30}] {percent:>3}% {prefix} {msg} ({elapsed})",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("#>-"),
                    );
                }
                let done = (progress / total).clamp(0.0, 1.0) * STEPS as f64;
                self.bar.set_position(done as u64);
                self.bar.set_message(message.unwrap_or_default());
            }
            None => {
                let text = match message {
                    Some(m) => format!("{progress} {m}"),
                    None => progress.to_string(),
                };
                self.bar.set_message(text);
            }
        }
    }
}

impl Drop for CallProgress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
