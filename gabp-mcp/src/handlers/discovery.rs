//! The hub tools that show the games' own tools: names, details, the full list.

use gabp_hub::{FoundTool, Game, Hub, HubError};
use gabp_types::ToolDescriptor;
use serde_json::{json, Value};

use crate::reply::{Args, Reply};

/// The most names one page gives.
const MAX_LIMIT: usize = 500;

/// The tools of the named game (asked for again when connected) or of every connected game.
async fn tools_of(hub: &Hub, game: Option<&str>) -> Result<Vec<(Game, ToolDescriptor)>, Reply> {
    let games: Vec<Game> = match game {
        Some(reference) => vec![hub.game(reference)?.clone()],
        None => hub.games().cloned().collect(),
    };
    let mut out = Vec::new();
    for game in games {
        let tools = if game.snapshot().status == gabp_hub::GameStatus::Connected {
            game.tools().await?
        } else {
            game.cached_tools()
        };
        out.extend(tools.iter().map(|t| (game.clone(), t.clone())));
    }
    Ok(out)
}

struct Page {
    items: Vec<(Game, ToolDescriptor)>,
    available: usize,
    total: usize,
    next_cursor: Option<String>,
}

async fn page(hub: &Hub, args: &Args<'_>, default_limit: Option<usize>) -> Result<Page, Reply> {
    let all = tools_of(hub, args.str("gameId")?).await?;
    let available = all.len();
    let query = args.str("query")?.map(str::to_lowercase);
    let prefix = args.str("prefix")?;
    let matching: Vec<_> = all
        .into_iter()
        .filter(|(game, tool)| {
            let mirrored = hub.mirrored_name(game.id(), tool.name.as_str());
            let names = [mirrored.as_str(), tool.name.as_str()];
            query.as_deref().is_none_or(|q| {
                names.iter().any(|n| n.to_lowercase().contains(q))
                    || tool.description.as_str().to_lowercase().contains(q)
            }) && prefix.is_none_or(|p| names.iter().any(|n| n.starts_with(p)))
        })
        .collect();
    let total = matching.len();
    let offset = match args.str("cursor")? {
        None | Some("") => 0,
        Some(c) => c.parse::<usize>().map_err(|_| {
            Reply::error(
                "bad_cursor",
                format!("Argument 'cursor': '{c}' is not a cursor this hub gave; leave it out to start from the first tool"),
                json!({ "path": "/cursor" }),
            )
        })?,
    };
    let limit = match args.integer("limit")? {
        Some(n) if n >= 1 => usize::try_from(n).unwrap_or(MAX_LIMIT).min(MAX_LIMIT),
        Some(_) => {
            return Err(Reply::error(
                "invalid_argument",
                "Argument 'limit' must be at least 1",
                json!({ "path": "/limit" }),
            ))
        }
        None => default_limit.unwrap_or(MAX_LIMIT),
    };
    let items: Vec<_> = matching.into_iter().skip(offset).take(limit).collect();
    let end = offset + items.len();
    Ok(Page {
        next_cursor: (end < total).then(|| end.to_string()),
        items,
        available,
        total,
    })
}

fn scope(args: &Args<'_>) -> String {
    match args.str("gameId").ok().flatten() {
        Some(g) => format!("game '{g}'"),
        None => "all games".to_owned(),
    }
}

/// A tool's one-line summary, as GABS gives it with `brief`: the first line of its description up to the end
/// of the first sentence, at most 140 bytes (cut ones end in `...`); `None` for no description.
fn summary(description: &str) -> Option<String> {
    const MAX: usize = 140;
    let d = description.trim();
    let line = d.split('\n').next().unwrap_or(d).trim();
    let sentence = match line.find(". ") {
        Some(end) => line[..=end].trim(),
        None => line,
    };
    if sentence.is_empty() {
        return None;
    }
    if sentence.len() <= MAX {
        return Some(sentence.to_owned());
    }
    let mut cut = MAX - 3;
    while !sentence.is_char_boundary(cut) {
        cut -= 1;
    }
    Some(format!("{}...", sentence[..cut].trim_end()))
}

