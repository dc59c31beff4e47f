//! The hub's own MCP tools: GABS 1.1's thirteen (same names, same arguments), the event tools, and time
//! control and input for the games that offer them.

use std::sync::Arc;

use serde_json::{json, Map, Value};

/// One hub tool: its name, what it does, and its arguments (`(name, JSON type, description)`), the required
/// ones first.
pub(crate) struct HubTool {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) required: &'static [&'static str],
    pub(crate) args: &'static [(&'static str, &'static str, &'static str)],
    /// Whether the tool only reads (an MCP `readOnlyHint`).
    pub(crate) read_only: bool,
}

const GAME_ID: (&str, &str, &str) = (
    "gameId",
    "string",
    "The game's id from games_list (or a launch target only one game has)",
);
const OPTIONAL_GAME_ID: (&str, &str, &str) = (
    "gameId",
    "string",
    "The game's id; may be left out when exactly one game is connected",
);
const TIMEOUT: (&str, &str, &str) = ("timeout", "integer", "Time limit in seconds");

/// Every hub tool, in name order.
pub(crate) const HUB_TOOLS: &[HubTool] = &[
    HubTool {
        name: "games_ack_attention",
        description: "Acknowledge a game's open attention item, so that calls it blocks can run again.",
        required: &["attentionId"],
        args: &[
            OPTIONAL_GAME_ID,
            ("attentionId", "string", "The attentionId from games_get_attention"),
            TIMEOUT,
        ],
        read_only: false,
    },
    HubTool {
        name: "games_call_tool",
        description: "Call one of a running game's own tools. Find names with games_tool_names and arguments with games_tool_detail first.",
        required: &["tool"],
        args: &[
            OPTIONAL_GAME_ID,
            ("tool", "string", "The tool: its mirrored name (voxel_world_get_block) or, with gameId, its game name (world/get_block)"),
            ("arguments", "object", "The tool's arguments"),
            ("timeout", "integer", "Time limit in seconds, 1 to 3600 (default: timeouts.toolCallSeconds in config.json, 30 when absent)"),
        ],
        read_only: false,
    },
    HubTool {
        name: "games_connect",
        description: "Attach to a game that is already running (started earlier, or by another launcher) over GABP, or re-sync its tools.",
        required: &["gameId"],
        args: &[
            GAME_ID,
            ("forceTakeover", "boolean", "Accepted for compatibility; the hub has no shared ownership to take over"),
            ("timeout", "integer", "How long to keep trying, in seconds (default 15)"),
        ],
        read_only: false,
    },
    HubTool {
        name: "games_events",
        description: "Read the events of the channels subscribed with games_subscribe, in order, from a cursor; waits up to waitMs for new ones. Never returns the same event twice from the same cursor; lost events are reported as gaps.",
        required: &[],
        args: &[
            OPTIONAL_GAME_ID,
            ("cursor", "string", "The cursor of the previous read; leave out to read from the oldest event kept"),
            ("waitMs", "integer", "How long to wait for an event when there is none (0 to 30000, default 0)"),
        ],
        read_only: true,
    },
    HubTool {
        name: "games_get_attention",
        description: "Show a game's open attention item: what went wrong in the game that the agent must look at before acting again.",
        required: &[],
        args: &[OPTIONAL_GAME_ID, TIMEOUT],
        read_only: true,
    },
    HubTool {
        name: "games_input",
        description: "Play a game that offers input: press, release or tap a key (W3C KeyboardEvent.code names: KeyA, Digit1, ArrowLeft, Space, Enter, ...), type text, or click a mouse button, as if a player did. Give exactly one of key, text or button.",
        required: &[],
        args: &[
            OPTIONAL_GAME_ID,
            ("key", "string", "A key name, such as ArrowLeft, KeyW or Space"),
            ("text", "string", "Text to type, as text input"),
            ("button", "string", "A mouse button: left, right or middle"),
            ("action", "string", "For a key: press, release or tap (default tap); for a button: press, release or click (default click)"),
            ("position", "object", "For a button: {x, y}, where the cursor goes first, in the window's logical pixels from its top left"),
        ],
        read_only: false,
    },
    HubTool {
        name: "games_kill",
        description: "End a game the hub started, at once (its whole process group).",
        required: &["gameId"],
        args: &[GAME_ID],
        read_only: false,
    },
    HubTool {
        name: "games_list",
        description: "List the configured games.",
        required: &[],
        args: &[],
        read_only: true,
    },
    HubTool {
        name: "games_logs",
        description: "Show the last lines a game printed on stdout and stderr (also after it exited), optionally only those matching a regular expression.",
        required: &["gameId"],
        args: &[
            GAME_ID,
            ("tail", "integer", "How many of the last lines (1 to 1000, default 100)"),
            ("grep", "string", "Only lines matching this regular expression (a plain word matches as a substring)"),
        ],
        read_only: true,
    },
    HubTool {
        name: "games_show",
        description: "Show one game's configuration and status.",
        required: &["gameId"],
        args: &[GAME_ID],
        read_only: true,
    },
    HubTool {
        name: "games_start",
        description: "Start a configured game and connect to it over GABP.",
        required: &["gameId"],
        args: &[
            GAME_ID,
            ("timeout", "integer", "How long to keep trying to connect, in seconds (1 to 3600)"),
            ("resetEndpoint", "boolean", "Accepted for compatibility; every start gets a fresh port and token"),
            ("profile", "string", "Launch profiles are not supported; leave out"),
            ("launchInputs", "object", "Launch inputs are not supported; leave out"),
        ],
        read_only: false,
    },
    HubTool {
        name: "games_status",
        description: "Show whether games are running and connected: one game, or all of them.",
        required: &[],
        args: &[("gameId", "string", "The game's id; leave out for all games")],
        read_only: true,
    },
    HubTool {
        name: "games_stop",
        description: "Stop a game the hub started: asks its processes to end, and ends what is left after 10 s.",
        required: &["gameId"],
        args: &[GAME_ID],
        read_only: false,
    },
    HubTool {
        name: "games_subscribe",
        description: "Subscribe to some of a game's event channels; read the events with games_events.",
        required: &["channels"],
        args: &[
            OPTIONAL_GAME_ID,
            ("channels", "array", "Channel names, such as player/move"),
        ],
        read_only: false,
    },
    HubTool {
        name: "games_time",
        description: "Pause, resume or step a game that offers time control, or read its clock. Paused, the world stays as you read it; step runs exactly that many ticks of its simulation.",
        required: &["action"],
        args: &[
            OPTIONAL_GAME_ID,
            ("action", "string", "status, pause, resume or step"),
            ("ticks", "integer", "For step: how many ticks to run (1 to the game's maxStepTicks)"),
        ],
        read_only: false,
    },
    HubTool {
        name: "games_tool_detail",
        description: "Show one game tool: what it does, its arguments and its result.",
        required: &["tool"],
        args: &[
            OPTIONAL_GAME_ID,
            ("tool", "string", "The tool: its mirrored name, or with gameId its game name"),
        ],
        read_only: true,
    },
    HubTool {
        name: "games_tool_names",
        description: "List the names of the games' own tools, compactly; then use games_tool_detail for one of them.",
        required: &[],
        args: &[
            ("gameId", "string", "Only this game's tools"),
            ("query", "string", "Only names that contain this text"),
            ("prefix", "string", "Only names that start with this text"),
            ("limit", "integer", "At most this many names (default 50)"),
            ("cursor", "string", "Where the previous page ended"),
            ("brief", "boolean", "Also a one-line summary of each tool, in the structured output"),
        ],
        read_only: true,
    },
    HubTool {
        name: "games_tools",
        description: "List the games' own tools with their descriptions and argument schemas.",
        required: &[],
        args: &[
            ("gameId", "string", "Only this game's tools"),
            ("query", "string", "Only names that contain this text"),
            ("prefix", "string", "Only names that start with this text"),
            ("limit", "integer", "At most this many tools"),
            ("cursor", "string", "Where the previous page ended"),
        ],
        read_only: true,
    },
    HubTool {
        name: "games_unsubscribe",
        description: "Stop logging some of a game's event channels.",
        required: &["channels"],
        args: &[
            OPTIONAL_GAME_ID,
            ("channels", "array", "Channel names"),
        ],
        read_only: false,
    },
];

