//! The README lists every conformance check, with its description.

#[test]
fn the_readme_lists_every_check() {
    let readme = include_str!("../README.md");
    for check in gabp_testkit::conformance::checks() {
        let row = format!(
            "| `{}` | {} | {} |",
            check.name, check.level, check.description
        );
        assert!(readme.contains(&row), "README.md lacks the row:\n{row}");
    }
}
