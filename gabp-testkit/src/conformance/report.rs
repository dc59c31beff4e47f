//! [`Report`], [`CheckReport`] and [`Outcome`]: what a conformance run found.

use std::fmt;
use std::time::Duration;

use super::Level;

/// How one check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The mod did what the protocol requires.
    Passed,
    /// The mod broke a rule; the reason is one line.
    Failed(String),
    /// The check could not be run against this mod (it lacks what the check needs, or an earlier check
    /// showed it cannot be reached); the reason is one line. A skip is not a failure.
    Skipped(String),
}

impl Outcome {
    /// Whether the check passed.
    #[must_use]
    pub fn is_passed(&self) -> bool {
        matches!(self, Outcome::Passed)
    }

    /// Whether the check failed.
    #[must_use]
    pub fn is_failed(&self) -> bool {
        matches!(self, Outcome::Failed(_))
    }

    /// Whether the check was skipped.
    #[must_use]
    pub fn is_skipped(&self) -> bool {
        matches!(self, Outcome::Skipped(_))
    }

    /// The reason of a failure or a skip.
    #[must_use]
    pub fn reason(&self) -> Option<&str> {
        match self {
            Outcome::Passed => None,
            Outcome::Failed(reason) | Outcome::Skipped(reason) => Some(reason),
        }
    }
}

/// The result of one check.
///
/// Its `Display` is the line `gabp conformance` prints: `ok   NAME [LEVEL]`, `FAIL NAME [LEVEL]: reason` or
/// `skip NAME [LEVEL]: reason`, where LEVEL is `MUST`, `SHOULD` or `gabp-rs`.
///
/// ```
/// use gabp_testkit::conformance::{CheckReport, Outcome};
/// use std::time::Duration;
///
/// let ok = CheckReport::new("session.ping", Outcome::Passed, Duration::from_millis(3));
/// assert_eq!(ok.to_string(), "ok   session.ping [SHOULD]");
/// let failed = CheckReport::new("session.ping", Outcome::Failed("no answer within 5 s".into()), Duration::ZERO);
/// assert_eq!(failed.to_string(), "FAIL session.ping [SHOULD]: no answer within 5 s");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckReport {
    /// The check's stable name, such as `auth.wrong_token_refused` (see [`checks`](super::checks)).
    pub name: &'static str,
    /// The level of its rule (`MUST` for a name that is not in the suite).
    pub level: Level,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took.
    pub elapsed: Duration,
}

impl CheckReport {
    /// A check result (for tests of report printers).
    #[must_use]
    pub fn new(name: &'static str, outcome: Outcome, elapsed: Duration) -> Self {
        let level = super::checks()
            .iter()
            .find(|c| c.name == name)
            .map_or(Level::Must, |c| c.level);
        CheckReport {
            name,
            level,
            outcome,
            elapsed,
        }
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            Outcome::Passed => write!(f, "ok   {} [{}]", self.name, self.level),
            Outcome::Failed(reason) => write!(f, "FAIL {} [{}]: {reason}", self.name, self.level),
            Outcome::Skipped(reason) => {
                write!(f, "skip {} [{}]: {reason}", self.name, self.level)
            }
        }
    }
}

/// What a conformance run found: one [`CheckReport`] per check, in run order.
///
/// Its `Display` prints one line per check, then its [`hints`](Report::hints), then the summary line
/// (`N passed, M failed`, with `, K skipped` when some were).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mock = gabp_testkit::MockMod::demo()?;
/// let report = gabp_testkit::conformance::run(&mock.conformance_target()).await;
/// for check in report.checks() {
///     println!("{check}");
/// }
/// println!("{}", report.summary());
/// assert!(report.is_success());
/// assert_eq!(report.failed(), 0);
/// assert!(report.check("handshake.welcome_valid").is_some_and(|c| c.outcome.is_passed()));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    target: String,
    checks: Vec<CheckReport>,
    hints: Vec<String>,
    elapsed: Duration,
}

impl Report {
    pub(crate) fn new(
        target: String,
        checks: Vec<CheckReport>,
        hints: Vec<String>,
        elapsed: Duration,
    ) -> Self {
        Report {
            target,
            checks,
            hints,
            elapsed,
        }
    }

    /// Advice that is no check's verdict, one line each, such as [`nagle_hint`]'s.
    #[must_use]
    pub fn hints(&self) -> &[String] {
        &self.hints
    }

    /// What was tested (the target's description).
    #[must_use]
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Every check, in run order.
    #[must_use]
    pub fn checks(&self) -> &[CheckReport] {
        &self.checks
    }

    /// The check named `name`.
    #[must_use]
    pub fn check(&self, name: &str) -> Option<&CheckReport> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// The checks that failed.
    pub fn failures(&self) -> impl Iterator<Item = &CheckReport> {
        self.checks.iter().filter(|c| c.outcome.is_failed())
    }

    /// How many checks passed.
    #[must_use]
    pub fn passed(&self) -> usize {
        self.checks.iter().filter(|c| c.outcome.is_passed()).count()
    }

    /// How many checks failed.
    #[must_use]
    pub fn failed(&self) -> usize {
        self.checks.iter().filter(|c| c.outcome.is_failed()).count()
    }

    /// How many checks were skipped.
    #[must_use]
    pub fn skipped(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| c.outcome.is_skipped())
            .count()
    }

    /// Whether no check failed (skipped checks do not count against it).
    #[must_use]
    pub fn is_success(&self) -> bool {
        self.failed() == 0
    }

    /// How long the run took.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// `N passed, M failed`, with `, K skipped` when some were.
    #[must_use]
    pub fn summary(&self) -> String {
        let mut line = format!("{} passed, {} failed", self.passed(), self.failed());
        if self.skipped() > 0 {
            line.push_str(&format!(", {} skipped", self.skipped()));
        }
        line
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for check in &self.checks {
            writeln!(f, "{check}")?;
        }
        for hint in &self.hints {
            writeln!(f, "{hint}")?;
        }
        write!(f, "{}", self.summary())
    }
}

/// The hint for a typical round trip of `p50` when it is near 40 ms, the delay that Nagle's algorithm and
/// delayed acknowledgements add to small writes of a mod without `TCP_NODELAY`.
///
/// ```
/// use std::time::Duration;
/// use gabp_testkit::conformance::nagle_hint;
///
/// assert_eq!(
///     nagle_hint(Duration::from_millis(44)),
///     Some("round trips near 40 ms: the mod may not set TCP_NODELAY (NoDelay in .NET) and may write a frame in pieces")
/// );
/// assert_eq!(nagle_hint(Duration::from_micros(250)), None);
/// ```
#[must_use]
pub fn nagle_hint(p50: Duration) -> Option<&'static str> {
    let near = Duration::from_millis(35)..=Duration::from_millis(50);
    near.contains(&p50)
        .then_some("round trips near 40 ms: the mod may not set TCP_NODELAY (NoDelay in .NET) and may write a frame in pieces")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nagle_hint_is_given_between_35_and_50_ms_only() {
        let ms = Duration::from_millis;
        for near in [ms(35), ms(40), ms(44), ms(50)] {
            assert!(nagle_hint(near).is_some(), "{near:?}");
        }
        for far in [Duration::ZERO, ms(1), ms(34), ms(51), ms(200)] {
            assert_eq!(nagle_hint(far), None, "{far:?}");
        }
    }
}
