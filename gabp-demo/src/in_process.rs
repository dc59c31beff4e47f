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
        let game = DemoGame::new();
        let server = game
            .builder()
            .token(token.clone())
            .build()
            .map_err(|e| format!("cannot build the demo mod: {e}"))?;
        let game_loop = game
            .run_loop(server.main_thread())
            .map_err(|e| format!("cannot start the game thread: {e}"))?;
        let listener = Listener::bind(&Endpoint::tcp_v4(0))
            .await
            .map_err(|e| format!("cannot listen on loopback: {e}"))?;
        Ok(InProcessGame {
            handle: server.serve(listener),
            token,
            _game_loop: game_loop,
        })
    }
}
