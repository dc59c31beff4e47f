//! The generated files of the npm package `gabp-schemas` (`packages/npm/gabp-schemas/`).
//!
//! - `schemas/**`: every file of `SCHEMA/1.0/`, rewritten for JSON Schema draft 2020-12 by
//!   [`to_draft_2020_12`] (the package validates with ajv's draft 2020-12 class).
//! - `catalog.json`: which schemas apply to which message, taken from
//!   [`gabp_types::schema::applicable_schemas`] so that the package and `gabp validate` agree.
//! - `types.d.ts`: TypeScript declarations of the standard methods' params and results and of the event
//!   payloads (see [`crate::ts`]).
//! - `package.json`, with the workspace version, and `LICENSE`, a copy of `LICENSES/CODE-LICENSE.txt`.
//!
//! Everything else in the package (`index.js`, `index.mjs`, `index.d.ts`, `README.md`, `test/`) is source.

use gabp_types::methods::{self, SchemaVersion};
use gabp_types::schema::{applicable_schemas, SchemaFile, DRAFT_07};
use serde_json::{json, Map, Value};

/// The package directory, relative to the repository root.
pub const PACKAGE_DIR: &str = "packages/npm/gabp-schemas";

/// The directory of the generated schemas inside the package.
pub const SCHEMAS_DIR: &str = "schemas";

/// The meta-schema the package's schemas declare.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Versions of the package's dependencies (`package.json`).
const AJV: &str = "^8.17.1";
const AJV_FORMATS: &str = "^3.0.1";
const TYPESCRIPT: &str = "5.9.3";

/// One generated file of the package.
#[derive(Debug, Clone, PartialEq)]
pub struct NpmFile {
    /// Path relative to the package directory, with `/` separators.
    pub path: String,
    /// The file's exact text.
    pub text: String,
}

/// Every generated file of the package, from the schema files of `SCHEMA/1.0/` and the license text.
pub fn files(schemas: &[SchemaFile], license: &str) -> Result<Vec<NpmFile>, String> {
    let mut out = Vec::new();
    let mut converted = Vec::new();
    for file in schemas {
        let schema = to_draft_2020_12(&file.schema).map_err(|e| format!("{}: {e}", file.path))?;
        out.push(NpmFile {
            path: format!("{SCHEMAS_DIR}/{}", file.path),
            text: render(&schema),
        });
        converted.push(SchemaFile {
            path: file.path.clone(),
            schema,
        });
    }
    let catalog = catalog(schemas)?;
    out.push(NpmFile {
        path: "catalog.json".into(),
        text: render(&catalog),
    });
    out.push(NpmFile {
        path: "types.d.ts".into(),
        text: crate::ts::declarations(&converted, &catalog)?,
    });
    out.push(NpmFile {
        path: "package.json".into(),
        text: package_json(),
    });
    out.push(NpmFile {
        path: "LICENSE".into(),
        text: license.to_owned(),
    });
    Ok(out)
}

