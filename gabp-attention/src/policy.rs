//! [`AttentionPolicy`] (which entries open an item, and what kind of item) and [`Allowlist`] (what a gate lets
//! through while a blocking item is open).

use std::collections::BTreeSet;

use gabp_types::Severity;

/// Decides which recorded entries matter and what kind of item they make.
///
/// - An entry at or above [`open_at`](AttentionPolicy::open_at) (default `error`) opens an item when none is
///   open.
/// - While an item is open, entries at or above [`fold_at`](AttentionPolicy::fold_at) (default `warning`; never
///   above `open_at`) fold into it. Less severe entries only take a diagnostics sequence number.
/// - The item is `blocking` once it holds an entry at or above [`blocking_at`](AttentionPolicy::blocking_at)
///   (default `error`), and `stateInvalidated` once it holds one at or above
///   [`invalidates_state_at`](AttentionPolicy::invalidates_state_at) (default `error`). An entry can decide
///   for itself with [`Entry::blocking`](crate::Entry::blocking) and
///   [`Entry::state_invalidated`](crate::Entry::state_invalidated). Neither flag is ever withdrawn while the
///   item is open.
///
/// ```
/// use gabp_attention::AttentionPolicy;
/// use gabp_types::Severity;
///
/// // Warnings open items too, but only errors block.
/// let policy = AttentionPolicy::default().open_at(Severity::Warning);
/// assert!(policy.opens(Severity::Warning));
/// assert!(!policy.blocks(Severity::Warning));
/// assert!(policy.blocks(Severity::Fatal));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttentionPolicy {
    open_at: Severity,
    fold_at: Severity,
    blocking_at: Option<Severity>,
    invalidates_state_at: Option<Severity>,
}

impl Default for AttentionPolicy {
    fn default() -> Self {
        AttentionPolicy {
            open_at: Severity::Error,
            fold_at: Severity::Warning,
            blocking_at: Some(Severity::Error),
            invalidates_state_at: Some(Severity::Error),
        }
    }
}

impl AttentionPolicy {
    /// The least severe level that opens an item.
    #[must_use]
    pub fn open_at(mut self, level: Severity) -> Self {
        self.open_at = level;
        self
    }

    /// The least severe level that folds into an open item (at most [`AttentionPolicy::open_at`]'s level).
    #[must_use]
    pub fn fold_at(mut self, level: Severity) -> Self {
        self.fold_at = level;
        self
    }

    /// The least severe level that makes an item blocking, or `None` for items that never block (unless an
    /// entry says so).
    #[must_use]
    pub fn blocking_at(mut self, level: Option<Severity>) -> Self {
        self.blocking_at = level;
        self
    }

    /// The least severe level that marks earlier reads stale (`stateInvalidated`), or `None` for never.
    #[must_use]
    pub fn invalidates_state_at(mut self, level: Option<Severity>) -> Self {
        self.invalidates_state_at = level;
        self
    }

    /// Whether an entry at `level` opens an item.
    #[must_use]
    pub fn opens(&self, level: Severity) -> bool {
        level >= self.open_at
    }

    /// Whether an entry at `level` folds into an open item.
    #[must_use]
    pub fn folds(&self, level: Severity) -> bool {
        level >= self.fold_at.min(self.open_at)
    }

    /// Whether an entry at `level` makes its item blocking.
    #[must_use]
    pub fn blocks(&self, level: Severity) -> bool {
        self.blocking_at.is_some_and(|b| level >= b)
    }

    /// Whether an entry at `level` invalidates earlier reads of the game state.
    #[must_use]
    pub fn invalidates_state(&self, level: Severity) -> bool {
        self.invalidates_state_at.is_some_and(|b| level >= b)
    }
}

/// The tags of the tools a gate lets through while a blocking item is open, by default (SPEC/1.0/attention.md
/// §6.1).
pub const DEFAULT_ALLOWED_TAGS: &[&str] =
    &["diagnostic", "status", "read-only", "attention-bypass"];

/// Tags GABS also lets through (its documented bypass tags), added by [`Allowlist::gabs`].
pub const GABS_EXTRA_TAGS: &[&str] = &["health", "lifecycle"];

/// Tool names GABS lets through whatever their tags (status and log tools of RimBridge), added by
/// [`Allowlist::gabs`].
pub const GABS_TOOL_NAMES: &[&str] = &[
    "rimbridge/get_bridge_status",
    "rimbridge/list_operation_events",
    "rimbridge/list_logs",
];

