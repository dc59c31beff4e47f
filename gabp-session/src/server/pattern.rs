//! Glob patterns over names and URIs: `tools/list` `filter.namePattern`, `resources/list` `pattern`, and
//! channel patterns in `events/subscribe` (SPEC/1.0 gabp.md §4.4).
//!
//! `*` and `?` never cross a `/`; `**` does; `[abc]` and `{a,b}` work as in shells. A pattern is bounded in
//! length and wildcards before it is compiled, so a hostile one costs neither memory nor a panic.

use globset::{GlobBuilder, GlobMatcher};

/// The longest glob the mod compiles, in bytes; a longer one is answered `-32602` (SPEC/1.0 gabp.md §4.4).
pub const MAX_GLOB_BYTES: usize = 1024;

/// The most wildcard characters (`*`, `?`, `[`, `{`) in one glob; each one grows the compiled matcher, so a
/// glob with more is answered `-32602` (SPEC/1.0 gabp.md §4.4).
pub const MAX_GLOB_WILDCARDS: usize = 64;

/// Why a glob was not compiled. Never quotes the pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum PatternError {
    /// Longer than [`MAX_GLOB_BYTES`].
    #[error("glob pattern is {len} bytes long; at most {MAX_GLOB_BYTES} are accepted")]
    TooLong { len: usize },
    /// More wildcards than [`MAX_GLOB_WILDCARDS`].
    #[error("glob pattern has {count} wildcards; at most {MAX_GLOB_WILDCARDS} are accepted")]
    TooComplex { count: usize },
    /// Not a valid glob.
    #[error("invalid glob pattern: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone)]
pub(crate) struct NamePattern(GlobMatcher);

impl NamePattern {
    /// Checks the bounds, then compiles `pattern`.
    pub(crate) fn new(pattern: &str) -> Result<Self, PatternError> {
        if pattern.len() > MAX_GLOB_BYTES {
            return Err(PatternError::TooLong { len: pattern.len() });
        }
        let count = pattern
            .bytes()
            .filter(|b| matches!(b, b'*' | b'?' | b'[' | b'{'))
            .count();
        if count > MAX_GLOB_WILDCARDS {
            return Err(PatternError::TooComplex { count });
        }
        GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map(|g| NamePattern(g.compile_matcher()))
            // The kind alone: globset's full error quotes the pattern.
            .map_err(|e| PatternError::Invalid(e.kind().to_string()))
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
        assert!(matches!(
            NamePattern::new("a/[b"),
            Err(PatternError::Invalid(_))
        ));
        assert!(NamePattern::is_pattern("a/*"));
        assert!(!NamePattern::is_pattern("a/b"));
    }

    #[test]
    fn hostile_patterns_are_refused_before_compiling() {
        let stars = "*".repeat(87_380);
        let e = NamePattern::new(&stars).unwrap_err();
        assert_eq!(e, PatternError::TooLong { len: 87_380 });
        assert!(e.to_string().len() < 100, "{e}");
        let e = NamePattern::new(&"a*".repeat(MAX_GLOB_WILDCARDS + 1)).unwrap_err();
        assert!(matches!(e, PatternError::TooComplex { count: 65 }), "{e}");
        // At the bounds, the worst cases still compile.
        NamePattern::new(&"*".repeat(MAX_GLOB_WILDCARDS)).unwrap();
        let alternatives = format!("{{{}}}", vec!["ab"; 300].join(","));
        NamePattern::new(&alternatives).unwrap();
        let classes = "[a-z]".repeat(MAX_GLOB_WILDCARDS);
        NamePattern::new(&classes).unwrap();
    }

    #[test]
    fn random_patterns_never_panic() {
        let alphabet: Vec<char> = "*?[]{},/\\a-z\u{e9}!^\u{3b1}\u{10FFFF}".chars().collect();
        let mut seed: u64 = 0x1234_5678;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(seed >> 33).unwrap()
        };
        for _ in 0..3000 {
            let len = next() % 300;
            let pattern: String = (0..len)
                .map(|_| alphabet[next() % alphabet.len()])
                .collect();
            let compiled = std::panic::catch_unwind(|| NamePattern::new(&pattern).is_ok());
            assert!(compiled.is_ok(), "panicked on a {len}-character pattern");
        }
    }
}
