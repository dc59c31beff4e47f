//! Message identifiers.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{format, Error};

/// The identifier of a GABP message: a hyphenated UUID string.
///
/// Upper-, lower- and mixed-case forms are accepted, and the exact text is kept so that a response echoes the
/// id of its request byte for byte. Two ids are equal when they name the same UUID, whatever their case.
/// Braced (`{...}`), URN (`urn:uuid:...`) and unhyphenated forms are rejected
/// (SPEC/1.0/gabp.md §3.1).
///
/// ```
/// use gabp_types::MessageId;
///
/// let id: MessageId = "550E8400-E29B-41D4-A716-446655440000".parse()?;
/// assert_eq!(id.to_string(), "550E8400-E29B-41D4-A716-446655440000");
/// assert_eq!(id, "550e8400-e29b-41d4-a716-446655440000".parse()?);
/// assert!("{550e8400-e29b-41d4-a716-446655440000}".parse::<MessageId>().is_err());
/// # Ok::<(), gabp_types::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct MessageId {
    text: [u8; ID_LEN],
}

/// The length of an id's text: a hyphenated UUID.
pub(crate) const ID_LEN: usize = 36;

impl MessageId {
    /// The nil UUID `00000000-0000-0000-0000-000000000000`, used to answer messages whose own id is unreadable.
    pub const NIL: MessageId = MessageId {
        text: *b"00000000-0000-0000-0000-000000000000",
    };

    /// The nil id (see [`MessageId::NIL`]).
    pub fn nil() -> MessageId {
        Self::NIL
    }

    /// A fresh random (version 4) id, in lower case, from `uuid`'s per-thread generator (its `fast-rng`
    /// feature: seeded from the operating system, no system call per id).
    pub fn new_v4() -> MessageId {
        Self::from_uuid(uuid::Uuid::new_v4())
    }

    /// The id of a UUID, in lower case.
    pub fn from_uuid(uuid: uuid::Uuid) -> MessageId {
        let mut text = [0u8; ID_LEN];
        uuid.hyphenated().encode_lower(&mut text);
        MessageId { text }
    }

    /// Parses a hyphenated UUID, keeping its case.
    pub fn parse(s: &str) -> Result<MessageId, Error> {
        MessageId::from_ascii(s.as_bytes()).ok_or(Error::InvalidMessageId)
    }

    /// [`MessageId::parse`] on bytes, which need no UTF-8 check first: the bytes it accepts are ASCII.
    pub(crate) fn from_ascii(bytes: &[u8]) -> Option<MessageId> {
        if !format::is_hyphenated_uuid_bytes(bytes) {
            return None;
        }
        let mut text = [0u8; ID_LEN];
        text.copy_from_slice(bytes);
        Some(MessageId { text })
    }

    /// The id's text as bytes (ASCII hex digits and hyphens), without the UTF-8 check of [`MessageId::as_str`].
    pub fn as_bytes(&self) -> &[u8; 36] {
        &self.text
    }

    /// The id exactly as it was received or generated.
    pub fn as_str(&self) -> &str {
        // The constructors only store ASCII hex digits and hyphens, so this never fails; the fallback keeps the
        // function total without a panic path.
        std::str::from_utf8(&self.text).unwrap_or("00000000-0000-0000-0000-000000000000")
    }

    /// The UUID this id names.
    pub fn as_uuid(&self) -> uuid::Uuid {
        uuid::Uuid::try_parse_ascii(&self.text).unwrap_or_default()
    }

    /// Whether this is the nil id.
    pub fn is_nil(&self) -> bool {
        self.as_uuid().is_nil()
    }
}

impl PartialEq for MessageId {
    fn eq(&self, other: &Self) -> bool {
        // Ids written back as they were received are the same bytes: one comparison of the whole text first.
        self.text == other.text || self.text.eq_ignore_ascii_case(&other.text)
    }
}

impl Eq for MessageId {}

impl Hash for MessageId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Case-insensitive, like `eq`; one write of the whole text rather than one per byte. The text is hex digits
        // and hyphens, which the case bit (0x20) lowers without a branch: digits and hyphens have it already.
        let mut lower = self.text;
        for byte in &mut lower {
            *byte |= 0x20;
        }
        state.write(&lower);
    }
}

impl PartialOrd for MessageId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for MessageId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_uuid().cmp(&other.as_uuid())
    }
}

impl Default for MessageId {
    fn default() -> Self {
        Self::NIL
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MessageId({})", self.as_str())
    }
}

impl FromStr for MessageId {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MessageId::parse(s)
    }
}

impl From<uuid::Uuid> for MessageId {
    fn from(uuid: uuid::Uuid) -> Self {
        MessageId::from_uuid(uuid)
    }
}

