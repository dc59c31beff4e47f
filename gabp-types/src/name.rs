//! Validated names: methods, tools and event channels.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize};

use crate::{format, Error};

macro_rules! registry_name {
    ($(#[$doc:meta])* $ty:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
        #[serde(try_from = "String")]
        pub struct $ty(Cow<'static, str>);

        impl $ty {
            /// Validates `name` against the registry pattern
            #[doc = concat!("(`", "^[a-z][a-z0-9_-]*(/[a-z][a-z0-9_-]*)+$", "`).")]
            pub fn new(name: impl Into<String>) -> Result<Self, Error> {
                let name = name.into();
                if format::is_registry_name(&name) {
                    Ok(Self(Cow::Owned(name)))
                } else {
                    Err(Error::InvalidName { kind: $kind, name, pattern: format::NAME_PATTERN })
                }
            }

            /// Validates a name known at compile time, which is then kept without a copy.
            pub fn from_static(name: &'static str) -> Result<Self, Error> {
                if format::is_registry_name(name) {
                    Ok(Self(Cow::Borrowed(name)))
                } else {
                    Err(Error::InvalidName { kind: $kind, name: name.to_owned(), pattern: format::NAME_PATTERN })
                }
            }

            /// The name as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The name as an owned string.
            pub fn into_string(self) -> String {
                self.0.into_owned()
            }
        }

        text_type!($ty);
        inline_schema!($ty, { "type": "string", "pattern": format::NAME_PATTERN });
    };
}

registry_name!(
    /// A method name such as `tools/call` or `minecraft/world/get_blocks`.
    ///
    /// ```
    /// use gabp_types::MethodName;
    /// assert!(MethodName::new("minecraft/world/get_blocks").is_ok());
    /// assert!(MethodName::new("invalid_method_name").is_err());
    /// ```
    MethodName,
    "method"
);

impl MethodName {
    /// `tools/call`, without a search of the methods.
    pub(crate) fn tools_call() -> MethodName {
        MethodName(Cow::Borrowed(
            <crate::methods::ToolsCall as crate::methods::Method>::NAME,
        ))
    }

    /// `name` when it is a method this crate defines, kept without a copy.
    pub(crate) fn known(name: &str) -> Option<MethodName> {
        let methods = crate::methods::CORE_METHODS.iter();
        let mut known = methods.chain(crate::methods::EXTENSION_METHODS);
        known
            .find(|m| **m == name)
            .map(|m| MethodName(Cow::Borrowed(m)))
    }
}

registry_name!(
    /// A tool name such as `inventory/get` (dotted names like `inventory.get` are not canonical).
    ///
    /// ```
    /// use gabp_types::ToolName;
    /// assert!(ToolName::new("world/place_block").is_ok());
    /// assert!(ToolName::new("inventory.get").is_err());
    /// ```
    ToolName,
    "tool"
);

/// An event channel name.
///
/// Channels we produce match the registry pattern ([`ChannelName::new`]); channels we read from other
/// implementations only need to be non-empty ([`ChannelName::new_lenient`]; some mods use dots). Whether a
/// name is canonical is always available through [`ChannelName::is_canonical`].
///
/// ```
/// use gabp_types::ChannelName;
/// assert!(ChannelName::new("player/move").is_ok());
/// let dotted = ChannelName::new_lenient("player.move").unwrap();
/// assert!(!dotted.is_canonical());
/// assert!(ChannelName::new("player.move").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize)]
#[serde(transparent)]
pub struct ChannelName(String);

impl ChannelName {
    /// Validates a canonical channel name against the registry pattern.
    pub fn new(name: impl Into<String>) -> Result<Self, Error> {
        let name = name.into();
        if format::is_registry_name(&name) {
            Ok(Self(name))
        } else {
            Err(Error::InvalidName {
                kind: "channel",
                name,
                pattern: format::NAME_PATTERN,
            })
        }
    }

    /// Accepts any non-empty channel name, as read from a peer.
    pub fn new_lenient(name: impl Into<String>) -> Result<Self, Error> {
        let name = name.into();
        if name.is_empty() {
            Err(Error::InvalidName {
                kind: "channel",
                name,
                pattern: "a non-empty string",
            })
        } else {
            Ok(Self(name))
        }
    }

    /// Whether the name matches the registry pattern.
    pub fn is_canonical(&self) -> bool {
        format::is_registry_name(&self.0)
    }

    /// Whether this is one of the attention channels (`attention/...`), whose payload is an attention object.
    pub fn is_attention(&self) -> bool {
        self.0.starts_with("attention/")
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

text_type!(ChannelName);
inline_schema!(ChannelName, { "type": "string", "pattern": format::NAME_PATTERN });

impl<'de> Deserialize<'de> for ChannelName {
    /// Deserialization is lenient (non-empty); the strict decoder checks canonical form separately.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Self::new_lenient(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_validate() {
        assert!(MethodName::new("session/hello").is_ok());
        let err = MethodName::new("Tools/List").unwrap_err();
        assert!(matches!(err, Error::InvalidName { kind: "method", .. }));
        assert!(err.to_string().contains("Tools/List"));
        assert!(ToolName::new("inventory").is_err());
        assert!(ChannelName::new_lenient("").is_err());
        assert!(ChannelName::new("attention/opened").unwrap().is_attention());
    }
}
