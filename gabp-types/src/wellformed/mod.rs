//! [`WellFormed`]: a value serialized with serde's contract enforced, so that serde_json's writer, which trusts
//! the contract, cannot be made to write text that is not JSON (RFC 8259; messages are JSON, SPEC/1.0 gabp.md
//! §2). Checking as the value is written costs a flag per member instead of a second parse of the text.
//!
//! serde_json's compact writer writes invalid JSON when a `Serialize` impl:
//! - gives a map keys and values that do not alternate (`{"a","b":1}`, `{:1}`, `{"a"}`);
//! - declares a map, sequence or struct empty and then gives it members (`{},"a":1}`);
//! - names a struct with one of serde_json's private tokens, whose one field the writer copies as it is (how
//!   `RawValue` and, with `arbitrary_precision`, `Number` are written): the field must be one, and JSON;
//! - goes on after an error it was given, when the writer has written part of a value (`[{]`).
//!
//! All four are refused, the last by a flag every level of one serialization shares. A long string with nothing
//! to escape is written through the raw text token too: serde_json then copies it instead of looking at each
//! byte, and the text is the same.

use std::cell::{Cell, RefCell};

use serde::ser::{self, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// The name by which serde_json marks a raw value, and, with `arbitrary_precision`, a number as its text.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";
const NUMBER_TOKEN: &str = "$serde_json::private::Number";
/// How serde_json's tokens begin: `Value` reads an object whose first member is so named otherwise.
pub(crate) const TOKEN_PREFIX: &str = "$serde_json::private::";

/// Strings at least this long with nothing to escape are copied as they are rather than scanned byte by byte by
/// the writer.
const VERBATIM: usize = 32;

/// A quoted string grown past this is given back after use.
const KEEP_QUOTED: usize = 64 * 1024;

thread_local! {
    static QUOTED: RefCell<String> = const { RefCell::new(String::new()) };
}

/// What the written text must read as.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Target {
    /// JSON: what a raw value holds.
    Json,
    /// A `serde_json::Value`, with the numbers `serde_json::to_value` gives: an integer beyond 64 bits is
    /// refused, an `f32` is written as the `f64` it widens to, and raw text must read as a value.
    Value,
}

/// The state one serialization shares across its levels.
pub(crate) struct Guard {
    target: Target,
    failed: Cell<bool>,
}

impl Guard {
    pub(crate) fn new(target: Target) -> Guard {
        Guard {
            target,
            failed: Cell::new(false),
        }
    }

    /// Whether any call failed, even one whose error the `Serialize` impl then dropped.
    pub(crate) fn failed(&self) -> bool {
        self.failed.get()
    }

    /// An error if any call failed, even one whose error the `Serialize` impl then dropped: the text written is
    /// then not to be used.
    pub(crate) fn verdict(&self) -> Result<(), serde_json::Error> {
        if self.failed() {
            return Err(ser::Error::custom(
                "a `Serialize` impl went on after an error it was given",
            ));
        }
        Ok(())
    }

    fn check<T, E>(&self, result: Result<T, E>) -> Result<T, E> {
        if result.is_err() {
            self.failed.set(true);
        }
        result
    }

    fn refuse<E: ser::Error>(&self, message: &str) -> E {
        self.failed.set(true);
        E::custom(message)
    }
}

/// `value`, serialized through [`Checked`] for serde_json's writer (the only serializer it is made for): the same
/// calls reach the writer, or an error, and the writer writes the same text.
pub(crate) struct WellFormed<'a, T: ?Sized> {
    value: &'a T,
    guard: &'a Guard,
}

impl<'a, T: ?Sized> WellFormed<'a, T> {
    pub(crate) fn new(value: &'a T, guard: &'a Guard) -> Self {
        WellFormed { value, guard }
    }
}

impl<T: Serialize + ?Sized> Serialize for WellFormed<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(Checked {
            inner: serializer,
            guard: self.guard,
        })
    }
}

