//! Small validating building blocks shared by the method types: each one checks on deserialization exactly
//! what its JSON Schema states, so the typed model and the generated schemas agree.

use std::collections::HashSet;
use std::fmt;
use std::hash::Hash;
use std::ops::Deref;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{format, Error};

/// Deserializes an optional field that, when present, must hold a `T` (a JSON `null` is not "absent").
///
/// Use with `#[serde(default, deserialize_with = "...")]`.
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// The schema of a required value that may be `null`: `T`, or `null`.
pub(crate) fn nullable_schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    let inner = generator.subschema_for::<T>();
    json_schema!({ "oneOf": [ { "type": "null" }, inner ] })
}

/// The schema that accepts any JSON value.
pub(crate) fn any_value(_: &mut SchemaGenerator) -> Schema {
    Schema::from(true)
}

/// A string that is never empty (`minLength: 1`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct NonEmptyString(String);

impl NonEmptyString {
    /// Wraps `s`, refusing the empty string.
    pub fn new(s: impl Into<String>) -> Result<Self, Error> {
        let s = s.into();
        if s.is_empty() {
            Err(Error::EmptyString)
        } else {
            Ok(Self(s))
        }
    }

    pub(crate) fn from_static(s: &'static str) -> Self {
        Self(if s.is_empty() {
            "-".to_owned()
        } else {
            s.to_owned()
        })
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

text_type!(NonEmptyString);
inline_schema!(NonEmptyString, { "type": "string", "minLength": 1 });

impl fmt::Debug for NonEmptyString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl<'de> Deserialize<'de> for NonEmptyString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Self::new(s).map_err(|_| serde::de::Error::custom("must be a non-empty string"))
    }
}

/// An absolute URI (RFC 3986, scheme required), such as `gabp://game/world`.
///
/// ```
/// use gabp_types::Uri;
/// assert!(Uri::new("gabp://game/world").is_ok());
/// assert!(Uri::new("world").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(try_from = "String")]
pub struct Uri(String);

impl Uri {
    /// Validates `s` as an absolute URI.
    pub fn new(s: impl Into<String>) -> Result<Self, Error> {
        let s = s.into();
        if format::is_absolute_uri(&s) {
            Ok(Self(s))
        } else {
            Err(Error::InvalidUri(s))
        }
    }

    /// The URI text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The scheme (the part before the first `:`).
    pub fn scheme(&self) -> &str {
        self.0.split(':').next().unwrap_or_default()
    }
}

text_type!(Uri);
inline_schema!(Uri, { "type": "string", "format": "uri" });

/// An RFC 3339 date-time string, such as `2026-03-01T12:00:00.250Z`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(try_from = "String")]
pub struct Timestamp(String);

impl Timestamp {
    /// Validates `s` as an RFC 3339 date-time.
    pub fn new(s: impl Into<String>) -> Result<Self, Error> {
        let s = s.into();
        if format::is_rfc3339_date_time(&s) {
            Ok(Self(s))
        } else {
            Err(Error::InvalidTimestamp(s))
        }
    }

    /// The current time in UTC with millisecond precision.
    pub fn now() -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Self::from_unix_millis(u64::try_from(now.as_millis()).unwrap_or(u64::MAX))
    }

    /// The UTC time `millis` milliseconds after the Unix epoch; a time past 9999-12-31T23:59:59.999Z, which
    /// the four digits of an RFC 3339 year cannot write, is written as that instant.
    pub fn from_unix_millis(millis: u64) -> Self {
        const LAST_MILLIS_OF_9999: u64 = 253_402_300_799_999;
        let millis = millis.min(LAST_MILLIS_OF_9999);
        let secs = millis / 1000;
        let ms = millis % 1000;
        let days = secs / 86_400;
        let rem = secs % 86_400;
        let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
        // Civil-from-days (Howard Hinnant's algorithm).
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let mo = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(mo <= 2);
        // Digit by digit: a fraction of what `format!` costs, and events are stamped on the game's thread.
        let (y, mo, d) = (y.unsigned_abs(), mo.unsigned_abs(), d.unsigned_abs());
        let mut text = String::with_capacity(24);
        let mut put = |value: u64, digits: u32, then: char| {
            debug_assert!(
                value < 10u64.pow(digits),
                "{value} has more than {digits} digits"
            );
            for place in (0..digits).rev() {
                text.push(digit(value / 10u64.pow(place)));
            }
            text.push(then);
        };
        put(y, 4, '-');
        put(mo, 2, '-');
        put(d, 2, 'T');
        put(h, 2, ':');
        put(m, 2, ':');
        put(s, 2, '.');
        put(ms, 3, 'Z');
        Self(text)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The last decimal digit of `value`.
fn digit(value: u64) -> char {
    // `value % 10` is below 10.
    char::from(b'0' + (value % 10) as u8)
}

text_type!(Timestamp);
inline_schema!(Timestamp, { "type": "string", "format": "date-time" });

/// An array whose items are unique (`uniqueItems: true`) and that holds at least `MIN` items (`minItems`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct UniqueVec<T, const MIN: usize = 0>(Vec<T>);

impl<T: Eq + Hash, const MIN: usize> UniqueVec<T, MIN> {
    /// Checks `items` for uniqueness and the minimum count.
    pub fn new(items: Vec<T>) -> Result<Self, Error> {
        if items.len() < MIN {
            return Err(Error::TooFewItems { min: MIN });
        }
        let mut seen = HashSet::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            if !seen.insert(item) {
                return Err(Error::DuplicateItem { index });
            }
        }
        Ok(Self(items))
    }
}

