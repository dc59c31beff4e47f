//! The typed model of the Game Agent Bridge Protocol (`gabp/1`, schema line 1.x).
//!
//! - [`Message`]: the envelope, one enum of [`Request`], [`Response`] and [`Event`];
//! - validating newtypes: [`MessageId`], [`MethodName`], [`ToolName`], [`ChannelName`], [`Uri`], ...;
//! - [`Error`], the crate's one error: a value its constructor refuses, or a decoder's [`DecodeError`];
//! - [`ErrorCode`] with a named constant for every registry code, and [`ErrorObject`];
//! - [`methods`]: params and result types of every core method, tied to their names by [`methods::Method`];
//! - [`Attention`], [`Capabilities`], [`ToolDescriptor`], [`BridgeFile`];
//! - [`ExtraMembers`]: the members beyond `gabp/1` that reading a peer's answer keeps, in each type's `extra`;
//! - [`decode`]: the strict and lenient decoders, with errors that carry a JSON pointer and the GABP code to
//!   answer with;
//! - [`schema`]: generation of `SCHEMA/1.0/` from these types.
//! - [`shorten`] and [`without_json_position`]: how the text of an error message is kept short.
//!
//! Layering: this crate is the bottom layer, with no async runtime dependency; `gabp-codec` frames its
//! messages, `gabp-transport` carries them, `gabp-session` serves and calls with them.
//!
//! Its public types implement `schemars::JsonSchema` from schemars **1.x** (built with 1.2), so they can be
//! fields of a tool's typed arguments; a project that derives `JsonSchema` itself needs schemars 1.x too
//! (`gabp_session::schemars` is the same crate, re-exported).
//!
//! ```
//! use gabp_types::decode::{decode, DecodeMode};
//! use gabp_types::methods::{Method, ToolsCall, ToolsCallParams};
//! use gabp_types::Message;
//!
//! let body = br#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"request",
//!                "method":"tools/call","params":{"name":"world/get_block","arguments":{"x":1,"y":2,"z":3}}}"#;
//! let Message::Request(request) = decode(body, DecodeMode::Strict)? else { unreachable!() };
//! assert_eq!(request.method, ToolsCall::NAME);
//! let params: ToolsCallParams = request.params_as()?;
//! assert_eq!(params.name, "world/get_block");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

/// `JsonSchema` for a type whose schema is written out: inline, and named after the type.
macro_rules! inline_schema {
    ($ty:ident, $schema:tt) => {
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!($schema)
            }
        }
    };
}

/// What a validated string type with a `new` shares: read from text through `new`; shown, dereferenced,
/// borrowed and compared as its text.
macro_rules! text_type {
    ($ty:ident) => {
        impl std::str::FromStr for $ty {
            type Err = $crate::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::new(s)
            }
        }
        impl TryFrom<&str> for $ty {
            type Error = $crate::Error;
            fn try_from(s: &str) -> Result<Self, Self::Error> {
                Self::new(s)
            }
        }
        impl TryFrom<String> for $ty {
            type Error = $crate::Error;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                Self::new(s)
            }
        }
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl std::ops::Deref for $ty {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }
        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
        impl std::borrow::Borrow<str> for $ty {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
        impl PartialEq<str> for $ty {
            fn eq(&self, other: &str) -> bool {
                *self.0 == *other
            }
        }
        impl PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                *self.0 == **other
            }
        }
    };
}

mod attention;
mod bridge_config;
mod capabilities;
pub mod decode;
pub mod encode;
mod error;
mod extra;
pub mod format;
mod id;
mod json_kind;
mod message;
pub mod methods;
mod name;
pub mod params;
mod pointer;
pub mod schema;
mod strict;
mod success;

pub use attention::{Attention, AttentionSample, AttentionState, Severity};
pub use bridge_config::{BridgeFile, BridgeMetadata, TransportInfo};
pub use capabilities::{BoundedU64, Capabilities, Extensions, Limits, ToolDescriptor};
pub use decode::{DecodeError, DecodeMode};
pub use error::{
    quoted_name, shorten, without_json_position, Error, ErrorCode, ErrorObject, QUOTED_NAME_CHARS,
};
pub use extra::ExtraMembers;
pub use id::MessageId;
pub use message::{Event, Message, MessageKind, Outcome, Request, Response, PROTOCOL_VERSION};
pub use name::{ChannelName, MethodName, ToolName};
pub use params::Params;
pub use strict::{NonEmptyString, Timestamp, UniqueVec, Uri};
pub use success::ResultValue;
