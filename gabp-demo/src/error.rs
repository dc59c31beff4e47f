//! [`DemoError`]: the one error of this crate, for a world operation the rules refuse and for starting the game.

use gabp_transport::TransportError;

/// Why the demo refused something.
///
/// The [`World`](crate::World)'s operations fail with the first three variants, which the tools answer as
/// their errors; a picture with [`DemoError::Picture`]; starting the game
/// ([`InProcessGame::start`](crate::InProcessGame::start), [`DemoGame::run_loop`](crate::DemoGame::run_loop))
/// with the others.
///
/// ```
/// use gabp_demo::{DemoError, World};
///
/// let error = World::new().block(0, 16, 0).unwrap_err();
/// assert!(matches!(error, DemoError::BlockOutOfBounds { axis: "y", value: 16, .. }));
/// assert_eq!(error.to_string(), "y = 16 is outside the world; block coordinates are integers 0..=15");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// A block coordinate outside `0..=15`.
    #[non_exhaustive]
    #[error("{axis} = {value} is outside the world; block coordinates are integers 0..=15")]
    BlockOutOfBounds {
        /// `x`, `y` or `z`.
        axis: &'static str,
        /// The coordinate given.
        value: i64,
    },
    /// A position outside `0..=16` (or not a finite number).
    #[non_exhaustive]
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
    /// A picture could not be encoded as PNG ([`Picture::png`](crate::Picture::png)).
    #[error("the picture could not be encoded: {0}")]
    Picture(#[source] png::EncodingError),
    /// No token could be generated for the game
    /// ([`TransportError::TokenGeneration`](gabp_transport::TransportError::TokenGeneration)).
    #[error(transparent)]
    Token(TransportError),
    /// The demo mod's server could not be built.
    #[error("cannot build the demo mod: {0}")]
    Build(#[source] Box<gabp_session::Error>),
    /// The game thread could not be started.
    #[error("cannot start the game thread: {0}")]
    GameThread(#[source] std::io::Error),
    /// The game could not listen at its endpoint; the transport's error names it.
    #[error("the demo game cannot listen: {source}")]
    #[non_exhaustive]
    Listen {
        /// The endpoint, as `gabp` prints it.
        endpoint: String,
        /// Why.
        source: TransportError,
    },
}