/// The tools a gate lets through while a blocking item is open: by tag (any of the tool's tags) and by name.
/// Only `tools/call` is ever gated; `session/*`, `attention/*`, `tools/list` and the other core methods never
/// are.
///
/// ```
/// use gabp_attention::Allowlist;
///
/// let allow = Allowlist::default().allow_tool("game/save_status");
/// assert!(allow.allows("world/get_block", ["world", "read-only"]));
/// assert!(allow.allows("game/save_status", std::iter::empty::<&str>()));
/// assert!(!allow.allows("world/place_block", ["world", "write"]));
///
/// let gabs = Allowlist::gabs();
/// assert!(gabs.allows("game/ping", ["health"]));
/// assert!(gabs.allows("rimbridge/list_logs", std::iter::empty::<&str>()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowlist {
    tags: BTreeSet<String>,
    tools: BTreeSet<String>,
}

impl Default for Allowlist {
    /// The tags `diagnostic`, `status`, `read-only` and `attention-bypass`.
    fn default() -> Self {
        Allowlist {
            tags: DEFAULT_ALLOWED_TAGS
                .iter()
                .map(|t| (*t).to_owned())
                .collect(),
            tools: BTreeSet::new(),
        }
    }
}

impl Allowlist {
    /// Nothing allowed: every `tools/call` is gated.
    #[must_use]
    pub fn empty() -> Self {
        Allowlist {
            tags: BTreeSet::new(),
            tools: BTreeSet::new(),
        }
    }

    /// GABS-compatible: the [default](Allowlist::default) tags, plus [`GABS_EXTRA_TAGS`] and
    /// [`GABS_TOOL_NAMES`]. What [`AttentionGate`](crate::AttentionGate) uses unless told otherwise.
    #[must_use]
    pub fn gabs() -> Self {
        let mut allow = Allowlist::default();
        allow
            .tags
            .extend(GABS_EXTRA_TAGS.iter().map(|t| (*t).to_owned()));
        allow
            .tools
            .extend(GABS_TOOL_NAMES.iter().map(|t| (*t).to_owned()));
        allow
    }

    /// Also lets through the tools tagged `tag`.
    #[must_use]
    pub fn allow_tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.insert(tag.into());
        self
    }

    /// Also lets through the tool `name`.
    #[must_use]
    pub fn allow_tool(mut self, name: impl Into<String>) -> Self {
        self.tools.insert(name.into());
        self
    }

    /// The allowed tags.
    pub fn tags(&self) -> impl Iterator<Item = &str> {
        self.tags.iter().map(String::as_str)
    }

    /// The allowed tool names.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(String::as_str)
    }

    /// Whether tool `name`, tagged `tags`, may run while a blocking item is open.
    pub fn allows<I, S>(&self, name: &str, tags: I) -> bool
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.tools.contains(name) || tags.into_iter().any(|t| self.tags.contains(t.as_ref()))
    }
}

/// The tags of a tool.
pub(crate) fn tags_of(tool: &gabp_types::ToolDescriptor) -> impl Iterator<Item = &str> {
    tool.tags
        .as_ref()
        .map(|t| t.as_slice())
        .unwrap_or_default()
        .iter()
        .map(String::as_str)
}

/// Whether `method` is never gated, whatever the configuration: `session/*`, `attention/*` and `tools/list`.
pub(crate) fn never_gated(method: &str) -> bool {
    method.starts_with("session/") || method.starts_with("attention/") || method == "tools/list"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_policy() {
        let p = AttentionPolicy::default();
        assert!(!p.opens(Severity::Warning) && p.opens(Severity::Error));
        assert!(p.folds(Severity::Warning) && !p.folds(Severity::Info));
        assert!(p.blocks(Severity::Error) && !p.blocks(Severity::Warning));
        assert!(p.invalidates_state(Severity::Fatal));
        let never = p.blocking_at(None).invalidates_state_at(None);
        assert!(!never.blocks(Severity::Fatal) && !never.invalidates_state(Severity::Fatal));
    }

    #[test]
    fn fold_threshold_never_above_open_threshold() {
        let p = AttentionPolicy::default()
            .open_at(Severity::Info)
            .fold_at(Severity::Fatal);
        assert!(p.folds(Severity::Info));
    }

    #[test]
    fn never_gated_methods() {
        for m in [
            "session/ping",
            "attention/ack",
            "attention/current",
            "tools/list",
        ] {
            assert!(never_gated(m), "{m}");
        }
        assert!(!never_gated("tools/call"));
        assert!(!never_gated("state/set"));
        assert!(Allowlist::empty().tags().next().is_none());
        assert_eq!(Allowlist::gabs().tools().count(), GABS_TOOL_NAMES.len());
    }
}
