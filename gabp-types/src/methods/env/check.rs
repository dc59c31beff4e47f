//! A space's own rules (SPEC/1.0 extensions.md §env), checked as it is read, and the walk over a `Box`'s
//! nested arrays that its bounds and its elements share.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::space::{
    BoxSpace, DictSpace, DiscreteSpace, MultiBinarySpace, MultiDiscreteSpace, Space,
    MAX_SPACE_DEPTH, MAX_SPACE_ELEMENTS,
};
use crate::pointer::escape_pointer;
use crate::Error;

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

/// A failure while walking nested arrays: the pointer and why.
pub(super) type WalkError = (String, String);

/// What [`elements`] calls on each element: `(element, index, pointer)`.
pub(super) type Visit<'a> = dyn FnMut(&Value, usize, &str) -> Result<(), WalkError> + 'a;

/// A bound of a `Box`, flattened: one for every element, or one per element in row-major order.
pub(super) enum Bound {
    All(Option<f64>),
    Each(Vec<Option<f64>>),
}

impl Bound {
    pub(super) fn at(&self, index: usize) -> Option<f64> {
        match self {
            Bound::All(b) => *b,
            Bound::Each(each) => each.get(index).copied().flatten(),
        }
    }
}

/// Visits the elements of `value`, nested arrays of `shape`, in row-major order: `visit(element, index,
/// pointer)`. `Err((pointer, reason))` when the nesting does not match the shape.
pub(super) fn elements(
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
pub(super) fn integer(value: &Value) -> Option<i128> {
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

    pub(super) fn bounds(&self) -> Result<(Bound, Bound), Error> {
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
}

/// `/name` + `rest`: a pointer one member deeper.
pub(super) fn deeper(name: &str, e: Error) -> Error {
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
    fn dicts_nest_only_so_deep() {
        let mut s = Space::discrete(2);
        for _ in 0..MAX_SPACE_DEPTH {
            s = Space::dict([("x", s)]);
        }
        assert!(s.check().is_ok());
        let deeper = Space::dict([("x", s)]);
        assert!(deeper.check().is_err());
    }
}
