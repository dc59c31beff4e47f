//! Params and results of `env/spaces`, `env/reset` and `env/step`, and the [`Space`] of their observations and
//! actions: the `env` extension (SPEC/1.0 extensions.md §env), which serves a game as a reinforcement-learning
//! environment in the shape of Gymnasium's `Env`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::pointer::escape_pointer;
use crate::Error;

/// The key of the `env` extension in `capabilities.extensions`.
pub const ENV_EXTENSION: &str = "env";

/// The most elements one `Box` or `MultiBinary` space may hold.
pub const MAX_SPACE_ELEMENTS: u64 = 1 << 20;

/// How deep `Dict` spaces may nest.
pub const MAX_SPACE_DEPTH: usize = 16;

/// The element type of a `Box` space, named as NumPy names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Dtype {
    // No doc comments on the variants: with them, schemars writes a `oneOf` per variant instead of one `enum`.
    #[default]
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
}

impl Dtype {
    /// The range of an integer type, `None` for a float type.
    #[must_use]
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            Dtype::Float32 | Dtype::Float64 => return None,
            Dtype::Int8 => (i8::MIN.into(), i8::MAX.into()),
            Dtype::Int16 => (i16::MIN.into(), i16::MAX.into()),
            Dtype::Int32 => (i32::MIN.into(), i32::MAX.into()),
            Dtype::Int64 => (i64::MIN.into(), i64::MAX.into()),
            Dtype::Uint8 => (0, u8::MAX.into()),
            Dtype::Uint16 => (0, u16::MAX.into()),
            Dtype::Uint32 => (0, u32::MAX.into()),
            Dtype::Uint64 => (0, u64::MAX.into()),
        })
    }
}

fn bound_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "A number, null (no bound), or nested arrays of those in the space's shape.",
        "type": ["number", "null", "array"]
    })
}

/// A `Box` space: numbers of a shape, each between its bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BoxSpace {
    /// The lower bound: a number for every element, `null` for none, or nested arrays of the space's shape.
    #[schemars(schema_with = "bound_schema")]
    pub low: Value,
    /// The upper bound, as `low`.
    #[schemars(schema_with = "bound_schema")]
    pub high: Value,
    /// The size of each dimension; `[]` for a single number.
    #[schemars(inner(range(min = 1)))]
    pub shape: Vec<u64>,
    /// The element type (default `float32`).
    #[serde(default)]
    pub dtype: Dtype,
}

/// A `Discrete` space: one integer from `start` to `start + n - 1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscreteSpace {
    /// How many values, at least 1.
    #[schemars(range(min = 1))]
    pub n: u64,
    /// The smallest value (default 0).
    #[serde(default)]
    pub start: i64,
}

/// A `MultiDiscrete` space: an array of integers, element `i` from `start[i]` to `start[i] + nvec[i] - 1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultiDiscreteSpace {
    /// How many values each element has, each at least 1.
    #[schemars(length(min = 1), inner(range(min = 1)))]
    pub nvec: Vec<u64>,
    /// The smallest value of each element (default all 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Vec<i64>>,
}

/// A `MultiBinary` space: an array of `n` integers, each 0 or 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultiBinarySpace {
    /// How many elements, at least 1.
    #[schemars(range(min = 1))]
    pub n: u64,
}

/// A `Dict` space: an object with one member per named space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DictSpace {
    /// The spaces by name.
    pub spaces: BTreeMap<String, Space>,
}

/// A space of observations or actions, as Gymnasium's spaces, with their parameter names: `{"type": "Box",
/// ...}`. Reading one checks its own rules ([`Space::check`]); [`Space::contains`] checks a value against it.
///
/// ```
/// use gabp_types::methods::Space;
/// use serde_json::json;
///
/// let action: Space = serde_json::from_value(json!({"type": "Discrete", "n": 5}))?;
/// assert!(action.contains(&json!(4)).is_ok());
/// assert!(action.contains(&json!(5)).is_err());
/// let bad = serde_json::from_value::<Space>(json!({"type": "Discrete", "n": 0})).unwrap_err();
/// assert!(bad.to_string().contains("/n"), "{bad}");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type")]
pub enum Space {
    /// Numbers of a shape, between bounds.
    Box(BoxSpace),
    /// One integer of `n`.
    Discrete(DiscreteSpace),
    /// An array of integers, each of its own range.
    MultiDiscrete(MultiDiscreteSpace),
    /// An array of 0s and 1s.
    MultiBinary(MultiBinarySpace),
    /// Named spaces.
    Dict(DictSpace),
}

