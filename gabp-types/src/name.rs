//! Validated names: methods, tools and event channels.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{format, Error};

macro_rules! registry_name {
    ($(#[$doc:meta])* $ty:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($ty), self.0)
            }
        }

        impl FromStr for $ty {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::new(s)
            }
        }

        impl TryFrom<&str> for $ty {
            type Error = Error;
            fn try_from(s: &str) -> Result<Self, Self::Error> {
                Self::new(s)
            }
        }

        impl TryFrom<String> for $ty {
            type Error = Error;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                Self::new(s)
            }
        }

        impl Deref for $ty {
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

        impl Borrow<str> for $ty {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $ty {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let s = String::deserialize(deserializer)?;
                Self::new(s).map_err(serde::de::Error::custom)
            }
        }

        impl JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({ "type": "string", "pattern": format::NAME_PATTERN })
            }
        }
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
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

impl fmt::Display for ChannelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ChannelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChannelName({:?})", self.0)
    }
}

impl FromStr for ChannelName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl Deref for ChannelName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ChannelName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for ChannelName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for ChannelName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ChannelName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl Serialize for ChannelName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ChannelName {
    /// Deserialization is lenient (non-empty); the strict decoder checks canonical form separately.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Self::new_lenient(s).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for ChannelName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ChannelName".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "pattern": format::NAME_PATTERN })
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
