//! The demo game served on an ephemeral loopback TCP port inside this process (`gabp demo`, `gabp bench --self`).

use gabp_session::server::ServeHandle;
use gabp_transport::{Endpoint, Listener, Token};

use crate::{DemoGame, GameLoop};

/// The demo game (attention included) with its game thread, served on loopback TCP in this process.
pub struct InProcessGame {
    /// The running server; its endpoint has the real port.
    pub handle: ServeHandle,
    /// The token bridges must present.
    pub token: Token,
    _game_loop: GameLoop,
}

impl InProcessGame {
    /// Builds the demo game with a fresh token, starts its game thread and serves it on `127.0.0.1:0`.
    pub async fn start() -> Result<InProcessGame, String> {
        let token = Token::generate().map_err(|e| format!("cannot generate a token: {e}"))?;
        InProcessGame::start_at(&Endpoint::tcp_v4(0), token).await
    }

    /// Builds the demo game with `token`, starts its game thread and serves it at `endpoint` (a game that
    /// restarts comes back at the same place with the same token).
    pub async fn start_at(endpoint: &Endpoint, token: Token) -> Result<InProcessGame, String> {
        let game = DemoGame::new();
        let server = game
            .builder()
            .token(token.clone())
            .build()
            .map_err(|e| format!("cannot build the demo mod: {e}"))?;
        let game_loop = game
            .run_loop(server.main_thread())
            .map_err(|e| format!("cannot start the game thread: {e}"))?;
        let listener = Listener::bind(endpoint)
            .await
            .map_err(|e| format!("cannot listen on {endpoint}: {e}"))?;
        Ok(InProcessGame {
            handle: server.serve(listener),
            token,
            _game_loop: game_loop,
        })
    }
}
