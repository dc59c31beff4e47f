//! [`BuildError`]: why a mod server could not be built.

/// Why a [`ModServer`](super::ModServer) could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No token: call [`ModServerBuilder::token`](super::ModServerBuilder::token) or [`ModServerBuilder::settings`](super::ModServerBuilder::settings).
    #[error("no token: set one with ModServerBuilder::token or ModServerBuilder::settings")]
    MissingToken,
    /// The token is shorter than the 32 characters `session/hello` requires, so no bridge could present it.
    #[error("the token is {len} characters long; session/hello requires at least 32")]
    TokenTooShort {
        /// The token's length (never the token).
        len: usize,
    },
    /// A tool, method, channel or resource name is invalid.
    #[error("invalid {kind} name: {reason}")]
    InvalidName {
        /// `tool`, `method`, `channel` or `resource`.
        kind: &'static str,
        /// Why.
        reason: String,
    },
    /// The same tool, method, channel or resource was registered twice.
    #[error("{kind} {name} is registered twice")]
    Duplicate {
        /// `tool`, `method`, `channel` or `resource`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// A custom method uses the name of a method the mod serves itself.
    #[error("{0} is served by the mod itself and cannot be registered as a custom method")]
    ReservedMethod(String),
    /// A tool's schema is not a valid JSON Schema object, or a descriptor field is invalid.
    #[error("tool {tool}: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A limit is out of range.
    #[error("limit {limit} {reason}")]
    InvalidLimit {
        /// The field of [`ServerLimits`](super::ServerLimits).
        limit: &'static str,
        /// Why.
        reason: String,
    },
    /// App info, agent id or a capability extension is invalid.
    #[error("invalid welcome: {0}")]
    InvalidWelcome(String),
}