fn render(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// Rewrites a draft-07 schema as a draft 2020-12 schema that accepts exactly the same instances:
/// `definitions` becomes `$defs` and references to it follow. Keywords whose meaning changed between the
/// drafts and that this rewrite does not translate (`dependencies`, `additionalItems`, an array `items`,
/// plain-name `$id` fragments, `$ref` beside assertions) are refused rather than copied with a new meaning.
pub fn to_draft_2020_12(schema: &Value) -> Result<Value, String> {
    let mut schema = schema.clone();
    let Value::Object(root) = &mut schema else {
        return Err("the root schema is not an object".into());
    };
    match root.get("$schema").and_then(Value::as_str) {
        Some(DRAFT_07) => {}
        other => return Err(format!("$schema is {other:?}, expected {DRAFT_07:?}")),
    }
    root.insert("$schema".into(), json!(DRAFT_2020_12));
    convert(&mut schema, "#")?;
    Ok(schema)
}

fn convert(schema: &mut Value, at: &str) -> Result<(), String> {
    let Value::Object(map) = schema else {
        return Ok(());
    };
    for key in [
        "dependencies",
        "additionalItems",
        "$recursiveRef",
        "$recursiveAnchor",
    ] {
        if map.contains_key(key) {
            return Err(format!("{at}: `{key}` is not translated to draft 2020-12"));
        }
    }
    if map.get("items").is_some_and(Value::is_array) {
        return Err(format!(
            "{at}: an array `items` is not translated to draft 2020-12"
        ));
    }
    if let Some(id) = map.get("$id").and_then(Value::as_str) {
        if id
            .split_once('#')
            .is_some_and(|(_, fragment)| !fragment.is_empty())
        {
            return Err(format!("{at}: `$id` {id:?} has a fragment"));
        }
    }
    if let Some(definitions) = map.remove("definitions") {
        if map.contains_key("$defs") {
            return Err(format!("{at}: both `definitions` and `$defs`"));
        }
        map.insert("$defs".into(), definitions);
    }
    if let Some(Value::String(reference)) = map.get_mut("$ref") {
        if let Some(rest) = reference.strip_prefix("#/definitions/") {
            *reference = format!("#/$defs/{rest}");
        }
    }
    if map.contains_key("$ref") {
        if let Some(extra) = map.keys().find(|k| {
            !matches!(
                k.as_str(),
                "$ref" | "$id" | "$schema" | "$comment" | "title" | "description"
            )
        }) {
            return Err(format!(
                "{at}: `{extra}` beside `$ref` is ignored by draft-07 but applies in draft 2020-12"
            ));
        }
    }
    for (key, child) in map.iter_mut() {
        let here = format!("{at}/{key}");
        match key.as_str() {
            "properties" | "patternProperties" | "$defs" => {
                if let Value::Object(children) = child {
                    for (name, sub) in children.iter_mut() {
                        convert(sub, &format!("{here}/{name}"))?;
                    }
                }
            }
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames" => convert(child, &here)?,
            "allOf" | "anyOf" | "oneOf" => {
                if let Value::Array(children) = child {
                    for (i, sub) in children.iter_mut().enumerate() {
                        convert(sub, &format!("{here}/{i}"))?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// `catalog.json`: the protocol and schema line, every schema file, and which schema applies to what:
/// `methods` maps each standard method to its request and response schema, `channels` an event channel to
/// its payload schema, `channelPrefixes` a channel prefix (such as `attention/`) to its payload schema.
fn catalog(schemas: &[SchemaFile]) -> Result<Value, String> {
    let mut methods = Map::new();
    for file in schemas {
        if !file.path.ends_with(".request.json") {
            continue;
        }
        let method = file.schema["properties"]["method"]["const"]
            .as_str()
            .ok_or_else(|| format!("{}: no `method` const", file.path))?;
        let request = schema_for(&json!({ "type": "request", "method": method }), None);
        let response = schema_for(&json!({ "type": "response" }), Some(method));
        match (request, response) {
            (Some(request), Some(response)) if request == file.path => {
                methods.insert(
                    method.into(),
                    json!({ "request": request, "response": response }),
                );
            }
            _ => {
                return Err(format!(
                    "{}: gabp_types::schema::applicable_schemas does not apply it to `{method}` requests \
                     with a response schema",
                    file.path
                ))
            }
        }
    }
    let mut channels = Map::new();
    for &channel in methods::EXTENSION_CHANNELS {
        channels.insert(channel.into(), json!(payload_schema(channel)?));
    }
    let mut prefixes = Map::new();
    prefixes.insert(
        "attention/".into(),
        json!(payload_schema("attention/opened")?),
    );
    let mut names: Vec<&str> = schemas.iter().map(|f| f.path.as_str()).collect();
    names.sort_unstable();
    Ok(json!({
        "protocolVersion": gabp_types::PROTOCOL_VERSION,
        "schemaVersion": SchemaVersion::CURRENT,
        "schemas": names,
        "methods": methods,
        "channels": channels,
        "channelPrefixes": prefixes,
    }))
}

/// The schema `applicable_schemas` adds to the envelope for `message`, if any.
fn schema_for(message: &Value, response_to: Option<&str>) -> Option<String> {
    applicable_schemas(message, response_to)
        .into_iter()
        .find(|(path, _)| path != "envelope.schema.json")
        .map(|(path, _)| path)
}

fn payload_schema(channel: &str) -> Result<String, String> {
    let message = json!({ "type": "event", "channel": channel });
    match applicable_schemas(&message, None).as_slice() {
        [_, (path, "/payload")] => Ok(path.clone()),
        _ => Err(format!(
            "gabp_types::schema::applicable_schemas has no payload schema for channel {channel}"
        )),
    }
}

/// A JSON value whose object members keep the order they are given in.
enum Ordered {
    Value(Value),
    Object(Vec<(&'static str, Ordered)>),
}

impl Ordered {
    fn render(&self, indent: usize) -> String {
        match self {
            Ordered::Value(value) => serde_json::to_string_pretty(value)
                .unwrap_or_default()
                .replace('\n', &format!("\n{}", "  ".repeat(indent))),
            Ordered::Object(members) => {
                let pad = "  ".repeat(indent + 1);
                let body: Vec<String> = members
                    .iter()
                    .map(|(key, value)| format!("{pad}{key:?}: {}", value.render(indent + 1)))
                    .collect();
                format!("{{\n{}\n{}}}", body.join(",\n"), "  ".repeat(indent))
            }
        }
    }
}

/// `package.json`, its members in the usual order; the order of the `exports` conditions matters (`types`
/// first, for TypeScript).
fn package_json() -> String {
    use Ordered::{Object, Value as V};
    let exports = Object(vec![
        (
            ".",
            Object(vec![
                ("types", V(json!("./index.d.ts"))),
                ("import", V(json!("./index.mjs"))),
                ("require", V(json!("./index.js"))),
            ]),
        ),
        ("./catalog.json", V(json!("./catalog.json"))),
        ("./schemas/*", V(json!("./schemas/*"))),
        ("./package.json", V(json!("./package.json"))),
    ]);
    let package = Object(vec![
        ("name", V(json!("gabp-schemas"))),
        ("version", V(json!(env!("CARGO_PKG_VERSION")))),
        ("description", V(json!("JSON Schemas (draft 2020-12) of the Game Agent Bridge Protocol gabp/1, with ajv validators and TypeScript declarations"))),
        ("keywords", V(json!(["gabp", "game-agent-bridge-protocol", "json-schema", "ajv", "validation"]))),
        ("license", V(json!("Apache-2.0"))),
        ("repository", V(json!({ "type": "git", "url": "git+https://github.com/gabp-rs/gabp-rs.git", "directory": PACKAGE_DIR }))),
        ("main", V(json!("./index.js"))),
        ("types", V(json!("./index.d.ts"))),
        ("exports", exports),
        ("files", V(json!(["index.js", "index.mjs", "index.d.ts", "types.d.ts", "catalog.json", "schemas/"]))),
        ("engines", V(json!({ "node": ">=18" }))),
        ("scripts", V(json!({ "test": "node --test" }))),
        ("dependencies", V(json!({ "ajv": AJV, "ajv-formats": AJV_FORMATS }))),
        ("devDependencies", V(json!({ "typescript": TYPESCRIPT }))),
    ]);
    let mut text = package.render(0);
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_become_defs_and_references_follow() {
        let draft7 = json!({
            "$schema": DRAFT_07,
            "oneOf": [{ "$ref": "#/definitions/a" }],
            "definitions": { "a": { "properties": { "definitions": { "type": "string" } } } }
        });
        let converted = to_draft_2020_12(&draft7).unwrap();
        assert_eq!(
            converted,
            json!({
                "$schema": DRAFT_2020_12,
                "oneOf": [{ "$ref": "#/$defs/a" }],
                "$defs": { "a": { "properties": { "definitions": { "type": "string" } } } }
            })
        );
    }

    #[test]
    fn keywords_whose_meaning_changed_are_refused() {
        for body in [
            json!({ "items": [{ "type": "string" }] }),
            json!({ "properties": { "a": { "additionalItems": false } } }),
            json!({ "dependencies": { "a": ["b"] } }),
            json!({ "anyOf": [{ "$ref": "#/definitions/a", "type": "string" }] }),
            json!({ "$defs": {}, "definitions": {} }),
            json!({ "not": { "$id": "#plain-name" } }),
        ] {
            let mut schema = body.clone();
            schema["$schema"] = json!(DRAFT_07);
            assert!(to_draft_2020_12(&schema).is_err(), "{body} was accepted");
        }
        assert!(to_draft_2020_12(&json!({ "$schema": DRAFT_2020_12 })).is_err());
    }

    #[test]
    fn every_generated_schema_converts_without_definitions_left() {
        for file in gabp_types::schema::schema_files() {
            let converted = to_draft_2020_12(&file.schema).unwrap();
            let text = converted.to_string();
            assert!(!text.contains("\"definitions\""), "{}", file.path);
            assert!(!text.contains("#/definitions/"), "{}", file.path);
            assert_eq!(converted["$id"], file.schema["$id"], "{}", file.path);
        }
    }

    #[test]
    fn catalog_covers_every_standard_method_and_channel() {
        let catalog = catalog(&gabp_types::schema::schema_files()).unwrap();
        let mut standard: Vec<&str> = methods::CORE_METHODS.to_vec();
        standard.extend(methods::EXTENSION_METHODS);
        let listed: Vec<&str> = catalog["methods"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut expected = standard.clone();
        expected.sort_unstable();
        assert_eq!(listed, expected);
        assert_eq!(
            catalog["methods"]["session/hello"]["response"],
            "methods/session.welcome.response.json"
        );
        assert_eq!(
            catalog["channelPrefixes"]["attention/"],
            "events/attention.payload.schema.json"
        );
        assert_eq!(
            catalog["channels"]["tools/progress"],
            "events/tools-progress.payload.schema.json"
        );
        for name in catalog["schemas"].as_array().unwrap() {
            assert!(name.as_str().is_some_and(|n| n.ends_with(".json")));
        }
    }

    #[test]
    fn package_json_is_json_with_the_workspace_version() {
        let value: Value = serde_json::from_str(&package_json()).unwrap();
        assert_eq!(value["name"], "gabp-schemas");
        assert_eq!(value["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(value["license"], "Apache-2.0");
        assert_eq!(value["scripts"]["test"], "node --test");
        assert_eq!(value["exports"]["."]["require"], "./index.js");
        let text = package_json();
        let exports = text.split("\"exports\"").nth(1).unwrap();
        let conditions: Vec<&str> = exports
            .lines()
            .filter_map(|l| l.trim().strip_prefix('"'))
            .filter_map(|l| l.split('"').next())
            .filter(|k| ["types", "import", "require"].contains(k))
            .collect();
        assert_eq!(conditions, ["types", "import", "require"]);
    }
}
