//! [`DemoError`]: the one error of this crate, for a world operation the rules refuse and for starting the game.

use gabp_transport::TransportError;

/// Why the demo refused something.
///
/// The [`World`](crate::World)'s operations fail with the first three variants, which the tools answer as
/// their errors; starting the game ([`InProcessGame::start`](crate::InProcessGame::start),
/// [`DemoGame::run_loop`](crate::DemoGame::run_loop)) adds the others.
///
/// ```
/// use gabp_demo::{DemoError, World};
///
/// let error = World::new().block(0, 16, 0).unwrap_err();
/// assert!(matches!(error, DemoError::BlockOutOfBounds { axis: "y", value: 16 }));
/// assert_eq!(error.to_string(), "y = 16 is outside the world; block coordinates are integers 0..=15");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// A block coordinate outside `0..=15`.
    #[error("{axis} = {value} is outside the world; block coordinates are integers 0..=15")]
    BlockOutOfBounds {
        /// `x`, `y` or `z`.
        axis: &'static str,
        /// The coordinate given.
        value: i64,
    },
    /// A position outside `0..=16` (or not a finite number).
    #[error("{axis} = {value} is outside the world; positions are numbers 0..=16")]
    PositionOutOfBounds {
        /// `x`, `y` or `z`.
        axis: &'static str,
        /// The coordinate given.
        value: f64,
    },
    /// A player other than `steve`.
    #[error("unknown player {0:?}; this world has one player, steve")]
    UnknownPlayer(String),
    /// No token could be generated for the game.
    #[error("cannot generate a token: {0}")]
    Token(#[source] TransportError),
    /// The demo mod's server could not be built.
    #[error("cannot build the demo mod: {0}")]
    Build(#[source] gabp_session::Error),
    /// The game thread could not be started.
    #[error("cannot start the game thread: {0}")]
    GameThread(#[source] std::io::Error),
    /// The game could not listen at its endpoint.
    #[error("cannot listen on {endpoint}: {source}")]
    Listen {
        /// The endpoint, as `gabp` prints it.
        endpoint: String,
        /// Why.
        source: TransportError,
    },
}
