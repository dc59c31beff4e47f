//! The demo game served on an ephemeral loopback TCP port inside this process (`gabp demo`, `gabp bench --self`).

use gabp_session::server::ServeHandle;
use gabp_transport::{Endpoint, Listener, Token};

use crate::{DemoError, DemoGame, GameLoop};

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
    ///
    /// # Errors
    ///
    /// [`DemoError::Token`], or those of [`InProcessGame::start_at`].
    pub async fn start() -> Result<InProcessGame, DemoError> {
        let token = Token::generate().map_err(DemoError::Token)?;
        InProcessGame::start_at(&Endpoint::tcp_v4(0), token).await
    }

    /// Builds the demo game with `token`, starts its game thread and serves it at `endpoint` (a game that
    /// restarts comes back at the same place with the same token).
    ///
    /// # Errors
    ///
    /// [`DemoError::Build`], [`DemoError::GameThread`] or [`DemoError::Listen`].
    pub async fn start_at(endpoint: &Endpoint, token: Token) -> Result<InProcessGame, DemoError> {
        let game = DemoGame::new();
        let server = game
            .builder()
            .token(token.clone())
            .build()
            .map_err(|e| DemoError::Build(Box::new(e)))?;
        let game_loop = game.run_loop(server.main_thread())?;
        let listener = Listener::bind(endpoint)
            .await
            .map_err(|source| DemoError::Listen {
                endpoint: endpoint.to_string(),
                source,
            })?;
        Ok(InProcessGame {
            handle: server.serve(listener),
            token,
            _game_loop: game_loop,
        })
    }
}