pub(crate) async fn tool_names(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let brief = args.boolean("brief")?.unwrap_or(false);
    let page = page(hub, args, Some(50)).await?;
    if page.available == 0 {
        return Ok(Reply::ok(
            format!(
                "No game tools available for {}. Start a game with games_start (or attach with games_connect) to see its tools.",
                scope(args)
            ),
            json!({ "availableTotal": 0, "total": 0, "returned": 0, "nextCursor": "", "tools": [] }),
        ));
    }
    let mut text = format!(
        "Tool names for {} ({} shown of {} matching):\n",
        scope(args),
        page.items.len(),
        page.total
    );
    let mut tools = Vec::new();
    for (game, tool) in &page.items {
        let name = hub.mirrored_name(game.id(), tool.name.as_str());
        text.push_str(&name);
        text.push('\n');
        let mut item =
            json!({ "name": name, "gameId": game.id(), "localName": tool.name.as_str() });
        if brief {
            if let Some(summary) = summary(tool.description.as_str()) {
                item["summary"] = json!(summary);
            }
        }
        if let Some(tags) = &tool.tags {
            item["tags"] = json!(tags);
        }
        tools.push(item);
    }
    text.push_str(
        "\nUse games_tool_detail with one of these names to see its arguments and result.",
    );
    if let Some(c) = &page.next_cursor {
        text.push_str(&format!("\nNext cursor: {c}"));
    }
    let mut structured = json!({
        "availableTotal": page.available, "total": page.total, "returned": tools.len(),
        "nextCursor": page.next_cursor.unwrap_or_default(), "tools": tools,
    });
    if brief {
        structured["brief"] = json!(true);
    }
    Ok(Reply::ok(text, structured))
}

fn detail_json(hub: &Hub, game: &Game, tool: &ToolDescriptor) -> Value {
    json!({
        "gameId": game.id(),
        "name": hub.mirrored_name(game.id(), tool.name.as_str()),
        "localName": tool.name.as_str(),
        "title": tool.title.as_str(),
        "description": tool.description.as_str(),
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "tags": tool.tags,
    })
}

pub(crate) async fn tools(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let page = page(hub, args, None).await?;
    let mut text = format!(
        "Tools for {} ({} shown of {} matching):\n\n",
        scope(args),
        page.items.len(),
        page.total
    );
    let mut items = Vec::new();
    for (game, tool) in &page.items {
        let name = hub.mirrored_name(game.id(), tool.name.as_str());
        text.push_str(&format!("• **{name}** - {}\n", tool.description.as_str()));
        let params = schema_params(&tool.input_schema);
        if !params.is_empty() {
            text.push_str(&format!("  Parameters: {params}\n"));
        }
        items.push(detail_json(hub, game, tool));
    }
    text.push_str("\nUse games_tool_names for a shorter list and games_tool_detail for one tool.");
    Ok(Reply::ok(
        text,
        json!({
            "availableTotal": page.available, "total": page.total, "returned": items.len(),
            "nextCursor": page.next_cursor.unwrap_or_default(), "tools": items,
        }),
    ))
}

/// `x (integer), y (integer)`: the properties of an object schema, the required ones unmarked.
fn schema_params(schema: &serde_json::Map<String, Value>) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, p)| {
                    let kind = p.get("type").and_then(Value::as_str).unwrap_or("any");
                    let optional = if required.contains(&name.as_str()) {
                        ""
                    } else {
                        ", optional"
                    };
                    format!("{name} ({kind}{optional})")
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// Finds `name` (mirrored, or with `game` its GABP name or alias); asks a named game for its tools again
/// when the name is not known yet.
pub(crate) async fn resolve(
    hub: &Hub,
    name: &str,
    game: Option<&str>,
) -> Result<FoundTool, HubError> {
    match hub.find_tool(name, game) {
        Err(HubError::ToolNotFound { .. }) if game.is_some() => {
            let g = hub.game(game.unwrap_or_default())?;
            if g.snapshot().status == gabp_hub::GameStatus::Connected {
                g.tools().await?;
            }
            hub.find_tool(name, game)
        }
        other => other,
    }
}

pub(crate) async fn tool_detail(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let name = args.required_str("tool")?;
    let found = resolve(hub, name, args.str("gameId")?).await?;
    let (game, tool) = (&found.game, &found.tool);
    let mut text = format!(
        "Tool detail for '{}' in game '{}'\n\n{}\n\nGABP name: {}\n",
        hub.mirrored_name(game.id(), tool.name.as_str()),
        game.id(),
        tool.description.as_str(),
        tool.name.as_str()
    );
    let params = schema_params(&tool.input_schema);
    if !params.is_empty() {
        text.push_str(&format!("Parameters: {params}\n"));
    }
    Ok(Reply::ok(text, detail_json(hub, game, tool)))
}

#[cfg(test)]
mod tests {
    use super::summary;

    #[test]
    fn a_summary_is_the_first_sentence_of_the_first_line() {
        assert_eq!(
            summary("Jump. Higher when held.\nMore.").as_deref(),
            Some("Jump.")
        );
        assert_eq!(
            summary("  Read a block at x.y  \nsecond").as_deref(),
            Some("Read a block at x.y")
        );
        assert_eq!(summary("   "), None);
        let long = "é".repeat(100);
        let cut = summary(&long).unwrap();
        assert!(cut.len() <= 140 && cut.ends_with("..."), "{cut}");
    }
}
