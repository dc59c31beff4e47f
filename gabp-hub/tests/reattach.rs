//! A game that restarts by itself (same port, same token) is attached again, with its event subscriptions
//! restored; the hub reports the loss as a gap.

use std::time::Duration;

use gabp_demo::InProcessGame;
use gabp_hub::{GameStatus, Hub, HubConfig};
use gabp_transport::Endpoint;
use serde_json::json;

async fn until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_that_restarts_by_itself_is_attached_again_with_its_subscriptions() {
    let game = InProcessGame::start().await.unwrap();
    let endpoint = game.handle.endpoint().clone();
    let Endpoint::Tcp(addr) = &endpoint else {
        panic!("{endpoint}")
    };
    let token = game.token.clone();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("voxel")).unwrap();
    std::fs::write(
        dir.path().join("voxel/bridge.json"),
        json!({"port": addr.port(), "token": token.expose_secret(), "gameId": "voxel"}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        json!({"games": {"voxel": {"target": "elsewhere"}}}).to_string(),
    )
    .unwrap();
    let hub = Hub::new(HubConfig::load(dir.path()).unwrap());
    let voxel = hub.game("voxel").unwrap().clone();
    voxel.connect(Duration::from_secs(10)).await.unwrap();
    voxel
        .subscribe(&["world/block_change".to_owned()])
        .await
        .unwrap();
    let place = |x: i64| json!({"x": x, "y": 7, "z": 0, "blockType": "sand"});
    voxel
        .call_tool("world/place_block", place(0))
        .await
        .unwrap();
    let first = voxel.events(None, Duration::from_secs(5)).await.unwrap();
    assert_eq!(first.events.len(), 1);

    // The game goes away and comes back at the same place.
    game.handle.shutdown().await;
    assert!(
        until(Duration::from_secs(5), || voxel.status()
            != GameStatus::Connected)
        .await,
        "the loss was not noticed"
    );
    let _again = InProcessGame::start_at(&endpoint, token).await.unwrap();
    assert!(
        until(Duration::from_secs(20), || voxel.status()
            == GameStatus::Connected)
        .await,
        "not attached again: {:?}",
        voxel.snapshot()
    );

    voxel
        .call_tool("world/place_block", place(1))
        .await
        .unwrap();
    let mut cursor = first.cursor.to_string();
    let mut seen = Vec::new();
    let mut gaps = Vec::new();
    for _ in 0..10 {
        let batch = voxel
            .events(Some(&cursor), Duration::from_secs(2))
            .await
            .unwrap();
        seen.extend(batch.events.iter().map(|e| e.payload["x"].clone()));
        gaps.extend(batch.gaps.iter().map(|g| g.reason));
        cursor = batch.cursor.to_string();
        if !seen.is_empty() {
            break;
        }
    }
    assert_eq!(seen, [json!(1)], "the subscription was not restored");
    assert!(gaps.contains(&"reconnected"), "{gaps:?}");
}
