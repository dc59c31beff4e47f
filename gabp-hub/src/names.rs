//! Mirrored tool names: a game's tool as one name that MCP hosts accept, `<gameId>_<tool>` with every run of
//! characters outside `[A-Za-z0-9_-]` as one `_` (`voxel` and `world/get_block` give `voxel_world_get_block`),
//! at most 64 characters, the same rule as GABS so that names agents learnt keep working.

/// The longest name MCP hosts take.
pub const MAX_NAME: usize = 64;

/// The mirrored name of `tool` of `game_id`.
#[must_use]
pub fn mirrored_name(game_id: &str, tool: &str) -> String {
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
    if name.len() > MAX_NAME {
        let hash = sha1_prefix(&format!("{game_id}/{tool}"));
        name.truncate(MAX_NAME - 9);
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
            mirrored_name("voxel", "world/get_block"),
            "voxel_world_get_block"
        );
        assert_eq!(mirrored_name("my-game", "a.b//c"), "my-game_a_b_c");
        assert_eq!(mirrored_name("g", "x__y"), "g_x__y");
        assert_eq!(mirrored_name("9lives", "cat/nap"), "tool_9lives_cat_nap");
        assert_eq!(mirrored_name("", "/"), "tool");
    }

    #[test]
    fn long_names_are_cut_and_kept_apart() {
        let a = mirrored_name("game", &format!("{}/a", "x".repeat(80)));
        let b = mirrored_name("game", &format!("{}/b", "x".repeat(80)));
        assert!(a.len() <= MAX_NAME && b.len() <= MAX_NAME);
        assert_ne!(a, b);
        assert!(a.starts_with("game_xxx"));
        // Stable: the same input gives the same name.
        assert_eq!(a, mirrored_name("game", &format!("{}/a", "x".repeat(80))));
        // The suffix is the start of SHA-1("game/xxx.../a"), as GABS computes it.
        assert_eq!(
            &a[a.len() - 8..],
            &sha1_prefix(&format!("game/{}/a", "x".repeat(80)))
        );
        assert_eq!(sha1_prefix("abc"), "a9993e36");
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
