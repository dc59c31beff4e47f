//! [`WellFormed`]: a value serialized with serde's contract enforced, so that serde_json's writer, which trusts
//! the contract, cannot be made to write text that is not JSON (RFC 8259). Messages are JSON (SPEC/1.0 gabp.md
//! §2), and checking as the value is written costs a flag per map member instead of a second parse of the text.
//!
//! serde_json's compact writer writes invalid JSON in two cases only: a map whose keys and values do not
//! alternate (`{"a","b":1}`, `{:1}`, `{"a"}`), and a struct named with one of its private tokens, whose field
//! it writes verbatim (how `RawValue` and, with `arbitrary_precision`, `Number` are written). The first is
//! refused; the second is written only when its text is JSON (a number, for the number token).
//!
//! A long string with nothing to escape goes the second way too: serde_json then copies it instead of looking
//! at each byte, and writes the same text.

use serde::ser::{self, Error as _, Serialize, Serializer};

/// The names by which serde_json marks a raw value and a number written as its text.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// Strings at least this long with nothing to escape are copied as they are rather than scanned byte by byte by
/// the writer.
const VERBATIM: usize = 32;

/// A quoted string grown past this is given back after use.
const KEEP_QUOTED: usize = 64 * 1024;

thread_local! {
    static QUOTED: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// `value`, serialized through [`Checked`] for serde_json's writer (the only serializer it is made for): the same
/// calls reach the writer, or an error, and the writer writes the same text.
pub(crate) struct WellFormed<'a, T: ?Sized>(pub(crate) &'a T);

impl<T: Serialize + ?Sized> Serialize for WellFormed<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Checked(serializer))
    }
}

/// A serializer that hands every call on to `S`, wrapping nested values, and refuses calls that break serde's
/// contract where `S` would not.
struct Checked<S>(S);

/// A compound (sequence, tuple, struct) whose members are each written whole.
struct Members<C>(C);

/// A map, with whether a key waits for its value.
struct MapMembers<M> {
    map: M,
    key_pending: bool,
}

/// A struct: plain, or named with a serde_json token, whose one field is JSON text.
enum StructMembers<C> {
    Plain(C),
    Token { inner: C, number: bool },
}

macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(fn $method(self, $($arg: $ty),*) -> Result<S::Ok, S::Error> {
            self.0.$method($($arg),*)
        })*
    };
}

impl<S: Serializer> Serializer for Checked<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Members<S::SerializeSeq>;
    type SerializeTuple = Members<S::SerializeTuple>;
    type SerializeTupleStruct = Members<S::SerializeTupleStruct>;
    type SerializeTupleVariant = Members<S::SerializeTupleVariant>;
    type SerializeMap = MapMembers<S::SerializeMap>;
    type SerializeStruct = StructMembers<S::SerializeStruct>;
    type SerializeStructVariant = Members<S::SerializeStructVariant>;

    forward! {
        serialize_bool(v: bool);
        serialize_i8(v: i8);
        serialize_i16(v: i16);
        serialize_i32(v: i32);
        serialize_i64(v: i64);
        serialize_i128(v: i128);
        serialize_u8(v: u8);
        serialize_u16(v: u16);
        serialize_u32(v: u32);
        serialize_u64(v: u64);
        serialize_u128(v: u128);
        serialize_f32(v: f32);
        serialize_f64(v: f64);
        serialize_char(v: char);
        serialize_bytes(v: &[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(name: &'static str);
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str);
    }

    /// A long string with nothing to escape is handed to the writer as the JSON text it is, through the raw
    /// text token, which serde_json copies as it is; anything else is escaped by the writer.
    fn serialize_str(self, v: &str) -> Result<S::Ok, S::Error> {
        if v.len() < VERBATIM || crate::decode::scan::next_stop(v.as_bytes(), 0) != v.len() {
            return self.0.serialize_str(v);
        }
        QUOTED.with(|quoted| match quoted.try_borrow_mut() {
            Ok(mut text) => {
                text.clear();
                text.reserve(v.len() + 2);
                text.push('"');
                text.push_str(v);
                text.push('"');
                let mut raw = self.0.serialize_struct(RAW_VALUE_TOKEN, 1)?;
                ser::SerializeStruct::serialize_field(&mut raw, RAW_VALUE_TOKEN, text.as_str())?;
                if text.capacity() > KEEP_QUOTED {
                    *text = String::new();
                }
                ser::SerializeStruct::end(raw)
            }
            Err(_) => self.0.serialize_str(v),
        })
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_some(&WellFormed(value))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_struct(name, &WellFormed(value))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0
            .serialize_newtype_variant(name, index, variant, &WellFormed(value))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        self.0.serialize_seq(len).map(Members)
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        self.0.serialize_tuple(len).map(Members)
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        self.0.serialize_tuple_struct(name, len).map(Members)
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        self.0
            .serialize_tuple_variant(name, index, variant, len)
            .map(Members)
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        self.0.serialize_map(len).map(|map| MapMembers {
            map,
            key_pending: false,
        })
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        let inner = self.0.serialize_struct(name, len)?;
        Ok(match name {
            RAW_VALUE_TOKEN => StructMembers::Token {
                inner,
                number: false,
            },
            NUMBER_TOKEN => StructMembers::Token {
                inner,
                number: true,
            },
            _ => StructMembers::Plain(inner),
        })
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        self.0
            .serialize_struct_variant(name, index, variant, len)
            .map(Members)
    }

    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.0.collect_str(value)
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

impl<C: ser::SerializeSeq> ser::SerializeSeq for Members<C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        self.0.serialize_element(&WellFormed(value))
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.0.end()
    }
}

