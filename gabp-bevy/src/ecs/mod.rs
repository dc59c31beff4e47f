//! ECS tools built from the app's reflection registry (`AppTypeRegistry`): an agent reads and changes any
//! reflected component or resource by its type path, with no game code.
//!
//! Adapted from `bevy_remote` 0.19 (`builtin_methods.rs`, `schemas/json_schema.rs`), MIT OR Apache-2.0,
//! Copyright the Bevy contributors.

mod entity;
mod query;
mod resource;
mod schema;

use std::any::TypeId;

use bevy_ecs::component::ComponentId;
use bevy_ecs::prelude::*;
use bevy_ecs::reflect::{AppTypeRegistry, ReflectComponent, ReflectResource};
use bevy_ecs::world::EntityRef;
use bevy_reflect::serde::{TypedReflectDeserializer, TypedReflectSerializer};
use bevy_reflect::{GetPath, PartialReflect, Reflect, TypeRegistration, TypeRegistry};
use gabp_session::server::{CallError, Tool};
use gabp_types::ErrorCode;
use serde::de::DeserializeSeed;
use serde_json::value::RawValue;
use serde_json::Value;

/// Every ECS tool.
pub(crate) fn tools() -> Vec<Tool> {
    let mut tools = Vec::new();
    tools.extend(query::tools());
    tools.extend(entity::tools());
    tools.extend(resource::tools());
    tools.extend(schema::tools());
    tools
}

/// The tag of tools that only read.
const READ_ONLY: &str = "read-only";

/// An error in the call's arguments (`-32602`).
fn invalid(message: impl Into<String>) -> CallError {
    CallError::new(message).with_code(ErrorCode::INVALID_PARAMS)
}

/// The app's type registry (a shared handle: the world stays free to change while it is read).
fn registry(world: &World) -> Result<AppTypeRegistry, CallError> {
    world
        .get_resource::<AppTypeRegistry>()
        .cloned()
        .ok_or_else(|| {
            CallError::new("the app has no AppTypeRegistry: add bevy_app's App defaults")
        })
}

/// The entity `bits` names (`Entity::to_bits`, as in BRP), if it exists.
fn entity(world: &World, field: &str, bits: u64) -> Result<Entity, CallError> {
    Entity::try_from_bits(bits)
        .filter(|&e| world.get_entity(e).is_ok())
        .ok_or_else(|| invalid(format!("{field}: no entity {bits} in the world")))
}

/// The registration of type `path`.
fn registration<'r>(
    registry: &'r TypeRegistry,
    field: &str,
    path: &str,
) -> Result<&'r TypeRegistration, CallError> {
    registry.get_with_type_path(path).ok_or_else(|| {
        invalid(format!(
            "{field}: `{path}` is not a registered type path (see ecs/list_components)"
        ))
    })
}

/// The reflected component `path` (a resource type is refused: see the resource tools).
fn component<'r>(
    registry: &'r TypeRegistry,
    field: &str,
    path: &str,
) -> Result<(&'r TypeRegistration, &'r ReflectComponent), CallError> {
    let registration = registration(registry, field, path)?;
    match registration.data::<ReflectComponent>() {
        Some(reflect) if registration.data::<ReflectResource>().is_none() => {
            Ok((registration, reflect))
        }
        _ => Err(invalid(format!(
            "{field}: `{path}` is not a reflected component (#[reflect(Component)])"
        ))),
    }
}

/// The world's id of component type `type_id`, when the world has seen it.
fn component_id(world: &World, type_id: TypeId) -> Option<ComponentId> {
    world.components().get_valid_id(type_id)
}

/// Whether components of type `type_id` may change in place (`None`: the world has never seen one).
fn mutable(world: &World, type_id: TypeId) -> Option<bool> {
    let id = component_id(world, type_id)?;
    world.components().get_info(id).map(|info| info.mutable())
}

/// A reflected value as JSON text, as bevy_reflect serializes it: written once, straight into the answer,
/// with no tree of values between (an `f32` is written as its shortest form, `0.1`, not the `f64` it widens to).
fn to_json(
    value: &dyn PartialReflect,
    registry: &TypeRegistry,
    what: &str,
) -> Result<Box<RawValue>, CallError> {
    serde_json::value::to_raw_value(&TypedReflectSerializer::new(value, registry))
        .map_err(|e| CallError::new(format!("{what} does not serialize: {e}")))
}

/// JSON as a value of the registered type, as bevy_reflect deserializes it.
fn from_json(
    registration: &TypeRegistration,
    registry: &TypeRegistry,
    field: &str,
    value: &Value,
) -> Result<Box<dyn PartialReflect>, CallError> {
    TypedReflectDeserializer::new(registration, registry)
        .deserialize(value)
        .map_err(|e| {
            let path = registration.type_info().type_path();
            invalid(format!("{field}: not a value of `{path}`: {e}"))
        })
}

/// The component of `entity` as JSON, if it has it.
fn component_json(
    entity: EntityRef<'_>,
    reflect: &ReflectComponent,
    registry: &TypeRegistry,
    path: &str,
) -> Option<Result<Box<RawValue>, CallError>> {
    let value = reflect.reflect(entity)?;
    Some(to_json(value.as_partial_reflect(), registry, path))
}

/// Sets the field at reflect path `path` of `target` (a value of type `what`) to `value`.
fn set_field(
    target: &mut dyn Reflect,
    what: &str,
    path: &str,
    value: &Value,
    registry: &TypeRegistry,
) -> Result<(), CallError> {
    let bad_path = |e: &dyn std::fmt::Display| invalid(format!("path: `{path}` in `{what}`: {e}"));
    let field = target.reflect_path(path).map_err(|e| bad_path(&e))?;
    let field_type = field.reflect_type_path();
    let registration = registry.get_with_type_path(field_type).ok_or_else(|| {
        invalid(format!(
            "path: the type of `{path}`, `{field_type}`, is not registered"
        ))
    })?;
    let new = from_json(registration, registry, "value", value)?;
    target
        .reflect_path_mut(path)
        .map_err(|e| bad_path(&e))?
        .try_apply(new.as_ref())
        .map_err(|e| invalid(format!("value: not a value for `{path}` in `{what}`: {e}")))
}
