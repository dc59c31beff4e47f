//! `bridge.json`: atomic, private writes; reads with clear errors; the token never shown.

use std::fs;
use std::path::Path;

use gabp_transport::{BridgeConfig, BridgeMetadata, Endpoint, Token, TransportError};

fn sample(port: u16) -> BridgeConfig {
    BridgeConfig::new(Token::generate().expect("token"), Endpoint::tcp_v4(port)).with_metadata(
        BridgeMetadata::current_process(Some("550e8400-e29b-41d4-a716-446655440000".into())),
    )
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn writes_and_reads_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bridge.json");
    let config = sample(38917);
    config.write_atomic(&path).expect("write");
    let back = BridgeConfig::read(&path).expect("read");
    assert_eq!(back, config);
    assert_eq!(back.metadata.pid, Some(std::process::id()));
    // Only the file: no temporary left behind.
    assert_eq!(names(dir.path()), vec!["bridge.json".to_owned()]);
}

#[cfg(unix)]
mod unix {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn written_with_mode_0600() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bridge.json");
        sample(1).write_atomic(&path).expect("write");
        let meta = fs::metadata(&path).expect("stat");
        assert_eq!(meta.mode() & 0o7777, 0o600);
        assert!(meta.is_file());
    }

    #[test]
    fn missing_parent_directories_are_created_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config").join("gabp").join("bridge.json");
        sample(2).write_atomic(&path).expect("write");
        for d in [dir.path().join("config"), dir.path().join("config/gabp")] {
            assert_eq!(
                fs::metadata(&d).expect("stat").mode() & 0o777,
                0o700,
                "{}",
                d.display()
            );
        }
        assert_eq!(fs::metadata(&path).expect("stat").mode() & 0o7777, 0o600);
    }

    #[test]
    fn a_wider_pre_existing_file_is_replaced_not_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bridge.json");
        fs::write(&path, "old contents, world-readable").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        let old_inode = fs::metadata(&path).expect("stat").ino();

        let config = sample(3);
        config.write_atomic(&path).expect("write");
        let meta = fs::metadata(&path).expect("stat");
        assert_ne!(
            meta.ino(),
            old_inode,
            "the old file (and its mode) must not be reused"
        );
        assert_eq!(meta.mode() & 0o7777, 0o600);
        assert_eq!(BridgeConfig::read(&path).expect("read"), config);
        assert_eq!(names(dir.path()), vec!["bridge.json".to_owned()]);
    }

    #[test]
    fn a_symlink_at_the_path_is_replaced_not_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("elsewhere.json");
        fs::write(&target, "untouched").expect("write");
        let path = dir.path().join("bridge.json");
        std::os::unix::fs::symlink(&target, &path).expect("symlink");
        sample(4).write_atomic(&path).expect("write");
        assert_eq!(fs::read_to_string(&target).expect("read"), "untouched");
        assert!(fs::symlink_metadata(&path).expect("stat").is_file());
        assert_eq!(fs::metadata(&path).expect("stat").mode() & 0o7777, 0o600);
    }

    /// Reads `path` on a thread; what it returned, or `None` if it did not return within 10 s.
    fn read_within_10s(path: &Path) -> Option<Result<BridgeConfig, TransportError>> {
        let (tx, rx) = std::sync::mpsc::channel();
        let path = path.to_owned();
        std::thread::spawn(move || {
            let _ = tx.send(BridgeConfig::read(&path));
        });
        rx.recv_timeout(std::time::Duration::from_secs(10)).ok()
    }

    #[test]
    fn a_fifo_is_refused_at_once_never_waited_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bridge.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("run mkfifo");
        assert!(made.success());
        let started = std::time::Instant::now();
        let err = read_within_10s(&path)
            .expect("reading a FIFO must not block")
            .expect_err("a FIFO is not a bridge.json");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        assert!(
            matches!(
                err,
                TransportError::BridgeJsonNotRegular { kind: "a FIFO", .. }
            ),
            "{err:?}"
        );
        let shown = err.to_string();
        assert!(
            shown.contains(&path.display().to_string()) && shown.contains("FIFO"),
            "{shown}"
        );
    }

    #[test]
    fn a_directory_or_device_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = read_within_10s(dir.path())
            .expect("prompt")
            .expect_err("dir");
        assert!(
            matches!(
                err,
                TransportError::BridgeJsonNotRegular {
                    kind: "a directory",
                    ..
                }
            ),
            "{err:?}"
        );
        let err = read_within_10s(Path::new("/dev/zero"))
            .expect("prompt")
            .expect_err("device");
        assert!(
            matches!(
                err,
                TransportError::BridgeJsonNotRegular {
                    kind: "a character device",
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn a_link_to_a_regular_file_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real.json");
        let config = sample(6);
        config.write_atomic(&real).expect("write");
        let link = dir.path().join("bridge.json");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        assert_eq!(BridgeConfig::read(&link).expect("read"), config);
    }

    #[test]
    fn read_checked_reports_group_or_other_read_bits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bridge.json");
        let config = sample(7);
        config.write_atomic(&path).expect("write");
        let (back, exposure) = BridgeConfig::read_checked(&path).expect("read");
        assert_eq!(back, config);
        assert_eq!(exposure, None, "0600 is private");
        for (mode, exposed) in [
            (0o644, true),
            (0o640, true),
            (0o604, true),
            (0o400, false),
            (0o620, false),
        ] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
            let (back, exposure) = BridgeConfig::read_checked(&path).expect("read");
            assert_eq!(back, config);
            assert_eq!(exposure.is_some(), exposed, "{mode:o}");
            if let Some(exposure) = exposure {
                assert_eq!(exposure.mode, mode);
                assert_eq!(exposure.path, path);
                let warning = exposure.to_string();
                let refusal = TransportError::from(exposure).to_string();
                for shown in [warning, refusal] {
                    assert!(
                        shown.contains(&path.display().to_string())
                            && shown.contains(&format!("{mode:04o}")),
                        "{shown}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        // The target is a directory: the rename fails.
        let path = dir.path().join("bridge.json");
        fs::create_dir(&path).expect("mkdir");
        fs::write(path.join("keep"), "x").expect("write");
        let err = sample(5)
            .write_atomic(&path)
            .expect_err("rename over a directory");
        assert!(
            matches!(err, TransportError::BridgeJsonWrite { .. }),
            "{err:?}"
        );
        assert_eq!(names(dir.path()), vec!["bridge.json".to_owned()]);
        assert_eq!(fs::read_to_string(path.join("keep")).expect("read"), "x");
    }
}

#[test]
fn readers_never_see_a_partial_file() {
    // Atomicity: while one thread rewrites the file over and over, another reads it over and over;
    // every read parses completely.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bridge.json");
    sample(10).write_atomic(&path).expect("first write");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (path, done) = (path.clone(), std::sync::Arc::clone(&done));
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while !done.load(std::sync::atomic::Ordering::SeqCst) || reads == 0 {
                let c = BridgeConfig::read(&path).expect("every read sees a whole file");
                assert!(matches!(c.endpoint, Endpoint::Tcp(_)));
                reads += 1;
            }
            reads
        })
    };
    for i in 0..50u16 {
        sample(1000 + i).write_atomic(&path).expect("rewrite");
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(reader.join().expect("reader") > 0);
    assert_eq!(names(dir.path()), vec!["bridge.json".to_owned()]);
}

#[test]
fn read_reports_a_missing_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = BridgeConfig::read(dir.path().join("nope.json")).expect_err("missing");
    assert!(err.is_not_found(), "{err:?}");
    assert!(err.to_string().contains("nope.json"), "{err}");
}