impl<C: ser::SerializeTuple> ser::SerializeTuple for Members<C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        self.0.serialize_element(&WellFormed(value))
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.0.end()
    }
}

impl<C: ser::SerializeTupleStruct> ser::SerializeTupleStruct for Members<C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        self.0.serialize_field(&WellFormed(value))
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.0.end()
    }
}

impl<C: ser::SerializeTupleVariant> ser::SerializeTupleVariant for Members<C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        self.0.serialize_field(&WellFormed(value))
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.0.end()
    }
}

impl<C: ser::SerializeStructVariant> ser::SerializeStructVariant for Members<C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), C::Error> {
        self.0.serialize_field(key, &WellFormed(value))
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
        self.0.skip_field(key)
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.0.end()
    }
}

/// Keys go to the writer's key serializer, which accepts only what it can write as a string.
impl<M: ser::SerializeMap> ser::SerializeMap for MapMembers<M> {
    type Ok = M::Ok;
    type Error = M::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), M::Error> {
        if self.key_pending {
            return Err(M::Error::custom(
                "a map key was serialized without its value",
            ));
        }
        self.map.serialize_key(key)?;
        self.key_pending = true;
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), M::Error> {
        if !self.key_pending {
            return Err(M::Error::custom(
                "a map value was serialized without its key",
            ));
        }
        self.key_pending = false;
        self.map.serialize_value(&WellFormed(value))
    }

    fn serialize_entry<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        &mut self,
        key: &K,
        value: &V,
    ) -> Result<(), M::Error> {
        if self.key_pending {
            return Err(M::Error::custom(
                "a map key was serialized without its value",
            ));
        }
        self.map.serialize_entry(key, &WellFormed(value))
    }

    fn end(self) -> Result<M::Ok, M::Error> {
        if self.key_pending {
            return Err(M::Error::custom(
                "a map ended after a key without its value",
            ));
        }
        self.map.end()
    }
}

impl<C: ser::SerializeStruct> ser::SerializeStruct for StructMembers<C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), C::Error> {
        match self {
            StructMembers::Plain(inner) => inner.serialize_field(key, &WellFormed(value)),
            StructMembers::Token { inner, number } => {
                let text = json_text_of(value, *number).map_err(C::Error::custom)?;
                inner.serialize_field(key, text.as_str())
            }
        }
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
        match self {
            StructMembers::Plain(inner) | StructMembers::Token { inner, .. } => {
                inner.skip_field(key)
            }
        }
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        match self {
            StructMembers::Plain(inner) | StructMembers::Token { inner, .. } => inner.end(),
        }
    }
}

