//! `ecs/schema`: the JSON Schema (draft 2020-12) of a registered type, in the shape bevy_reflect's serializer
//! writes and its deserializer reads. Adapted from `bevy_remote`'s `schemas/json_schema.rs`, with standard
//! keywords (`type: number`, `$ref` to `$defs`).

use std::any::TypeId;
use std::collections::{BTreeMap, VecDeque};

use bevy_ecs::prelude::*;
use bevy_ecs::reflect::{ReflectComponent, ReflectResource};
use bevy_reflect::enums::VariantInfo;
use bevy_reflect::prelude::ReflectDefault;
use bevy_reflect::{TypeInfo, TypeRegistration, TypeRegistry, UnnamedField};
use gabp_session::schemars::JsonSchema;
use gabp_session::server::{CallError, Tool};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{registration, registry, READ_ONLY};

/// The most types one schema defines; deeper types are left open (`{}`).
const MAX_DEFS: usize = 256;

pub(super) fn tools() -> [Tool; 1] {
    [Tool::on_main_thread("ecs/schema", schema)
        .description(
            "The JSON Schema of a registered type (by type path): the values ecs/get returns and ecs/insert, \
             ecs/spawn, ecs/mutate and ecs/set_resource take.",
        )
        .tags([READ_ONLY])]
}

/// Arguments of `ecs/schema`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SchemaArgs {
    /// The type's path, such as `bevy_transform::components::transform::Transform`.
    type_path: String,
}

/// Result of `ecs/schema`.
#[derive(Serialize, JsonSchema)]
struct TypeSchema {
    /// The type's JSON Schema; the types it uses are in its `$defs`.
    schema: Value,
    /// What the type is registered as: `Component`, `Resource`, `Default`.
    reflect: Vec<String>,
}

fn schema(world: &mut World, args: SchemaArgs) -> Result<TypeSchema, CallError> {
    let registry = registry(world)?;
    let registry = registry.read();
    let root = registration(&registry, "type_path", &args.type_path)?;
    let mut reflect = Vec::new();
    if root.data::<ReflectComponent>().is_some() && root.data::<ReflectResource>().is_none() {
        reflect.push("Component".to_owned());
    }
    if root.data::<ReflectResource>().is_some() {
        reflect.push("Resource".to_owned());
    }
    if root.data::<ReflectDefault>().is_some() {
        reflect.push("Default".to_owned());
    }
    let mut writer = Writer {
        registry: &registry,
        defs: BTreeMap::new(),
        pending: VecDeque::new(),
    };
    let mut schema = writer.definition(root.type_info());
    while let Some((path, info)) = writer.pending.pop_front() {
        let def = writer.definition(info);
        writer.defs.insert(path, def);
    }
    if let Value::Object(map) = &mut schema {
        map.insert(
            "$schema".into(),
            "https://json-schema.org/draft/2020-12/schema".into(),
        );
        if !writer.defs.is_empty() {
            map.insert(
                "$defs".into(),
                Value::Object(writer.defs.into_iter().collect()),
            );
        }
    }
    Ok(TypeSchema { schema, reflect })
}

struct Writer<'r> {
    registry: &'r TypeRegistry,
    /// Definitions by type path (`Null` while queued).
    defs: BTreeMap<String, Value>,
    pending: VecDeque<(String, &'static TypeInfo)>,
}

