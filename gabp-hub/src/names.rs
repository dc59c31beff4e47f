//! Mirrored tool names: a game's tool as one name that MCP hosts accept, `<gameId>_<tool>` with every run of
//! characters outside `[A-Za-z0-9_-]` as one `_` (`voxel` and `world/get_block` give `voxel_world_get_block`),
//! at most 64 characters (or `toolNormalization.maxToolNameLength`), the same rule as GABS so that names agents
//! learnt keep working.

/// The longest name every MCP host takes, and the default limit.
pub const MAX_NAME: usize = 64;

/// The mirrored name of `tool` of `game_id`, at most `max` bytes (a longer one is cut and ends in a hash of
/// the whole; `max` below 9 counts as 9).
#[must_use]
pub fn mirrored_name(game_id: &str, tool: &str, max: usize) -> String {
    let max = max.max(9);
    let raw = format!("{game_id}_{tool}");
    let mut name = String::with_capacity(raw.len());
    let mut in_run = false;
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            name.push(c);
            in_run = false;
        } else if !in_run {
            name.push('_');
            in_run = true;
        }
    }
    let mut name = name.trim_matches('_').to_owned();
    if name.is_empty() {
        name = "tool".to_owned();
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name = format!("tool_{name}");
    }
    if name.len() > max {
        let hash = sha1_prefix(&format!("{game_id}/{tool}"));
        name.truncate(max - 9);
        let kept = name.trim_end_matches(['_', '-']).len();
        name.truncate(kept);
        name.push('_');
        name.push_str(&hash);
    }
    name
}

/// Eight hex digits that tell long names apart: the start of the SHA-1 of `s`, as GABS has it.
fn sha1_prefix(s: &str) -> String {
    use sha1::Digest;
    let digest = sha1::Sha1::digest(s.as_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// The names a request may use for `tool` of `game_id`, besides its mirrored name: the GABP name, its
/// dotted form, and both qualified with the game id (`voxel/world/get_block`, `voxel.world.get_block`).
#[must_use]
pub fn aliases(game_id: &str, tool: &str) -> [String; 4] {
    let dotted = tool.replace('/', ".");
    [
        tool.to_owned(),
        format!("{game_id}/{tool}"),
        format!("{game_id}.{dotted}"),
        dotted,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_gabs_rule() {
        assert_eq!(
            mirrored_name("voxel", "world/get_block", MAX_NAME),
            "voxel_world_get_block"
        );
        assert_eq!(
            mirrored_name("my-game", "a.b//c", MAX_NAME),
            "my-game_a_b_c"
        );
        assert_eq!(mirrored_name("g", "x__y", MAX_NAME), "g_x__y");
        assert_eq!(
            mirrored_name("9lives", "cat/nap", MAX_NAME),
            "tool_9lives_cat_nap"
        );
        assert_eq!(mirrored_name("", "/", MAX_NAME), "tool");
    }

    #[test]
    fn long_names_are_cut_and_kept_apart() {
        let a = mirrored_name("game", &format!("{}/a", "x".repeat(80)), MAX_NAME);
        let b = mirrored_name("game", &format!("{}/b", "x".repeat(80)), MAX_NAME);
        assert!(a.len() <= MAX_NAME && b.len() <= MAX_NAME);
        assert_ne!(a, b);
        assert!(a.starts_with("game_xxx"));
        // Stable: the same input gives the same name.
        assert_eq!(
            a,
            mirrored_name("game", &format!("{}/a", "x".repeat(80)), MAX_NAME)
        );
        // The suffix is the start of SHA-1("game/xxx.../a"), as GABS computes it.
        assert_eq!(
            &a[a.len() - 8..],
            &sha1_prefix(&format!("game/{}/a", "x".repeat(80)))
        );
        assert_eq!(sha1_prefix("abc"), "a9993e36");
    }

    #[test]
    fn a_shorter_limit_cuts_sooner_with_the_same_rule() {
        let tool = "inventory/items/get_all_of_kind";
        assert_eq!(
            mirrored_name("voxel", tool, MAX_NAME),
            "voxel_inventory_items_get_all_of_kind"
        );
        let short = mirrored_name("voxel", tool, 32);
        assert_eq!(short.len(), 32);
        assert!(short.starts_with("voxel_inventory_items_"), "{short}");
        assert!(
            short.ends_with(&sha1_prefix(&format!("voxel/{tool}"))),
            "{short}"
        );
    }

    #[test]
    fn aliases_cover_the_qualified_and_dotted_forms() {
        let names = aliases("voxel", "world/get_block");
        assert!(names.contains(&"world/get_block".to_owned()));
        assert!(names.contains(&"voxel/world/get_block".to_owned()));
        assert!(names.contains(&"voxel.world.get_block".to_owned()));
        assert!(names.contains(&"world.get_block".to_owned()));
    }
}