/// The text a token struct's field holds, when it is JSON (a number, for the number token): serde_json writes
/// it as it is.
fn json_text_of<T: Serialize + ?Sized>(value: &T, number: bool) -> Result<String, String> {
    let serde_json::Value::String(text) = serde_json::to_value(value).map_err(|e| e.to_string())?
    else {
        return Err("serde_json's raw text token holds something other than a string".to_owned());
    };
    let read = serde_json::from_str::<&serde_json::value::RawValue>(&text)
        .map_err(|e| format!("serde_json's raw text token holds text that is not JSON: {e}"))?;
    if number && !matches!(read.get().as_bytes().first(), Some(b'-' | b'0'..=b'9')) {
        return Err("serde_json's number token holds text that is not a number".to_owned());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::WellFormed;
    use serde::ser::{SerializeMap, SerializeStruct};
    use serde::{Serialize, Serializer};
    use serde_json::json;
    use serde_json::value::RawValue;

    fn written<T: Serialize>(value: &T) -> Result<String, String> {
        serde_json::to_string(&WellFormed(value)).map_err(|e| e.to_string())
    }

    /// A map serialized by the calls in `steps`: `k` a key, `v` a value, `e` a whole entry.
    struct Steps(&'static str);

    impl Serialize for Steps {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(None)?;
            for (i, step) in self.0.chars().enumerate() {
                let key = format!("k{i}");
                match step {
                    'k' => map.serialize_key(&key)?,
                    'v' => map.serialize_value(&i)?,
                    _ => map.serialize_entry(&key, &i)?,
                }
            }
            map.end()
        }
    }

    #[test]
    fn a_map_whose_keys_and_values_do_not_alternate_is_refused() {
        for (steps, message) in [
            ("kkv", "a map key was serialized without its value"),
            ("ke", "a map key was serialized without its value"),
            ("v", "a map value was serialized without its key"),
            ("kvv", "a map value was serialized without its key"),
            ("ekvk", "a map ended after a key without its value"),
        ] {
            let steps = Steps(steps);
            let plain = serde_json::to_string(&steps).unwrap();
            assert!(
                serde_json::from_str::<&RawValue>(&plain).is_err(),
                "{plain}"
            );
            let refused = written(&steps).unwrap_err();
            assert!(refused.contains(message), "{refused}");
        }
        assert_eq!(
            written(&Steps("kvekv")).unwrap(),
            r#"{"k0":1,"k2":2,"k3":4}"#
        );
    }

    /// A struct named with serde_json's raw value token, holding `text`.
    struct Token(&'static str, &'static str);

    impl Serialize for Token {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut s = serializer.serialize_struct(self.0, 1)?;
            s.serialize_field(self.0, self.1)?;
            s.end()
        }
    }

    #[test]
    fn raw_text_is_written_only_when_it_is_json() {
        let raw = RawValue::from_string(r#"{"a": [1, 2]}"#.to_owned()).unwrap();
        #[derive(Serialize)]
        struct Holds {
            x: Box<RawValue>,
        }
        assert_eq!(
            written(&Holds { x: raw }).unwrap(),
            r#"{"x":{"a": [1, 2]}}"#
        );
        let token = super::RAW_VALUE_TOKEN;
        assert_eq!(written(&[Token(token, "[true]")]).unwrap(), "[[true]]");
        for bad in [r#"{"a""#, "", "1 2"] {
            let plain = serde_json::to_string(&Token(token, bad)).unwrap();
            assert_eq!(plain, bad);
            assert!(written(&Token(token, bad))
                .unwrap_err()
                .contains("not JSON"));
        }
        let number = super::NUMBER_TOKEN;
        assert!(written(&Token(number, "-1.5e3")).is_ok());
        assert!(written(&Token(number, r#""1""#))
            .unwrap_err()
            .contains("not a number"));
    }

    #[test]
    fn what_keeps_the_contract_is_written_as_serde_json_writes_it() {
        #[derive(Serialize)]
        enum Shape {
            Unit,
            Newtype(u8),
            Tuple(u8, Option<i64>),
            Struct {
                a: Vec<(bool, char)>,
                #[serde(skip_serializing_if = "Option::is_none")]
                b: Option<u8>,
            },
        }
        #[derive(Serialize)]
        struct Wrapper<'a>(&'a str);
        let values = (
            [Shape::Unit, Shape::Newtype(3), Shape::Tuple(1, None)],
            Shape::Struct {
                a: vec![(true, 'é')],
                b: None,
            },
            Wrapper("q\"\u{1}"),
            [
                "long enough to be copied as it is, \u{e9}\u{1F600} included".to_owned(),
                "long enough but with a quote \" so that it is escaped".to_owned(),
                "x".repeat(super::VERBATIM),
                "y".repeat(super::VERBATIM - 1),
            ],
            json!({"nested": [{"x": null, "y": 1.5, "z": u64::MAX}], "": -0.0}),
            (u128::MAX, i128::MIN, f32::NAN, b"bytes".as_slice()),
        );
        assert_eq!(
            written(&values).unwrap(),
            serde_json::to_string(&values).unwrap()
        );
    }
}
