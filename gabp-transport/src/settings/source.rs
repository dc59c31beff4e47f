//! [`SettingSource`]: where each of a mod's resolved settings came from (SPEC/1.0/transport.md §3).

use std::fmt;
use std::path::PathBuf;

/// Where a resolved setting came from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingSource {
    /// [`ExplicitSettings`](crate::ExplicitSettings).
    Explicit,
    /// The named GABS environment variable.
    Environment(&'static str),
    /// The `bridge.json` at this path.
    BridgeJson(PathBuf),
    /// Chosen by the mod itself: a free loopback TCP port, or a fresh token
    /// ([`ModSettings::resolve_or_default`](crate::ModSettings::resolve_or_default)).
    Default,
}

impl SettingSource {
    /// Whether a launcher gave this setting (the GABS environment or a `bridge.json`), rather
    /// than the mod's own code, flags or defaults.
    #[must_use]
    pub fn is_launcher(&self) -> bool {
        matches!(
            self,
            SettingSource::Environment(_) | SettingSource::BridgeJson(_)
        )
    }
}

impl fmt::Display for SettingSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingSource::Explicit => f.write_str("explicit setting"),
            SettingSource::Environment(var) => write!(f, "environment variable {var}"),
            SettingSource::BridgeJson(path) => write!(f, "{}", path.display()),
            SettingSource::Default => f.write_str("default"),
        }
    }
}