#[test]
fn read_reports_bad_json_with_its_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bridge.json");
    fs::write(&path, "{\n  \"token\": \"abc\",\n  oops\n}").expect("write");
    let err = BridgeConfig::read(&path).expect_err("bad json");
    match &err {
        TransportError::BridgeJsonSyntax { line, .. } => assert_eq!(*line, 3),
        other => panic!("{other:?}"),
    }
    let shown = err.to_string();
    assert!(
        shown.contains("line 3") && shown.contains("bridge.json"),
        "{shown}"
    );
}

#[test]
fn read_reports_the_field_at_fault() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bridge.json");
    fs::write(
        &path,
        r#"{"token":"t","transport":{"type":"tcp","address":"nope"}}"#,
    )
    .expect("write");
    let err = BridgeConfig::read(&path).expect_err("bad address");
    assert!(
        matches!(
            &err,
            TransportError::BridgeJsonField {
                field: "transport.address",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("transport.address"), "{err}");
}

#[test]
fn read_refuses_a_huge_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bridge.json");
    fs::write(&path, vec![b' '; 100 * 1024]).expect("write");
    let err = BridgeConfig::read(&path).expect_err("too large");
    assert!(
        matches!(err, TransportError::BridgeJsonTooLarge { .. }),
        "{err:?}"
    );
}

