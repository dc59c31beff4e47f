//! How the MCP front names and lists tools: GABS's `toolNormalization` and `stripOutputSchema`.

use serde_json::{Map, Value};

use super::{field, object};
use crate::HubError;

/// `toolNormalization`: whether the hub's own tools are listed under names strict clients accept
/// (`games_list`) or under GABS's old dotted names (`games.list`), and how long a listed name may be.
/// Every form stays callable either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolNaming {
    /// `enableOpenAINormalization` (default `true`): list `games_list`, with the dotted name in the tool's
    /// `_meta.originalName`; `false` lists `games.list`.
    pub normalize: bool,
    /// `maxToolNameLength` (default 64): the longest mirrored game tool name; longer ones end in a hash.
    pub max_name_len: usize,
    /// `preserveOriginalName` (default `true`): a normalized tool's description ends with
    /// `(Original: games.list)`.
    pub preserve_original: bool,
}

impl ToolNaming {
    /// The shortest `maxToolNameLength` accepted: every hub tool name fits, and a mirrored name keeps a
    /// readable start before its hash.
    pub const MIN_NAME_LEN: usize = 32;
    /// The longest `maxToolNameLength` accepted: the longest tool name MCP allows.
    pub const MAX_NAME_LEN: usize = 128;
}

impl Default for ToolNaming {
    fn default() -> Self {
        ToolNaming {
            normalize: true,
            max_name_len: crate::names::MAX_NAME,
            preserve_original: true,
        }
    }
}

fn flag(obj: &Map<String, Value>, at: &str, key: &str) -> Result<Option<bool>, HubError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(field(format!("{at}/{key}"), "expected true or false")),
    }
}

/// Reads `toolNormalization` from the top object.
pub(super) fn read_tool_naming(top: &Map<String, Value>) -> Result<ToolNaming, HubError> {
    let mut naming = ToolNaming::default();
    let Some(section) = top.get("toolNormalization").filter(|v| !v.is_null()) else {
        return Ok(naming);
    };
    let at = "/toolNormalization";
    let section = object(section, at)?;
    if let Some(b) = flag(section, at, "enableOpenAINormalization")? {
        naming.normalize = b;
    }
    if let Some(b) = flag(section, at, "preserveOriginalName")? {
        naming.preserve_original = b;
    }
    match section.get("maxToolNameLength") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64() {
            // GABS replaces 0 with the default.
            Some(0) => {}
            Some(n)
                if (ToolNaming::MIN_NAME_LEN as u64..=ToolNaming::MAX_NAME_LEN as u64)
                    .contains(&n) =>
            {
                naming.max_name_len = n as usize;
            }
            _ => {
                return Err(field(
                    format!("{at}/maxToolNameLength"),
                    format!(
                        "a whole number from {} to {} (or 0 for the default, 64)",
                        ToolNaming::MIN_NAME_LEN,
                        ToolNaming::MAX_NAME_LEN
                    ),
                ))
            }
        },
    }
    Ok(naming)
}

/// Reads `stripOutputSchema` from the top object.
pub(super) fn read_strip_output_schema(top: &Map<String, Value>) -> Result<bool, HubError> {
    Ok(flag(top, "", "stripOutputSchema")?.unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn naming(value: Value) -> Result<ToolNaming, HubError> {
        read_tool_naming(value.as_object().unwrap())
    }

    #[test]
    fn defaults_are_gabs_defaults() {
        let n = naming(json!({})).unwrap();
        assert!(n.normalize && n.preserve_original);
        assert_eq!(n.max_name_len, 64);
        let n = naming(json!({"toolNormalization": {"maxToolNameLength": 0}})).unwrap();
        assert_eq!(n.max_name_len, 64);
    }

    #[test]
    fn settings_are_read() {
        let n = naming(json!({"toolNormalization": {
            "enableOpenAINormalization": false, "maxToolNameLength": 40, "preserveOriginalName": false
        }}))
        .unwrap();
        assert_eq!(
            n,
            ToolNaming {
                normalize: false,
                max_name_len: 40,
                preserve_original: false
            }
        );
    }

    #[test]
    fn bad_values_name_their_field() {
        for (value, pointer) in [
            (
                json!({"toolNormalization": {"maxToolNameLength": 8}}),
                "/toolNormalization/maxToolNameLength",
            ),
            (
                json!({"toolNormalization": {"maxToolNameLength": "64"}}),
                "/toolNormalization/maxToolNameLength",
            ),
            (
                json!({"toolNormalization": {"enableOpenAINormalization": "yes"}}),
                "/toolNormalization/enableOpenAINormalization",
            ),
            (json!({"toolNormalization": []}), "/toolNormalization"),
        ] {
            match naming(value) {
                Err(HubError::ConfigField { pointer: p, .. }) => assert_eq!(p, pointer),
                other => panic!("{pointer}: {other:?}"),
            }
        }
        let top = json!({"stripOutputSchema": 1});
        match read_strip_output_schema(top.as_object().unwrap()) {
            Err(HubError::ConfigField { pointer, .. }) => assert_eq!(pointer, "/stripOutputSchema"),
            other => panic!("{other:?}"),
        }
    }
}