impl Serialize for MessageId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for MessageId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        MessageId::parse(&s).map_err(serde::de::Error::custom)
    }
}

inline_schema!(MessageId, {
    "type": "string",
    "format": "uuid",
    "pattern": format::UUID_PATTERN,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_case_and_compares_case_insensitively() {
        let upper = MessageId::parse("550E8400-E29B-41D4-A716-446655440000").unwrap();
        let lower = MessageId::parse("550e8400-e29b-41d4-a716-446655440000").unwrap();
        assert_eq!(upper.as_str(), "550E8400-E29B-41D4-A716-446655440000");
        assert_eq!(upper, lower);
        let hash = |id: &MessageId| {
            use std::collections::hash_map::DefaultHasher;
            let mut h = DefaultHasher::new();
            id.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&upper), hash(&lower));
    }

    proptest::proptest! {
        /// Written as the `uuid` crate writes a UUID in lower case, and read back as the same UUID.
        #[test]
        fn an_id_is_the_uuid_s_own_text(uuid: u128) {
            let uuid = uuid::Uuid::from_u128(uuid);
            let id = MessageId::from_uuid(uuid);
            proptest::prop_assert_eq!(id.as_str(), uuid.hyphenated().to_string());
            proptest::prop_assert_eq!(id.as_uuid(), uuid);
        }

        /// Equal and hashed alike whatever the case of each letter; unequal when the UUIDs differ.
        #[test]
        fn case_never_matters_and_the_uuid_always_does(
            a: u128,
            b: u128,
            upper_a: u64,
            upper_b: u64,
        ) {
            use std::hash::BuildHasher;
            let id = |uuid: u128, upper: u64| {
                let mut text = uuid::Uuid::from_u128(uuid).hyphenated().to_string().into_bytes();
                for (i, byte) in text.iter_mut().enumerate() {
                    if upper >> (i % 64) & 1 == 1 {
                        byte.make_ascii_uppercase();
                    }
                }
                MessageId::parse(std::str::from_utf8(&text).unwrap()).unwrap()
            };
            let state = std::collections::hash_map::RandomState::new();
            let (x, y) = (id(a, upper_a), id(a, upper_b));
            proptest::prop_assert_eq!(x, y);
            proptest::prop_assert_eq!(state.hash_one(x), state.hash_one(y));
            let z = id(b, upper_b);
            proptest::prop_assert_eq!(x == z, a == b);
        }
    }

    #[test]
    fn rejects_other_uuid_forms() {
        for bad in [
            "{550e8400-e29b-41d4-a716-446655440000}",
            "urn:uuid:550e8400-e29b-41d4-a716-446655440000",
            "550e8400e29b41d4a716446655440000",
            "550e8400-e29b-41d4-a716-44665544000g",
            "550e8400-e29b-41d4-a716-4466554400000",
            "",
            "550e8400-e29b-41d4-a716_446655440000",
        ] {
            assert!(MessageId::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn v4_ids_are_version_4_and_distinct_across_threads() {
        use std::collections::HashSet;
        let ids = || (0..20_000).map(|_| MessageId::new_v4()).collect::<Vec<_>>();
        let others = std::thread::spawn(ids).join().unwrap();
        let mut seen = HashSet::new();
        for id in ids().into_iter().chain(others) {
            let uuid = id.as_uuid();
            assert_eq!(uuid.get_version_num(), 4, "{id}");
            assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122, "{id}");
            assert!(crate::format::is_hyphenated_uuid(id.as_str()));
            assert!(seen.insert(id), "{id} repeated");
        }
        // Not a counter in disguise: consecutive ids differ in about half their random bits.
        let (a, b) = (MessageId::new_v4().as_uuid(), MessageId::new_v4().as_uuid());
        let differing = (a.as_u128() ^ b.as_u128()).count_ones();
        assert!((20..=102).contains(&differing), "{differing} bits differ");
    }

    #[test]
    fn hash_ignores_case_like_eq() {
        use std::collections::HashMap;
        let mut map = HashMap::new();
        map.insert(
            MessageId::parse("550E8400-E29B-41D4-A716-44665544000A").unwrap(),
            1,
        );
        assert_eq!(
            map.get(&MessageId::parse("550e8400-e29b-41d4-a716-44665544000a").unwrap()),
            Some(&1)
        );
        assert_eq!(
            map.get(&MessageId::parse("550e8400-e29b-41d4-a716-44665544000b").unwrap()),
            None
        );
    }

    #[test]
    fn nil_and_v4() {
        assert!(MessageId::nil().is_nil());
        let id = MessageId::new_v4();
        assert!(!id.is_nil());
        assert_eq!(id.as_str(), id.as_str().to_ascii_lowercase());
        assert_eq!(MessageId::parse(id.as_str()).unwrap(), id);
    }
}