/// [`Space`] as read, before its rules are checked.
#[derive(Deserialize)]
#[serde(tag = "type")]
enum Unchecked {
    Box(BoxSpace),
    Discrete(DiscreteSpace),
    MultiDiscrete(MultiDiscreteSpace),
    MultiBinary(MultiBinarySpace),
    Dict(DictSpace),
}

impl<'de> Deserialize<'de> for Space {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let space = match Unchecked::deserialize(deserializer)? {
            Unchecked::Box(s) => Space::Box(s),
            Unchecked::Discrete(s) => Space::Discrete(s),
            Unchecked::MultiDiscrete(s) => Space::MultiDiscrete(s),
            Unchecked::MultiBinary(s) => Space::MultiBinary(s),
            Unchecked::Dict(s) => Space::Dict(s),
        };
        // Nested spaces were checked as they were read.
        space.check_here().map_err(serde::de::Error::custom)?;
        if space.depth() > MAX_SPACE_DEPTH {
            return Err(serde::de::Error::custom(invalid(
                "",
                format!("Dict spaces nest more than {MAX_SPACE_DEPTH} deep"),
            )));
        }
        Ok(space)
    }
}

fn invalid(pointer: impl Into<String>, reason: impl Into<String>) -> Error {
    Error::InvalidSpace {
        pointer: pointer.into(),
        reason: reason.into(),
    }
}

fn outside(pointer: &str, reason: impl Into<String>) -> Error {
    Error::OutsideSpace {
        pointer: pointer.to_owned(),
        reason: reason.into(),
    }
}

/// A failure while walking nested arrays: the pointer and why.
type WalkError = (String, String);

/// What [`elements`] calls on each element: `(element, index, pointer)`.
type Visit<'a> = dyn FnMut(&Value, usize, &str) -> Result<(), WalkError> + 'a;

/// A bound of a `Box`, flattened: one for every element, or one per element in row-major order.
enum Bound {
    All(Option<f64>),
    Each(Vec<Option<f64>>),
}

impl Bound {
    fn at(&self, index: usize) -> Option<f64> {
        match self {
            Bound::All(b) => *b,
            Bound::Each(each) => each.get(index).copied().flatten(),
        }
    }
}

/// Visits the elements of `value`, nested arrays of `shape`, in row-major order: `visit(element, index,
/// pointer)`. `Err((pointer, reason))` when the nesting does not match the shape.
fn elements(
    value: &Value,
    shape: &[u64],
    pointer: &mut String,
    index: &mut usize,
    visit: &mut Visit<'_>,
) -> Result<(), WalkError> {
    let Some((&len, rest)) = shape.split_first() else {
        let i = *index;
        *index += 1;
        return visit(value, i, pointer);
    };
    let Value::Array(items) = value else {
        return Err((pointer.clone(), format!("must be an array of {len}")));
    };
    if u64::try_from(items.len()).ok() != Some(len) {
        return Err((
            pointer.clone(),
            format!("must have {len} items, not {}", items.len()),
        ));
    }
    for (i, item) in items.iter().enumerate() {
        let at = pointer.len();
        pointer.push('/');
        pointer.push_str(&i.to_string());
        elements(item, rest, pointer, index, visit)?;
        pointer.truncate(at);
    }
    Ok(())
}

/// The value of `value` as an integer, if it is one (`3.0` is).
fn integer(value: &Value) -> Option<i128> {
    if let Some(i) = value.as_i64() {
        return Some(i.into());
    }
    if let Some(u) = value.as_u64() {
        return Some(u.into());
    }
    let f = value.as_f64()?;
    // Whole and well inside i128: the cast is exact.
    (f.fract() == 0.0 && f.abs() < 1e36).then_some(f as i128)
}

impl BoxSpace {
    fn elements(&self) -> Result<u64, Error> {
        let mut count: u64 = 1;
        for (i, &dim) in self.shape.iter().enumerate() {
            if dim == 0 {
                return Err(invalid(
                    format!("/shape/{i}"),
                    "a dimension must be at least 1",
                ));
            }
            count = count
                .checked_mul(dim)
                .filter(|c| *c <= MAX_SPACE_ELEMENTS)
                .ok_or_else(|| {
                    invalid("/shape", format!("more than {MAX_SPACE_ELEMENTS} elements"))
                })?;
        }
        Ok(count)
    }