impl<T, const MIN: usize> UniqueVec<T, MIN> {
    /// The items.
    pub fn as_slice(&self) -> &[T] {
        &self.0
    }

    /// The items as a vector.
    pub fn into_vec(self) -> Vec<T> {
        self.0
    }
}

impl<T, const MIN: usize> Default for UniqueVec<T, MIN> {
    /// An empty list (only meaningful when `MIN` is 0).
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<T: fmt::Debug, const MIN: usize> fmt::Debug for UniqueVec<T, MIN> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl<T, const MIN: usize> Deref for UniqueVec<T, MIN> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: Eq + Hash, const MIN: usize> TryFrom<Vec<T>> for UniqueVec<T, MIN> {
    type Error = Error;
    fn try_from(items: Vec<T>) -> Result<Self, Error> {
        Self::new(items)
    }
}

impl<T: Serialize, const MIN: usize> Serialize for UniqueVec<T, MIN> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de> + Eq + Hash, const MIN: usize> Deserialize<'de>
    for UniqueVec<T, MIN>
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let items = Vec::<T>::deserialize(deserializer)?;
        Self::new(items).map_err(serde::de::Error::custom)
    }
}

impl<T: JsonSchema, const MIN: usize> JsonSchema for UniqueVec<T, MIN> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("UniqueVec_{}_{}", T::schema_name(), MIN).into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let items = generator.subschema_for::<T>();
        let mut schema = json_schema!({ "type": "array", "items": items, "uniqueItems": true });
        if MIN > 0 {
            schema.insert("minItems".into(), MIN.into());
        }
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_vec_rules() {
        assert!(UniqueVec::<String, 1>::new(vec![]).is_err());
        assert_eq!(
            UniqueVec::<&str>::new(vec!["a", "b", "a"]).unwrap_err(),
            Error::DuplicateItem { index: 2 }
        );
        let v: Result<UniqueVec<String>, _> = serde_json::from_str(r#"["a","a"]"#);
        assert!(v.is_err());
    }

    #[test]
    fn timestamps_from_millis_are_valid() {
        for ms in [
            0u64,
            1_704_186_600_123,
            951_782_400_000, /* 2000-02-29 */
            4_102_444_799_999,
        ] {
            let t = Timestamp::from_unix_millis(ms);
            assert!(format::is_rfc3339_date_time(t.as_str()), "{t}");
        }
        assert_eq!(
            Timestamp::from_unix_millis(0).as_str(),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(
            Timestamp::from_unix_millis(951_782_400_000).as_str(),
            "2000-02-29T00:00:00.000Z"
        );
        assert!(format::is_rfc3339_date_time(Timestamp::now().as_str()));
        // Leap days, month and year ends, and a century that is not a leap year.
        for (ms, text) in [
            (1_709_251_199_999, "2024-02-29T23:59:59.999Z"),
            (946_684_799_999, "1999-12-31T23:59:59.999Z"),
            (4_107_499_200_000, "2100-02-28T12:00:00.000Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            (31_449_600_001, "1970-12-31T00:00:00.001Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        ] {
            assert_eq!(Timestamp::from_unix_millis(ms).as_str(), text);
        }
    }

    proptest::proptest! {
        /// Written digit by digit, a timestamp reads as `format!` writes the same fields.
        #[test]
        fn timestamps_are_written_as_format_writes_them(millis in 0u64..=253_402_300_799_999) {
            let text = Timestamp::from_unix_millis(millis);
            let (secs, ms) = (millis / 1000, millis % 1000);
            let days = secs / 86_400;
            let (h, m, s) = (secs % 86_400 / 3600, secs % 3600 / 60, secs % 60);
            let epoch_day = |y: u64, mo: u64, d: u64| {
                // Days from 1970-01-01 to y-mo-d, counted by months from March.
                let (y, mo) = if mo <= 2 { (y - 1, mo + 9) } else { (y, mo - 3) };
                let era_days = 365 * y + y / 4 - y / 100 + y / 400;
                era_days + (153 * mo + 2) / 5 + d - 1 - 719_468
            };
            let (y, mo, d) = (
                text.as_str()[0..4].parse::<u64>().unwrap(),
                text.as_str()[5..7].parse::<u64>().unwrap(),
                text.as_str()[8..10].parse::<u64>().unwrap(),
            );
            proptest::prop_assert_eq!(epoch_day(y, mo, d), days);
            proptest::prop_assert_eq!(
                text.as_str(),
                format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z")
            );
            proptest::prop_assert!(format::is_rfc3339_date_time(text.as_str()));
        }
    }

    /// Years past 9999 used to be cut to 9999 and keep their month and day: 10000-02-29 became the
    /// invalid 9999-02-29.
    #[test]
    fn timestamps_past_year_9999_are_its_last_millisecond() {
        for ms in [253_402_300_800_000, 253_407_398_400_000, u64::MAX] {
            assert_eq!(
                Timestamp::from_unix_millis(ms).as_str(),
                "9999-12-31T23:59:59.999Z"
            );
        }
    }
}
