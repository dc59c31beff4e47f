//! Glob patterns over names and URIs: `tools/list` `filter.namePattern`, `resources/list` `pattern`, and
//! channel patterns in `events/subscribe`.
//!
//! `*` and `?` never cross a `/`; `**` does; `[abc]` and `{a,b}` work as in shells.

use globset::{GlobBuilder, GlobMatcher};

#[derive(Debug, Clone)]
pub(crate) struct NamePattern(GlobMatcher);

impl NamePattern {
    /// Compiles `pattern`; the error says why it is not a valid glob.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map(|g| NamePattern(g.compile_matcher()))
            .map_err(|e| e.kind().to_string())
    }

    /// Whether `name` contains glob syntax (and so is a pattern rather than a plain name).
    pub(crate) fn is_pattern(name: &str) -> bool {
        name.contains(['*', '?', '[', '{'])
    }

    pub(crate) fn matches(&self, name: &str) -> bool {
        self.0.is_match(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_stays_within_a_segment() {
        let p = NamePattern::new("player/*").unwrap();
        assert!(p.matches("player/move"));
        assert!(!p.matches("player/a/b"));
        assert!(!p.matches("world/player"));
        assert!(NamePattern::new("player/**").unwrap().matches("player/a/b"));
        assert!(NamePattern::new("gabp://game/*")
            .unwrap()
            .matches("gabp://game/world"));
        assert!(NamePattern::new("world/{get,set}_block")
            .unwrap()
            .matches("world/set_block"));
    }

    #[test]
    fn invalid_and_detection() {
        assert!(NamePattern::new("a/[b").is_err());
        assert!(NamePattern::is_pattern("a/*"));
        assert!(!NamePattern::is_pattern("a/b"));
    }
}