    fn bound(&self, name: &str, bound: &Value) -> Result<Bound, Error> {
        let number = |v: &Value, at: &str| -> Result<Option<f64>, (String, String)> {
            match v {
                Value::Null => Ok(None),
                Value::Number(n) => {
                    let f = n.as_f64().unwrap_or(f64::NAN);
                    if let Some((min, max)) = self.dtype.int_range() {
                        match integer(v) {
                            Some(i) if (min..=max).contains(&i) => {}
                            _ => {
                                return Err((
                                    at.to_owned(),
                                    format!("must be an integer of {:?}", self.dtype),
                                ))
                            }
                        }
                    }
                    Ok(Some(f))
                }
                _ => Err((at.to_owned(), "must be a number or null".to_owned())),
            }
        };
        let base = format!("/{name}");
        if !bound.is_array() || self.shape.is_empty() {
            return number(bound, &base)
                .map(Bound::All)
                .map_err(|(p, r)| invalid(p, r));
        }
        let mut each = Vec::new();
        let mut pointer = base;
        elements(bound, &self.shape, &mut pointer, &mut 0, &mut |v, _, at| {
            each.push(number(v, at)?);
            Ok(())
        })
        .map_err(|(p, r)| invalid(p, r))?;
        Ok(Bound::Each(each))
    }

    fn bounds(&self) -> Result<(Bound, Bound), Error> {
        let count = self.elements()?;
        let (low, high) = (
            self.bound("low", &self.low)?,
            self.bound("high", &self.high)?,
        );
        for i in 0..usize::try_from(count).unwrap_or(usize::MAX) {
            if let (Some(l), Some(h)) = (low.at(i), high.at(i)) {
                if l > h {
                    return Err(invalid(
                        "/low",
                        format!("element {i}: {l} is above high {h}"),
                    ));
                }
            }
        }
        Ok((low, high))
    }