impl HubTool {
    /// The tool by name, also by GABS's dotted name (`games.list`).
    pub(crate) fn find(name: &str) -> Option<&'static HubTool> {
        let name = name.strip_prefix("games.").map_or_else(
            || name.to_owned(),
            |rest| format!("games_{}", rest.replace('.', "_")),
        );
        HUB_TOOLS.iter().find(|t| t.name == name)
    }

    /// Its name in GABS's dotted form (`games.tool_names`), which [`HubTool::find`] also takes.
    pub(crate) fn dotted_name(&self) -> String {
        self.name.replacen('_', ".", 1)
    }

    /// The names of its arguments.
    pub(crate) fn arg_names(&self) -> impl Iterator<Item = &'static str> {
        self.args.iter().map(|(name, _, _)| *name)
    }

    /// Its input schema: an object with exactly these properties.
    pub(crate) fn input_schema(&self) -> Arc<Map<String, Value>> {
        let mut properties = Map::new();
        for (name, kind, description) in self.args {
            let mut schema = json!({"type": kind, "description": description});
            if *kind == "array" {
                schema["items"] = json!({"type": "string"});
            }
            properties.insert((*name).to_owned(), schema);
        }
        let mut schema = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": properties,
        });
        if !self.required.is_empty() {
            schema["required"] = json!(self.required);
        }
        match schema {
            Value::Object(map) => Arc::new(map),
            _ => Arc::new(Map::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thirteen_gabs_tools_are_there_with_their_required_arguments() {
        let gabs = [
            ("games_list", &[][..]),
            ("games_show", &["gameId"][..]),
            ("games_start", &["gameId"][..]),
            ("games_stop", &["gameId"][..]),
            ("games_kill", &["gameId"][..]),
            ("games_status", &[][..]),
            ("games_connect", &["gameId"][..]),
            ("games_tools", &[][..]),
            ("games_tool_names", &[][..]),
            ("games_tool_detail", &["tool"][..]),
            ("games_call_tool", &["tool"][..]),
            ("games_get_attention", &[][..]),
            ("games_ack_attention", &["attentionId"][..]),
        ];
        for (name, required) in gabs {
            let tool = HubTool::find(name).unwrap_or_else(|| panic!("{name} is missing"));
            assert_eq!(tool.required, required, "{name}");
            for arg in required {
                assert!(tool.arg_names().any(|a| a == *arg), "{name}: {arg}");
            }
        }
    }

    #[test]
    fn tools_are_sorted_and_dotted_names_work() {
        let names: Vec<_> = HUB_TOOLS.iter().map(|t| t.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert_eq!(
            HubTool::find("games.tool_names").unwrap().name,
            "games_tool_names"
        );
        assert!(HubTool::find("games.nope").is_none());
        for tool in HUB_TOOLS {
            assert_eq!(HubTool::find(&tool.dotted_name()).unwrap().name, tool.name);
            // Every name fits the shortest `maxToolNameLength` accepted.
            assert!(
                tool.name.len() <= gabp_hub::ToolNaming::MIN_NAME_LEN,
                "{}",
                tool.name
            );
        }
    }

    #[test]
    fn schemas_allow_only_their_arguments() {
        let schema = HubTool::find("games_call_tool").unwrap().input_schema();
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["tool"]));
        assert_eq!(schema["properties"]["arguments"]["type"], "object");
    }
}