/// A serializer that hands every call on to `S`, wrapping nested values, and refuses calls that break serde's
/// contract where `S` would not.
struct Checked<'a, S> {
    inner: S,
    guard: &'a Guard,
}

/// A compound whose members are each written whole, and which may have been declared empty.
struct Members<'a, C> {
    inner: C,
    guard: &'a Guard,
    empty: bool,
}

impl<'a, C> Members<'a, C> {
    fn new(inner: C, guard: &'a Guard, empty: bool) -> Self {
        Members {
            inner,
            guard,
            empty,
        }
    }

    fn member<E: ser::Error>(&self) -> Result<(), E> {
        if self.empty {
            return Err(self
                .guard
                .refuse("a map, sequence or struct declared with no members was given one"));
        }
        Ok(())
    }

    fn wrap<'v, T: ?Sized>(&self, value: &'v T) -> WellFormed<'v, T>
    where
        'a: 'v,
    {
        WellFormed::new(value, self.guard)
    }
}

/// A map, with whether a key waits for its value.
struct MapMembers<'a, M> {
    members: Members<'a, M>,
    key_pending: bool,
}

/// A struct: plain, or named with a serde_json token, whose one field is JSON text.
enum StructMembers<'a, C> {
    Plain(Members<'a, C>),
    Token {
        inner: C,
        guard: &'a Guard,
        number: bool,
        written: bool,
    },
}

macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(fn $method(self, $($arg: $ty),*) -> Result<S::Ok, S::Error> {
            self.guard.check(self.inner.$method($($arg),*))
        })*
    };
}