#[test]
fn the_token_never_appears_in_debug_display_or_errors() {
    let token = Token::generate().expect("token");
    let secret = token.expose_secret().to_owned();
    let config = BridgeConfig::new(token.clone(), Endpoint::tcp_v4(1));
    let shown = format!("{token} {token:?} {config:?} {:?}", config.clone().token);
    assert!(!shown.contains(&secret), "{shown}");

    // Every read error of a file holding the secret.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bridge.json");
    for text in [
        format!(r#"{{"token":"{secret}","transport":{{"type":"tcp","address":"x{secret}"}}}}"#),
        format!(r#"{{"token":"{secret}","transport":{{"type":"{secret}"}}}}"#),
        format!(
            r#"{{"token":"{secret}","transport":{{"type":"stdio"}},"metadata":{{"pid":"{secret}"}}}}"#
        ),
        format!(r#"{{"token":"{secret}" "#),
        format!(r#"{{"token":["{secret}"],"transport":{{"type":"stdio"}}}}"#),
    ] {
        fs::write(&path, &text).expect("write");
        let err = BridgeConfig::read(&path).expect_err(&text);
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(&secret), "{shown}");
    }
}

#[test]
fn default_path_follows_the_platform_rules() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| std::ffi::OsString::from(v))
        }
    };
    if cfg!(all(unix, not(target_os = "macos"))) {
        let p =
            BridgeConfig::default_path_from(env(&[("XDG_CONFIG_HOME", "/xdg"), ("HOME", "/h")]))
                .expect("xdg");
        assert_eq!(p, Path::new("/xdg/gabp/bridge.json"));
        let p = BridgeConfig::default_path_from(env(&[
            ("XDG_CONFIG_HOME", "relative"),
            ("HOME", "/h"),
        ]))
        .expect("relative xdg is ignored");
        assert_eq!(p, Path::new("/h/.config/gabp/bridge.json"));
        let p = BridgeConfig::default_path_from(env(&[("XDG_CONFIG_HOME", ""), ("HOME", "/h")]))
            .expect("empty xdg is ignored");
        assert_eq!(p, Path::new("/h/.config/gabp/bridge.json"));
        let err = BridgeConfig::default_path_from(env(&[])).expect_err("nothing set");
        assert!(err.to_string().contains("HOME"), "{err}");
    }
    if cfg!(target_os = "macos") {
        let p = BridgeConfig::default_path_from(env(&[("HOME", "/Users/ada")])).expect("home");
        assert_eq!(
            p,
            Path::new("/Users/ada/Library/Application Support/gabp/bridge.json")
        );
    }
    if cfg!(windows) {
        let p =
            BridgeConfig::default_path_from(env(&[("APPDATA", r"C:\Users\ada\AppData\Roaming")]))
                .expect("appdata");
        assert!(p.ends_with(r"gabp\bridge.json"));
    }
}