    fn contains(&self, value: &Value) -> Result<(), Error> {
        let (low, high) = self
            .bounds()
            .map_err(|e| outside("", format!("the space is not valid: {e}")))?;
        let range = self.dtype.int_range();
        let mut pointer = String::new();
        elements(value, &self.shape, &mut pointer, &mut 0, &mut |v, i, at| {
            let fail = |reason: String| Err((at.to_owned(), reason));
            let Some(f) = v.as_f64() else {
                return fail(format!("must be a number, not {}", kind(v)));
            };
            if let Some((min, max)) = range {
                match integer(v) {
                    Some(n) if (min..=max).contains(&n) => {}
                    _ => return fail(format!("{v} is not an integer of {:?}", self.dtype)),
                }
            }
            if low.at(i).is_some_and(|l| f < l) || high.at(i).is_some_and(|h| f > h) {
                let show = |b: Option<f64>| b.map_or("none".to_owned(), |b| b.to_string());
                return fail(format!(
                    "{v} is outside [{}, {}]",
                    show(low.at(i)),
                    show(high.at(i))
                ));
            }
            Ok(())
        })
        .map_err(|(p, r)| outside(&p, r))
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks that `value` is an integer from `start` to `start + n - 1`.
fn in_range(value: &Value, start: i128, n: u64, at: &str) -> Result<(), Error> {
    let end = start + i128::from(n) - 1;
    match integer(value) {
        Some(i) if (start..=end).contains(&i) => Ok(()),
        Some(_) => Err(outside(at, format!("{value} is outside {start}..={end}"))),
        None => Err(outside(
            at,
            format!(
                "must be an integer from {start} to {end}, not {}",
                kind(value)
            ),
        )),
    }
}

/// `value` as an array of `len` items.
fn array_of(value: &Value, len: usize) -> Result<&[Value], Error> {
    match value {
        Value::Array(items) if items.len() == len => Ok(items),
        Value::Array(items) => Err(outside(
            "",
            format!("must have {len} items, not {}", items.len()),
        )),
        other => Err(outside(
            "",
            format!("must be an array of {len}, not {}", kind(other)),
        )),
    }
}

/// `/name` + `rest`: a pointer one member deeper.
fn deeper(name: &str, e: Error) -> Error {
    let prefix = format!("/{}", escape_pointer(name));
    match e {
        Error::OutsideSpace { pointer, reason } => Error::OutsideSpace {
            pointer: prefix + &pointer,
            reason,
        },
        Error::InvalidSpace { pointer, reason } => Error::InvalidSpace {
            pointer: prefix + &pointer,
            reason,
        },
        other => other,
    }
}

impl Space {
    /// `Discrete(n)`: the integers `0..n`.
    #[must_use]
    pub fn discrete(n: u64) -> Self {
        Space::Discrete(DiscreteSpace { n, start: 0 })
    }

    /// A `Box` of `shape` whose every element lies in `[low, high]`.
    #[must_use]
    pub fn bounded(low: f64, high: f64, shape: Vec<u64>, dtype: Dtype) -> Self {
        Space::Box(BoxSpace {
            low: low.into(),
            high: high.into(),
            shape,
            dtype,
        })
    }

    /// `MultiDiscrete(nvec)`.
    #[must_use]
    pub fn multi_discrete(nvec: Vec<u64>) -> Self {
        Space::MultiDiscrete(MultiDiscreteSpace { nvec, start: None })
    }

    /// `MultiBinary(n)`.
    #[must_use]
    pub fn multi_binary(n: u64) -> Self {
        Space::MultiBinary(MultiBinarySpace { n })
    }

    /// `Dict` of the named spaces.
    #[must_use]
    pub fn dict<K: Into<String>>(spaces: impl IntoIterator<Item = (K, Space)>) -> Self {
        Space::Dict(DictSpace {
            spaces: spaces.into_iter().map(|(k, s)| (k.into(), s)).collect(),
        })
    }

    /// The space's `type`: `Box`, `Discrete`, ...
    #[must_use]
    pub fn type_name(&self) -> &'static str {
        match self {
            Space::Box(_) => "Box",
            Space::Discrete(_) => "Discrete",
            Space::MultiDiscrete(_) => "MultiDiscrete",
            Space::MultiBinary(_) => "MultiBinary",
            Space::Dict(_) => "Dict",
        }
    }

    /// Checks the space's own rules (SPEC/1.0 extensions.md §env): `n` and each of `nvec` at least 1, `start`
    /// as long as `nvec`, a `Box`'s bounds of its shape (or one number), `low` not above `high`, bounds of an
    /// integer `dtype` integers of it, at most [`MAX_SPACE_ELEMENTS`] elements, `Dict`s nested at most
    /// [`MAX_SPACE_DEPTH`] deep.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSpace`] with the pointer of the first offending member.
    pub fn check(&self) -> Result<(), Error> {
        self.check_depth(0)
    }

    fn check_depth(&self, depth: usize) -> Result<(), Error> {
        if depth > MAX_SPACE_DEPTH {
            return Err(invalid(
                "",
                format!("Dict spaces nest more than {MAX_SPACE_DEPTH} deep"),
            ));
        }
        self.check_here()?;
        if let Space::Dict(dict) = self {
            for (name, space) in &dict.spaces {
                space
                    .check_depth(depth + 1)
                    .map_err(|e| deeper(&format!("spaces/{name}"), e))?;
            }
        }
        Ok(())
    }

    /// How many `Dict`s deep the space nests (0 for any other space).
    fn depth(&self) -> usize {
        match self {
            Space::Dict(dict) => 1 + dict.spaces.values().map(Space::depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// The rules of this space alone, not of those it holds.
    fn check_here(&self) -> Result<(), Error> {
        match self {
            Space::Box(b) => b.bounds().map(drop),
            Space::Discrete(d) => {
                if d.n == 0 {
                    return Err(invalid("/n", "must be at least 1"));
                }
                if i128::from(d.start) + i128::from(d.n) - 1 > i128::from(i64::MAX) {
                    return Err(invalid("/n", "start + n - 1 must fit a 64-bit integer"));
                }
                Ok(())
            }
            Space::MultiDiscrete(m) => {
                if m.nvec.is_empty() {
                    return Err(invalid("/nvec", "must have at least 1 item"));
                }
                if let Some(i) = m.nvec.iter().position(|n| *n == 0) {
                    return Err(invalid(format!("/nvec/{i}"), "must be at least 1"));
                }
                if u64::try_from(m.nvec.len()).map_or(true, |l| l > MAX_SPACE_ELEMENTS) {
                    return Err(invalid(
                        "/nvec",
                        format!("more than {MAX_SPACE_ELEMENTS} elements"),
                    ));
                }
                if let Some(start) = &m.start {
                    if start.len() != m.nvec.len() {
                        return Err(invalid("/start", "must have as many items as nvec"));
                    }
                    for (i, (s, n)) in start.iter().zip(&m.nvec).enumerate() {
                        if i128::from(*s) + i128::from(*n) - 1 > i128::from(i64::MAX) {
                            return Err(invalid(
                                format!("/nvec/{i}"),
                                "start + n - 1 must fit a 64-bit integer",
                            ));
                        }
                    }
                }
                Ok(())
            }
            Space::MultiBinary(m) => {
                if m.n == 0 || m.n > MAX_SPACE_ELEMENTS {
                    return Err(invalid(
                        "/n",
                        format!("must be from 1 to {MAX_SPACE_ELEMENTS}"),
                    ));
                }
                Ok(())
            }
            Space::Dict(_) => Ok(()),
        }
    }

    /// Checks that `value` is an element of the space (Gymnasium's `Space.contains`): a `Box` value is nested
    /// arrays of its shape (a number for shape `[]`) of numbers within the bounds, integers for an integer
    /// `dtype`; a `Discrete` one an integer of its range; `MultiDiscrete` and `MultiBinary` ones arrays of their
    /// length; a `Dict` one an object with exactly its names.
    ///
    /// ```
    /// use gabp_types::methods::{Dtype, Space};
    /// use serde_json::json;
    ///
    /// let space = Space::dict([
    ///     ("position", Space::bounded(0.0, 15.0, vec![2], Dtype::Float32)),
    ///     ("keys", Space::multi_binary(3)),
    /// ]);
    /// assert!(space.contains(&json!({"position": [1.5, 15], "keys": [0, 1, 1]})).is_ok());
    /// let e = space.contains(&json!({"position": [1.5, 16], "keys": [0, 1, 1]})).unwrap_err();
    /// assert_eq!(e.to_string(), r#""/position/1": 16 is outside [0, 15]"#);
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::OutsideSpace`] with the pointer of the first offending element, relative to `value`.
    pub fn contains(&self, value: &Value) -> Result<(), Error> {
        match self {
            Space::Box(b) => b.contains(value),
            Space::Discrete(d) => in_range(value, d.start.into(), d.n, ""),
            Space::MultiDiscrete(m) => {
                let items = array_of(value, m.nvec.len())?;
                for (i, (item, n)) in items.iter().zip(&m.nvec).enumerate() {
                    let start = m
                        .start
                        .as_ref()
                        .and_then(|s| s.get(i))
                        .copied()
                        .unwrap_or(0);
                    in_range(item, start.into(), *n, &format!("/{i}"))?;
                }
                Ok(())
            }
            Space::MultiBinary(m) => {
                let len = usize::try_from(m.n).unwrap_or(usize::MAX);
                let items = array_of(value, len)?;
                for (i, item) in items.iter().enumerate() {
                    in_range(item, 0, 2, &format!("/{i}"))?;
                }
                Ok(())
            }
            Space::Dict(dict) => {
                let Value::Object(members) = value else {
                    return Err(outside(
                        "",
                        format!("must be an object, not {}", kind(value)),
                    ));
                };
                if let Some(extra) = members.keys().find(|k| !dict.spaces.contains_key(*k)) {
                    return Err(deeper(extra, outside("", "is not a space of the Dict")));
                }
                for (name, space) in &dict.spaces {
                    let Some(member) = members.get(name) else {
                        return Err(deeper(name, outside("", "is missing")));
                    };
                    space.contains(member).map_err(|e| deeper(name, e))?;
                }
                Ok(())
            }
        }
    }

    /// An element of the space, drawn with `next`, a source of uniformly random 64-bit numbers (Gymnasium's
    /// `Space.sample`). Unbounded `Box` elements are drawn from `[-1, 1]` beside their one bound.
    ///
    /// ```
    /// use gabp_types::methods::Space;
    ///
    /// let space = Space::multi_discrete(vec![3, 4]);
    /// let mut state = 7_u64;
    /// let mut next = || { state = state.wrapping_mul(6364136223846793005).wrapping_add(1); state };
    /// for _ in 0..100 {
    ///     assert!(space.contains(&space.sample(&mut next)).is_ok());
    /// }
    /// ```
    pub fn sample(&self, next: &mut dyn FnMut() -> u64) -> Value {
        let mut below = |n: u64| -> u64 { next() % n.max(1) };
        match self {
            Space::Discrete(d) => i128_json(i128::from(d.start) + i128::from(below(d.n))),
            Space::MultiDiscrete(m) => Value::Array(
                m.nvec
                    .iter()
                    .enumerate()
                    .map(|(i, n)| {
                        let start = m
                            .start
                            .as_ref()
                            .and_then(|s| s.get(i))
                            .copied()
                            .unwrap_or(0);
                        i128_json(i128::from(start) + i128::from(below(*n)))
                    })
                    .collect(),
            ),
            Space::MultiBinary(m) => {
                Value::Array((0..m.n).map(|_| Value::from(below(2))).collect())
            }
            Space::Dict(dict) => Value::Object(
                dict.spaces
                    .iter()
                    .map(|(name, space)| (name.clone(), space.sample(next)))
                    .collect(),
            ),
            Space::Box(b) => b.sample(next),
        }
    }
}

fn i128_json(i: i128) -> Value {
    match (i64::try_from(i), u64::try_from(i)) {
        (Ok(v), _) => Value::from(v),
        (_, Ok(v)) => Value::from(v),
        _ => Value::Null,
    }
}

impl BoxSpace {
    fn sample(&self, next: &mut dyn FnMut() -> u64) -> Value {
        let Ok((low, high)) = self.bounds() else {
            return Value::Null;
        };
        let mut index = 0;
        let mut draw = || {
            let i = index;
            index += 1;
            // 53 random bits: a float in [0, 1).
            let unit = (next() >> 11) as f64 / (1_u64 << 53) as f64;
            let (l, h) = match (low.at(i), high.at(i)) {
                (Some(l), Some(h)) => (l, h),
                (Some(l), None) => (l, l + 1.0),
                (None, Some(h)) => (h - 1.0, h),
                (None, None) => (-1.0, 1.0),
            };
            match self.dtype.int_range() {
                Some((min, max)) => {
                    let (l, h) = (l.ceil().max(min as f64), h.floor().min(max as f64));
                    i128_json((l + (unit * (h - l + 1.0)).floor().min(h - l)) as i128)
                }
                None => Value::from(l + unit * (h - l)),
            }
        };
        fn build(shape: &[u64], draw: &mut dyn FnMut() -> Value) -> Value {
            match shape.split_first() {
                None => draw(),
                Some((&len, rest)) => Value::Array((0..len).map(|_| build(rest, draw)).collect()),
            }
        }
        build(&self.shape, &mut draw)
    }
}

/// Params of `env/spaces`: none (an empty object when present).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvSpacesParams {}

/// The answer of `env/spaces`: the spaces of observations and of actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EnvSpacesResult {
    /// What `env/reset` and `env/step` answer as `observation`.
    pub observation: Space,
    /// What `env/step` takes as `action`.
    pub action: Space,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl EnvSpacesResult {
    /// `{observation, action}`.
    #[must_use]
    pub fn new(observation: Space, action: Space) -> Self {
        EnvSpacesResult {
            observation,
            action,
            extra: Map::new(),
        }
    }
}

/// Params of `env/reset`.
///
/// ```
/// use gabp_types::methods::EnvResetParams;
///
/// let p: EnvResetParams = serde_json::from_str(r#"{"seed": 42}"#)?;
/// assert_eq!(p.seed, Some(42));
/// assert!(serde_json::from_str::<EnvResetParams>(r#"{"seed": -1}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvResetParams {
    /// Seeds the episode: the same seed starts the same episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Options of the game's own, as Gymnasium's `reset(options=...)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Map<String, Value>>,
}

/// The answer of `env/reset`: the first observation of the episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EnvResetResult {
    /// An element of the observation space.
    pub observation: Value,
    /// What the game tells beside it.
    pub info: Map<String, Value>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl EnvResetResult {
    /// `{observation, info}`.
    #[must_use]
    pub fn new(observation: Value, info: Map<String, Value>) -> Self {
        EnvResetResult {
            observation,
            info,
            extra: Map::new(),
        }
    }
}

/// Params of `env/step`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvStepParams {
    /// An element of the action space.
    pub action: Value,
}

/// The answer of `env/step`, Gymnasium's `(observation, reward, terminated, truncated, info)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EnvStepResult {
    /// An element of the observation space, after the step.
    pub observation: Value,
    /// The reward of the step.
    pub reward: f64,
    /// Whether the episode reached an end of the task (won or lost).
    pub terminated: bool,
    /// Whether the episode was cut short (a step limit).
    pub truncated: bool,
    /// What the game tells beside it.
    pub info: Map<String, Value>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl EnvStepResult {
    /// A step that neither terminated nor was truncated, with no info.
    #[must_use]
    pub fn new(observation: Value, reward: f64) -> Self {
        EnvStepResult {
            observation,
            reward,
            terminated: false,
            truncated: false,
            info: Map::new(),
            extra: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn space(v: Value) -> Result<Space, String> {
        serde_json::from_value::<Space>(v).map_err(|e| e.to_string())
    }

    #[test]
    fn spaces_check_their_own_rules() {
        for ok in [
            json!({"type": "Discrete", "n": 5}),
            json!({"type": "Discrete", "n": 3, "start": -1}),
            json!({"type": "Box", "low": 0, "high": 15, "shape": [8], "dtype": "float32"}),
            json!({"type": "Box", "low": null, "high": null, "shape": []}),
            json!({"type": "Box", "low": [[0, 1]], "high": [[1, 1]], "shape": [1, 2], "dtype": "uint8"}),
            json!({"type": "MultiDiscrete", "nvec": [3, 2], "start": [0, -5]}),
            json!({"type": "MultiBinary", "n": 4}),
            json!({"type": "Dict", "spaces": {"a": {"type": "Discrete", "n": 2}}}),
        ] {
            let s = space(ok.clone()).unwrap_or_else(|e| panic!("{ok}: {e}"));
            let again = serde_json::to_value(&s).unwrap();
            assert_eq!(space(again).unwrap(), s);
        }
        for (bad, needle) in [
            (json!({"type": "Discrete", "n": 0}), "/n"),
            (json!({"type": "Discrete", "n": 2, "extra": 1}), "extra"),
            (json!({"type": "Tuple", "spaces": []}), "Tuple"),
            (
                json!({"type": "Box", "low": 0, "high": 1, "shape": [0]}),
                "/shape/0",
            ),
            (
                json!({"type": "Box", "low": [0, 0], "high": 1, "shape": [3]}),
                "/low",
            ),
            (
                json!({"type": "Box", "low": 2, "high": 1, "shape": [1]}),
                "above",
            ),
            (
                json!({"type": "Box", "low": 0.5, "high": 1, "shape": [1], "dtype": "int8"}),
                "/low",
            ),
            (
                json!({"type": "Box", "low": 0, "high": 300, "shape": [1], "dtype": "uint8"}),
                "/high",
            ),
            (
                json!({"type": "Box", "low": "0", "high": 1, "shape": [1]}),
                "/low",
            ),
            (
                json!({"type": "Box", "low": 0, "high": 1, "shape": [1048577]}),
                "/shape",
            ),
            (json!({"type": "MultiDiscrete", "nvec": []}), "/nvec"),
            (json!({"type": "MultiDiscrete", "nvec": [2, 0]}), "/nvec/1"),
            (
                json!({"type": "MultiDiscrete", "nvec": [2], "start": [0, 0]}),
                "/start",
            ),
            (json!({"type": "MultiBinary", "n": 0}), "/n"),
            (
                json!({"type": "Dict", "spaces": {"a": {"type": "Discrete", "n": 0}}}),
                "/n",
            ),
        ] {
            let e = space(bad.clone()).expect_err(&bad.to_string());
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn contains_names_the_offending_element() {
        let boxed = space(json!({
            "type": "Box", "low": [[0, null], [0, 0]], "high": 10, "shape": [2, 2], "dtype": "int32"
        }))
        .unwrap();
        assert!(boxed.contains(&json!([[0, -99], [10, 3]])).is_ok());
        for (value, pointer) in [
            (json!([[0, 1], [11, 3]]), "/1/0"),
            (json!([[0, 1], [1.5, 3]]), "/1/0"),
            (json!([[0, 1], [1, 3, 4]]), "/1"),
            (json!([[0, 1]]), ""),
            (json!([[0, 1], [1, "3"]]), "/1/1"),
            (json!(3), ""),
        ] {
            match boxed.contains(&value) {
                Err(Error::OutsideSpace { pointer: p, .. }) => assert_eq!(p, pointer, "{value}"),
                other => panic!("{value}: {other:?}"),
            }
        }
        let scalar = Space::bounded(-1.0, 1.0, vec![], Dtype::Float64);
        assert!(scalar.contains(&json!(0.5)).is_ok());
        assert!(scalar.contains(&json!([0.5])).is_err());

        let d = space(json!({"type": "Discrete", "n": 3, "start": -1})).unwrap();
        assert!(d.contains(&json!(-1)).is_ok() && d.contains(&json!(1.0)).is_ok());
        assert!(d.contains(&json!(2)).is_err() && d.contains(&json!(true)).is_err());
        assert!(d.contains(&json!(u64::MAX)).is_err());

        let m = Space::multi_discrete(vec![2, 3]);
        assert!(m.contains(&json!([1, 2])).is_ok());
        assert!(
            matches!(m.contains(&json!([1, 3])), Err(Error::OutsideSpace { pointer, .. }) if pointer == "/1")
        );
        assert!(m.contains(&json!([1])).is_err());

        let b = Space::multi_binary(2);
        assert!(b.contains(&json!([0, 1])).is_ok());
        assert!(b.contains(&json!([0, 2])).is_err() && b.contains(&json!([true, false])).is_err());

        let dict = Space::dict([("a~b", Space::discrete(2))]);
        assert!(dict.contains(&json!({"a~b": 1})).is_ok());
        assert!(
            matches!(dict.contains(&json!({"a~b": 2})), Err(Error::OutsideSpace { pointer, .. }) if pointer == "/a~0b")
        );
        assert!(
            matches!(dict.contains(&json!({})), Err(Error::OutsideSpace { pointer, .. }) if pointer == "/a~0b")
        );
        assert!(
            matches!(dict.contains(&json!({"a~b": 1, "c": 0})), Err(Error::OutsideSpace { pointer, .. }) if pointer == "/c")
        );
    }

    #[test]
    fn samples_are_in_their_space() {
        let spaces = [
            space(json!({"type": "Box", "low": [-5, null], "high": [5, null], "shape": [2]}))
                .unwrap(),
            space(json!({"type": "Box", "low": 0, "high": 255, "shape": [2, 3], "dtype": "uint8"}))
                .unwrap(),
            space(json!({"type": "Box", "low": null, "high": null, "shape": [], "dtype": "int64"}))
                .unwrap(),
            space(json!({"type": "Discrete", "n": 3, "start": -1})).unwrap(),
            space(json!({"type": "MultiDiscrete", "nvec": [3, 2], "start": [0, -5]})).unwrap(),
            Space::multi_binary(5),
            Space::dict([("a", Space::discrete(4)), ("b", Space::multi_binary(2))]),
        ];
        let mut state = 1_u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state
        };
        for s in &spaces {
            for _ in 0..200 {
                let v = s.sample(&mut next);
                assert!(s.contains(&v).is_ok(), "{s:?}: {v}");
            }
        }
    }

    #[test]
    fn dicts_nest_only_so_deep() {
        let mut s = Space::discrete(2);
        for _ in 0..MAX_SPACE_DEPTH {
            s = Space::dict([("x", s)]);
        }
        assert!(s.check().is_ok());
        let deeper = Space::dict([("x", s)]);
        assert!(deeper.check().is_err());
    }

    #[test]
    fn params_and_results() {
        assert!(serde_json::from_value::<EnvStepParams>(json!({})).is_err());
        assert!(serde_json::from_value::<EnvStepParams>(json!({"action": 1, "x": 1})).is_err());
        assert!(serde_json::from_value::<EnvResetParams>(json!({"seed": 1.5})).is_err());
        assert!(serde_json::from_value::<EnvResetParams>(json!({"options": 1})).is_err());
        let r: EnvStepResult = serde_json::from_value(
            json!({"observation": [1], "reward": -0.5, "terminated": false, "truncated": true, "info": {}}),
        )
        .unwrap();
        assert!(r.truncated && r.reward == -0.5);
        assert!(
            serde_json::from_value::<EnvStepResult>(json!({"observation": 1, "reward": 0}))
                .is_err()
        );
        assert!(serde_json::from_value::<EnvSpacesParams>(json!({"x": 1})).is_err());
    }
}