impl<'a, S: Serializer> Serializer for Checked<'a, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Members<'a, S::SerializeSeq>;
    type SerializeTuple = Members<'a, S::SerializeTuple>;
    type SerializeTupleStruct = Members<'a, S::SerializeTupleStruct>;
    type SerializeTupleVariant = Members<'a, S::SerializeTupleVariant>;
    type SerializeMap = MapMembers<'a, S::SerializeMap>;
    type SerializeStruct = StructMembers<'a, S::SerializeStruct>;
    type SerializeStructVariant = Members<'a, S::SerializeStructVariant>;

    forward! {
        serialize_bool(v: bool);
        serialize_i8(v: i8);
        serialize_i16(v: i16);
        serialize_i32(v: i32);
        serialize_i64(v: i64);
        serialize_u8(v: u8);
        serialize_u16(v: u16);
        serialize_u32(v: u32);
        serialize_u64(v: u64);
        serialize_f64(v: f64);
        serialize_char(v: char);
        serialize_bytes(v: &[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(name: &'static str);
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str);
    }

    fn serialize_i128(self, v: i128) -> Result<S::Ok, S::Error> {
        if self.guard.target == Target::Value
            && i64::try_from(v).is_err()
            && u64::try_from(v).is_err()
        {
            return Err(self.guard.refuse("number out of range"));
        }
        self.guard.check(self.inner.serialize_i128(v))
    }

    fn serialize_u128(self, v: u128) -> Result<S::Ok, S::Error> {
        if self.guard.target == Target::Value && u64::try_from(v).is_err() {
            return Err(self.guard.refuse("number out of range"));
        }
        self.guard.check(self.inner.serialize_u128(v))
    }

    fn serialize_f32(self, v: f32) -> Result<S::Ok, S::Error> {
        match self.guard.target {
            Target::Value => self.guard.check(self.inner.serialize_f64(f64::from(v))),
            Target::Json => self.guard.check(self.inner.serialize_f32(v)),
        }
    }

    /// A long string with nothing to escape is handed to the writer as the JSON text it is, through the raw
    /// text token, which serde_json copies as it is; anything else is escaped by the writer.
    fn serialize_str(self, v: &str) -> Result<S::Ok, S::Error> {
        if v.len() < VERBATIM || crate::decode::scan::next_stop(v.as_bytes(), 0) != v.len() {
            return self.guard.check(self.inner.serialize_str(v));
        }
        let (mut inner, guard) = (Some(self.inner), self.guard);
        // The buffer is in use only while the writer copies it; a thread that is ending writes plainly.
        let verbatim = QUOTED.try_with(|quoted| {
            let mut text = quoted.try_borrow_mut().ok()?;
            let inner = inner.take()?;
            text.clear();
            text.reserve(v.len() + 2);
            text.push('"');
            text.push_str(v);
            text.push('"');
            let written = inner
                .serialize_struct(RAW_VALUE_TOKEN, 1)
                .and_then(|mut raw| {
                    ser::SerializeStruct::serialize_field(
                        &mut raw,
                        RAW_VALUE_TOKEN,
                        text.as_str(),
                    )?;
                    ser::SerializeStruct::end(raw)
                });
            if text.capacity() > KEEP_QUOTED {
                *text = String::new();
            }
            Some(written)
        });
        match (verbatim, inner) {
            (Ok(Some(written)), _) => guard.check(written),
            (_, Some(inner)) => guard.check(inner.serialize_str(v)),
            (_, None) => Err(guard.refuse("the string was not written")),
        }
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        let value = WellFormed::new(value, self.guard);
        self.guard.check(self.inner.serialize_some(&value))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        let value = WellFormed::new(value, self.guard);
        self.guard
            .check(self.inner.serialize_newtype_struct(name, &value))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        let value = WellFormed::new(value, self.guard);
        self.guard.check(
            self.inner
                .serialize_newtype_variant(name, index, variant, &value),
        )
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        opened(self.guard, self.inner.serialize_seq(len), len == Some(0))
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        opened(self.guard, self.inner.serialize_tuple(len), len == 0)
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        opened(
            self.guard,
            self.inner.serialize_tuple_struct(name, len),
            len == 0,
        )
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        let inner = self
            .inner
            .serialize_tuple_variant(name, index, variant, len);
        opened(self.guard, inner, len == 0)
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        Ok(MapMembers {
            members: opened(self.guard, self.inner.serialize_map(len), len == Some(0))?,
            key_pending: false,
        })
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        if name != RAW_VALUE_TOKEN && name != NUMBER_TOKEN {
            let inner = self.inner.serialize_struct(name, len);
            return opened(self.guard, inner, len == 0).map(StructMembers::Plain);
        }
        let inner = self.guard.check(self.inner.serialize_struct(name, len))?;
        // A token struct has its one field; declared empty, the writer may already have closed it (`{}`).
        if len == 0 {
            return Err(self
                .guard
                .refuse("serde_json's token struct was declared with no field"));
        }
        Ok(StructMembers::Token {
            inner,
            guard: self.guard,
            number: name == NUMBER_TOKEN,
            written: false,
        })
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        let inner = self
            .inner
            .serialize_struct_variant(name, index, variant, len);
        opened(self.guard, inner, len == 0)
    }

    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.guard.check(self.inner.collect_str(value))
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// A compound the writer opened (or refused to), declared with no members when `empty`.
fn opened<'a, C, E>(
    guard: &'a Guard,
    inner: Result<C, E>,
    empty: bool,
) -> Result<Members<'a, C>, E> {
    Ok(Members::new(guard.check(inner)?, guard, empty))
}

macro_rules! members {
    ($($trait:ident :: $method:ident;)*) => {
        $(impl<C: ser::$trait> ser::$trait for Members<'_, C> {
            type Ok = C::Ok;
            type Error = C::Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
                self.member()?;
                let value = self.wrap(value);
                self.guard.check(self.inner.$method(&value))
            }

            fn end(self) -> Result<C::Ok, C::Error> {
                self.guard.check(self.inner.end())
            }
        })*
    };
}

members! {
    SerializeSeq::serialize_element;
    SerializeTuple::serialize_element;
    SerializeTupleStruct::serialize_field;
    SerializeTupleVariant::serialize_field;
}

