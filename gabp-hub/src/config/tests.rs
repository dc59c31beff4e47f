use super::*;
use serde_json::json;

fn parse(value: Value) -> Result<HubConfig, HubError> {
    HubConfig::from_json_slice(value.to_string().as_bytes())
}

fn field_error(value: Value) -> (String, String) {
    match parse(value) {
        Err(HubError::ConfigField {
            pointer, expected, ..
        }) => (pointer, expected),
        other => panic!("expected a field error, got {other:?}"),
    }
}

#[test]
fn a_gabs_config_is_read() {
    let config = parse(json!({
        "version": "1.0",
        "apiKey": "k",
        "toolNormalization": {"enableOpenAINormalization": true, "maxToolNameLength": 64},
        "portRanges": {"customRanges": [{"min": 8000, "max": 8999}]},
        "timeouts": {"startup": {"processStartSeconds": 5, "gabpConnectSeconds": 0},
                     "session": {"ownerLeaseSeconds": 30}},
        "games": {
            "voxel": {"id": "voxel", "name": "Voxel", "launchMode": "DirectPath",
                      "target": "/bin/game", "args": ["mod", "--x"], "workingDir": "/tmp",
                      "stopProcessName": "game", "gabpMode": "local", "env": {"A_B": "1"}},
            "other": {"launchMode": "CustomCommand", "target": "other"}
        }
    }))
    .unwrap();
    assert_eq!(config.api_key.as_deref(), Some("k"));
    assert_eq!(config.startup.process_start, Duration::from_secs(5));
    // 0 means the default, as in GABS.
    assert_eq!(config.startup.gabp_connect, Duration::from_secs(60));
    let voxel = &config.games["voxel"];
    assert_eq!(voxel.launch_mode, LaunchMode::DirectPath);
    assert_eq!(voxel.args, ["mod", "--x"]);
    assert_eq!(voxel.working_dir.as_deref(), Some(Path::new("/tmp")));
    assert_eq!(voxel.env["A_B"], "1");
    assert_eq!(voxel.unsupported, None);
    let other = &config.games["other"];
    assert_eq!(other.name, "other");
    assert_eq!(other.launch_mode, LaunchMode::CustomCommand);
}

#[test]
fn a_missing_file_is_an_empty_config_and_a_broken_one_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = HubConfig::load(dir.path()).unwrap();
    assert!(config.games.is_empty());
    std::fs::write(dir.path().join(CONFIG_FILE), "{\"games\": [").unwrap();
    let err = HubConfig::load(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("config.json") && err.contains("line 1"),
        "{err}"
    );
    std::fs::write(
        dir.path().join(CONFIG_FILE),
        json!({"games": {"g": {"target": 3}}}).to_string(),
    )
    .unwrap();
    let err = HubConfig::load(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("config.json: /games/g/target: expected a string"),
        "{err}"
    );
}

#[test]
fn each_bad_field_is_named() {
    let cases = [
        (json!([]), "/", "object"),
        (json!({"games": 1}), "/games", "object"),
        (json!({"games": {"g": []}}), "/games/g", "object"),
        (json!({"games": {"g": {}}}), "/games/g/target", "executable"),
        (
            json!({"games": {"g": {"target": " "}}}),
            "/games/g/target",
            "non-empty",
        ),
        (
            json!({"games": {"g": {"id": "h", "target": "x"}}}),
            "/games/g/id",
            "must match the key",
        ),
        (
            json!({"games": {"g": {"target": "x", "launchMode": "Magic"}}}),
            "/games/g/launchMode",
            "DirectPath",
        ),
        (
            json!({"games": {"g": {"target": "x", "args": "a b"}}}),
            "/games/g/args",
            "array",
        ),
        (
            json!({"games": {"g": {"target": "x", "args": ["a", 1]}}}),
            "/games/g/args/1",
            "string",
        ),
        (
            json!({"games": {"g": {"target": "x", "env": {"GABP_TOKEN": "t"}}}}),
            "/games/g/env/GABP_TOKEN",
            "GABP_",
        ),
        (
            json!({"games": {"g": {"target": "x", "env": {"1A": "t"}}}}),
            "/games/g/env/1A",
            "environment variable",
        ),
        (
            json!({"games": {"g": {"target": "x", "env": {"A": 1}}}}),
            "/games/g/env/A",
            "string",
        ),
        (
            json!({"games": {"a/b": {"target": "x"}}}),
            "/games/a~1b",
            "game id",
        ),
        (
            json!({"games": {"..": {"target": "x"}}}),
            "/games/..",
            "game id",
        ),
        (
            json!({"timeouts": {"startup": {"processStartSeconds": -1}}}),
            "/timeouts/startup/processStartSeconds",
            "seconds",
        ),
        (json!({"timeouts": 5}), "/timeouts", "object"),
    ];
    for (value, pointer, expected) in cases {
        let (got_pointer, got_expected) = field_error(value.clone());
        assert_eq!(got_pointer, pointer, "{value}");
        assert!(
            got_expected.contains(expected),
            "{value}: {got_expected:?} lacks {expected:?}"
        );
    }
}

