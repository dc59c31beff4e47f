//! `demo/set_bonus`: a tool that adds and removes another tool, `demo/bonus`, while the game serves; each change
//! is announced on `tools/changed` (SPEC/1.0 extensions.md §tools-changed).

use gabp_session::server::{CallError, Tool, ToolRegistry};
use gabp_session::Error as SessionError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::tools::NoArguments;
use super::DemoGame;

/// The tool `demo/set_bonus` adds and removes.
pub const BONUS_TOOL: &str = "demo/bonus";

/// Arguments of `demo/set_bonus`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SetBonus {
    /// Whether `demo/bonus` is to be served.
    enabled: bool,
}

/// What `demo/set_bonus` did.
#[derive(Debug, PartialEq, Eq, Serialize, JsonSchema)]
struct BonusSet {
    /// Whether `demo/bonus` is served now.
    enabled: bool,
    /// Whether this call changed it (and announced it on `tools/changed`).
    changed: bool,
}

/// What `demo/bonus` answers.
#[derive(Debug, Serialize, JsonSchema)]
struct Bonus {
    /// Where the tool came from.
    message: String,
}

impl DemoGame {
    pub(super) fn set_bonus_tool(&self, tools: ToolRegistry) -> Tool {
        let game = self.clone();
        Tool::new("demo/set_bonus", move |s: SetBonus| {
            game.count_call();
            let outcome = game.set_bonus(&tools, s.enabled);
            async move { outcome }
        })
        .title("Set bonus")
        .description(
            "Adds (enabled true) or removes (enabled false) the tool demo/bonus while the game runs; each \
             change is announced on tools/changed.",
        )
        .tags(["demo", "write"])
    }

    fn set_bonus(&self, tools: &ToolRegistry, enabled: bool) -> Result<BonusSet, CallError> {
        let failed = |e: SessionError| CallError::new(e.to_string()).retryable(false);
        let changed = if enabled {
            match tools.add(self.bonus_tool()) {
                Ok(()) => true,
                Err(SessionError::Duplicate { .. }) => false,
                Err(e) => return Err(failed(e)),
            }
        } else {
            tools.remove(BONUS_TOOL).map_err(failed)?
        };
        Ok(BonusSet { enabled, changed })
    }

    fn bonus_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new(BONUS_TOOL, move |_: NoArguments| {
            game.count_call();
            async {
                Ok::<_, CallError>(Bonus {
                    message: "served since demo/set_bonus added it".to_owned(),
                })
            }
        })
        .title("Bonus")
        .description("A tool the game serves only after demo/set_bonus with enabled true.")
        .tags(["demo", "read-only"])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::server;

    #[test]
    fn set_bonus_adds_and_removes_demo_bonus_once() {
        let game = DemoGame::new();
        let server = server(&game);
        let tools = server.tools();
        assert!(tools.contains("demo/set_bonus") && !tools.contains(BONUS_TOOL));
        let set = |enabled| game.set_bonus(&tools, enabled).unwrap();
        assert_eq!(
            set(true),
            BonusSet {
                enabled: true,
                changed: true
            }
        );
        assert!(tools.contains(BONUS_TOOL));
        assert_eq!(
            set(true),
            BonusSet {
                enabled: true,
                changed: false
            }
        );
        assert_eq!(
            set(false),
            BonusSet {
                enabled: false,
                changed: true
            }
        );
        assert!(!tools.contains(BONUS_TOOL));
        assert_eq!(
            set(false),
            BonusSet {
                enabled: false,
                changed: false
            }
        );
    }
}