macro_rules! fields {
    ($($trait:ident;)*) => {
        $(impl<C: ser::$trait> ser::$trait for Members<'_, C> {
            type Ok = C::Ok;
            type Error = C::Error;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), C::Error> {
                self.member()?;
                let value = self.wrap(value);
                self.guard.check(self.inner.serialize_field(key, &value))
            }

            fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
                self.guard.check(self.inner.skip_field(key))
            }

            fn end(self) -> Result<C::Ok, C::Error> {
                self.guard.check(self.inner.end())
            }
        })*
    };
}

fields! {
    SerializeStruct;
    SerializeStructVariant;
}

/// Keys go to the writer's key serializer, which accepts only what it can write as a string.
impl<M: ser::SerializeMap> ser::SerializeMap for MapMembers<'_, M> {
    type Ok = M::Ok;
    type Error = M::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), M::Error> {
        let m = &mut self.members;
        m.member()?;
        if self.key_pending {
            return Err(m.guard.refuse("a map key was serialized without its value"));
        }
        m.guard.check(m.inner.serialize_key(key))?;
        self.key_pending = true;
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), M::Error> {
        let m = &mut self.members;
        if !self.key_pending {
            return Err(m.guard.refuse("a map value was serialized without its key"));
        }
        self.key_pending = false;
        let value = m.wrap(value);
        m.guard.check(m.inner.serialize_value(&value))
    }

    fn serialize_entry<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        &mut self,
        key: &K,
        value: &V,
    ) -> Result<(), M::Error> {
        let m = &mut self.members;
        m.member()?;
        if self.key_pending {
            return Err(m.guard.refuse("a map key was serialized without its value"));
        }
        let value = m.wrap(value);
        m.guard.check(m.inner.serialize_entry(key, &value))
    }

    fn end(self) -> Result<M::Ok, M::Error> {
        let m = self.members;
        if self.key_pending {
            return Err(m.guard.refuse("a map ended after a key without its value"));
        }
        m.guard.check(m.inner.end())
    }
}

impl<C: ser::SerializeStruct> ser::SerializeStruct for StructMembers<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), C::Error> {
        match self {
            StructMembers::Plain(members) => members.serialize_field(key, value),
            StructMembers::Token {
                inner,
                guard,
                number,
                written,
            } => {
                if *written {
                    return Err(
                        guard.refuse("serde_json's raw text token was given a second field")
                    );
                }
                let text = token_text(value, *number, guard.target)
                    .map_err(|e| guard.refuse::<C::Error>(&e))?;
                *written = true;
                guard.check(inner.serialize_field(key, text.as_str()))
            }
        }
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
        match self {
            StructMembers::Plain(members) => members.skip_field(key),
            StructMembers::Token { guard, .. } => {
                Err(guard.refuse("serde_json's raw text token cannot skip its field"))
            }
        }
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        match self {
            StructMembers::Plain(members) => ser::SerializeStruct::end(members),
            StructMembers::Token {
                inner,
                guard,
                written,
                ..
            } => {
                if !written {
                    return Err(guard.refuse("serde_json's raw text token ended without its field"));
                }
                guard.check(inner.end())
            }
        }
    }
}

/// The text a token struct's field holds, when it reads as `target` says (a number, for the number token):
/// serde_json writes it as it is.
fn token_text<T: Serialize + ?Sized>(
    value: &T,
    number: bool,
    target: Target,
) -> Result<String, String> {
    let Ok(Value::String(text)) = serde_json::to_value(value) else {
        return Err("serde_json's raw text token holds something other than a string".to_owned());
    };
    let read = match target {
        Target::Json => serde_json::from_str::<&RawValue>(&text).map(drop),
        Target::Value => serde_json::from_str::<Value>(&text).map(drop),
    };
    read.map_err(|e| format!("serde_json's raw text token holds text that is not JSON: {e}"))?;
    let first = text.trim_start().as_bytes().first();
    if number && !matches!(first, Some(b'-' | b'0'..=b'9')) {
        return Err("serde_json's number token holds text that is not a number".to_owned());
    }
    Ok(text)
}

#[cfg(test)]
mod tests;