#[test]
fn store_launchers_are_read_and_profiles_flagged() {
    let config = parse(json!({"games": {
        "steam": {"launchMode": "SteamAppId", "target": "123", "stopProcessName": "game"},
        "prof": {"target": "x", "defaultProfile": "dev", "profiles": {"dev": {}}}
    }}))
    .unwrap();
    assert!(config.games["steam"].launch_mode.is_store());
    let why = config.games["prof"].unsupported.as_deref().unwrap();
    assert!(why.contains("/games/prof/profiles") && why.contains("not supported"));
}

fn mirror_of(value: Value) -> MirrorTools {
    let config = parse(
        json!({"version": "1.0", "games": {"g": {"target": "/bin/g", "mirrorTools": value}}}),
    )
    .unwrap();
    config.games["g"].mirror_tools.clone()
}

#[test]
fn mirror_tools_lists_the_tools_its_globs_match_and_all_when_absent() {
    let all = parse(json!({"version": "1.0", "games": {"g": {"target": "/bin/g"}}})).unwrap();
    assert!(all.games["g"].mirror_tools.lists("demo/echo"));
    assert!(mirror_of(Value::Null).lists("demo/echo"));

    let world = mirror_of(json!(["world/*", "demo/echo"]));
    assert_eq!(world.patterns(), ["world/*", "demo/echo"]);
    assert!(world.lists("world/get_block"));
    assert!(world.lists("demo/echo"));
    assert!(!world.lists("demo/sleep"));
    // `*` stays within one segment of a name.
    assert!(!world.lists("world/blocks/get"));

    let none = mirror_of(json!([]));
    assert!(!none.lists("world/get_block"));
}

#[test]
fn a_bad_mirror_tools_entry_names_its_pointer() {
    let game = |mirror: Value| json!({"version": "1.0", "games": {"g": {"target": "/bin/g", "mirrorTools": mirror}}});
    let (pointer, expected) = field_error(game(json!(["world/[a"])));
    assert_eq!(pointer, "/games/g/mirrorTools/0");
    assert!(expected.contains("glob pattern"), "{expected}");
    let (pointer, _) = field_error(game(json!(["world/*", 3])));
    assert_eq!(pointer, "/games/g/mirrorTools/1");
    let (pointer, _) = field_error(game(json!("world/*")));
    assert_eq!(pointer, "/games/g/mirrorTools");
    let (pointer, expected) =
        field_error(game(json!(
            ["a".repeat(MirrorTools::MAX_PATTERN_BYTES + 1)]
        )));
    assert_eq!(pointer, "/games/g/mirrorTools/0");
    assert!(expected.contains("256 bytes"), "{expected}");
}

#[test]
fn a_store_game_needs_its_process_name_and_an_app_id() {
    for mode in ["SteamAppId", "SteamManaged", "EpicAppId"] {
        let error =
            parse(json!({"games": {"s": {"launchMode": mode, "target": "123"}}})).unwrap_err();
        let HubError::ConfigField {
            pointer, expected, ..
        } = &error
        else {
            panic!("{error:?}")
        };
        assert_eq!(pointer, "/games/s/stopProcessName");
        assert!(expected.contains(mode), "{expected}");
        let error = parse(json!({"games": {"s": {"launchMode": mode, "target": "1 & calc", "stopProcessName": "g"}}}))
            .unwrap_err();
        assert!(error.to_string().contains("/games/s/target"), "{error}");
    }
}

#[test]
fn tool_call_seconds_is_a_positive_number_up_to_an_hour() {
    let read = |v: Value| parse(json!({"timeouts": {"toolCallSeconds": v}}));
    assert_eq!(
        read(json!(null)).unwrap().tool_call_timeout(),
        DEFAULT_TOOL_CALL_TIMEOUT
    );
    assert_eq!(
        read(json!(0.5)).unwrap().tool_call_timeout(),
        Duration::from_millis(500)
    );
    assert_eq!(
        read(json!(3600)).unwrap().tool_call_timeout(),
        Duration::from_secs(3600)
    );
    for bad in [json!(0), json!(-1), json!(3600.5), json!("5"), json!(true)] {
        let (pointer, expected) =
            field_error(json!({"timeouts": {"toolCallSeconds": bad.clone()}}));
        assert_eq!(pointer, "/timeouts/toolCallSeconds", "{bad}");
        assert!(
            expected.contains("greater than 0 and at most 3600"),
            "{expected}"
        );
    }
}