impl Writer<'_> {
    /// The schema of a value of type `type_id` (`path`) where another type uses it: primitives inline,
    /// others by `$ref`.
    fn reference(&mut self, type_id: TypeId, path: &str) -> Value {
        let Some(info) = self.registry.get(type_id).map(TypeRegistration::type_info) else {
            return json!({ "description": format!("`{path}` is not registered") });
        };
        if let TypeInfo::Opaque(_) = info {
            return opaque(info.type_path());
        }
        if let Some(inner) = option_of(info) {
            let inner = self.reference(inner.type_id(), inner.type_path());
            return json!({ "anyOf": [{ "type": "null" }, inner] });
        }
        if !self.defs.contains_key(path) {
            if self.defs.len() >= MAX_DEFS {
                return json!({ "description": format!("`{path}`: not expanded (too many types)") });
            }
            self.defs.insert(path.to_owned(), Value::Null);
            self.pending.push_back((path.to_owned(), info));
        }
        json!({ "$ref": format!("#/$defs/{}", path.replace('~', "~0").replace('/', "~1")) })
    }

    fn unnamed(&mut self, fields: impl Iterator<Item = &'static UnnamedField>) -> Vec<Value> {
        fields
            .map(|f| self.reference(f.type_id(), f.type_path()))
            .collect()
    }

    /// A tuple's fields as an array of exactly those items.
    fn tuple(&mut self, fields: impl Iterator<Item = &'static UnnamedField>) -> Value {
        let items = self.unnamed(fields);
        json!({ "type": "array", "prefixItems": items, "minItems": items.len(), "maxItems": items.len() })
    }

    /// A struct's fields as an object (an `Option` field may be left out).
    fn object<'f>(&mut self, fields: impl Iterator<Item = &'f bevy_reflect::NamedField>) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for field in fields {
            properties.insert(
                field.name().to_owned(),
                self.reference(field.type_id(), field.type_path()),
            );
            if !field.type_path().starts_with("core::option::Option<") {
                required.push(field.name());
            }
        }
        json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
    }

    /// The schema of type `info` itself.
    fn definition(&mut self, info: &'static TypeInfo) -> Value {
        let mut schema = match info {
            TypeInfo::Struct(s) => self.object(s.iter()),
            TypeInfo::TupleStruct(s) if s.field_len() == 1 => {
                // A newtype is written as its field.
                self.unnamed(s.iter()).remove(0)
            }
            TypeInfo::TupleStruct(s) => self.tuple(s.iter()),
            TypeInfo::Tuple(t) => self.tuple(t.iter()),
            TypeInfo::List(l) => {
                json!({ "type": "array", "items": self.reference(l.item_ty().id(), l.item_ty().path()) })
            }
            TypeInfo::Array(a) => json!({
                "type": "array",
                "items": self.reference(a.item_ty().id(), a.item_ty().path()),
                "minItems": a.capacity(),
                "maxItems": a.capacity(),
            }),
            TypeInfo::Set(s) => json!({
                "type": "array",
                "items": self.reference(s.value_ty().id(), s.value_ty().path()),
                "uniqueItems": true,
            }),
            TypeInfo::Map(m) => json!({
                "type": "object",
                "additionalProperties": self.reference(m.value_ty().id(), m.value_ty().path()),
            }),
            TypeInfo::Enum(e) => {
                if let Some(inner) = option_of(info) {
                    let inner = self.reference(inner.type_id(), inner.type_path());
                    json!({ "anyOf": [{ "type": "null" }, inner] })
                } else if e.iter().all(|v| matches!(v, VariantInfo::Unit(_))) {
                    json!({ "type": "string", "enum": e.iter().map(VariantInfo::name).collect::<Vec<_>>() })
                } else {
                    let variants: Vec<Value> = e.iter().map(|v| self.variant(v)).collect();
                    json!({ "oneOf": variants })
                }
            }
            TypeInfo::Opaque(_) => opaque(info.type_path()),
        };
        if let Value::Object(map) = &mut schema {
            map.insert("title".into(), info.type_path_table().short_path().into());
            map.insert("typePath".into(), info.type_path().into());
        }
        schema
    }

    /// One variant of an enum, written `"Name"` (unit) or `{"Name": fields}`.
    fn variant(&mut self, variant: &'static VariantInfo) -> Value {
        let name = variant.name();
        let value = match variant {
            VariantInfo::Unit(_) => return json!({ "const": name }),
            VariantInfo::Struct(s) => self.object(s.iter()),
            VariantInfo::Tuple(t) if t.field_len() == 1 => self.unnamed(t.iter()).remove(0),
            VariantInfo::Tuple(t) => self.tuple(t.iter()),
        };
        json!({
            "type": "object",
            "properties": { name: value },
            "required": [name],
            "additionalProperties": false,
        })
    }
}

/// The `T` of `Option<T>`, which bevy_reflect writes as `null` or the value.
fn option_of(info: &'static TypeInfo) -> Option<&'static UnnamedField> {
    let TypeInfo::Enum(e) = info else {
        return None;
    };
    if info.type_path_table().ident() != Some("Option") {
        return None;
    }
    match e.variant("Some")? {
        VariantInfo::Tuple(t) if t.field_len() == 1 => t.field_at(0),
        _ => None,
    }
}

/// A primitive by its type path; any other opaque type is open.
fn opaque(path: &str) -> Value {
    match path {
        "bool" => json!({ "type": "boolean" }),
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => {
            json!({ "type": "integer", "minimum": 0 })
        }
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => json!({ "type": "integer" }),
        "f32" | "f64" => json!({ "type": "number" }),
        "char" => json!({ "type": "string", "minLength": 1, "maxLength": 1 }),
        "str" | "alloc::string::String" | "alloc::borrow::Cow<str>" => json!({ "type": "string" }),
        _ => json!({ "typePath": path }),
    }
}
