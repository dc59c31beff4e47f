//! The elements of a space (SPEC/1.0 extensions.md §env): whether a value is one (Gymnasium's
//! `Space.contains`), and drawing one at random (`Space.sample`).

use serde_json::Value;

use super::check::{deeper, elements, integer};
use super::space::{BoxSpace, Space};
use crate::json_kind::json_type_name;
use crate::Error;

fn outside(pointer: &str, reason: impl Into<String>) -> Error {
    Error::OutsideSpace {
        pointer: pointer.to_owned(),
        reason: reason.into(),
    }
}

impl BoxSpace {
    fn contains(&self, value: &Value) -> Result<(), Error> {
        let (low, high) = self
            .bounds()
            .map_err(|e| outside("", format!("the space is not valid: {e}")))?;
        let range = self.dtype.int_range();
        let mut pointer = String::new();
        elements(value, &self.shape, &mut pointer, &mut 0, &mut |v, i, at| {
            let fail = |reason: String| Err((at.to_owned(), reason));
            let Some(f) = v.as_f64() else {
                return fail(format!("must be a number, not {}", json_type_name(v)));
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
                json_type_name(value)
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
            format!("must be an array of {len}, not {}", json_type_name(other)),
        )),
    }
}

impl Space {
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
                    in_range(item, m.start_at(i).into(), *n, &format!("/{i}"))?;
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
                        format!("must be an object, not {}", json_type_name(value)),
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
                    .map(|(i, n)| i128_json(i128::from(m.start_at(i)) + i128::from(below(*n))))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::Dtype;
    use serde_json::json;

    fn space(v: Value) -> Result<Space, String> {
        serde_json::from_value::<Space>(v).map_err(|e| e.to_string())
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
}
