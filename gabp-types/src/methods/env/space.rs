//! The spaces of the `env` extension (SPEC/1.0 extensions.md §env): Gymnasium's `Box`, `Discrete`,
//! `MultiDiscrete`, `MultiBinary` and `Dict`, with their parameter names.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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

impl MultiDiscreteSpace {
    /// The smallest value of element `i` (0 when `start` is not given).
    pub(crate) fn start_at(&self, i: usize) -> i64 {
        self.start
            .as_ref()
            .and_then(|s| s.get(i))
            .copied()
            .unwrap_or(0)
    }
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
}
