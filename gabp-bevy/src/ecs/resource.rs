//! `ecs/list_resources`, `ecs/get_resource`, `ecs/set_resource`: reflected resources.

use bevy_ecs::prelude::*;
use bevy_ecs::reflect::{ReflectComponent, ReflectResource};
use bevy_reflect::{TypeRegistration, TypeRegistry};
use gabp_session::schemars::JsonSchema;
use gabp_session::server::{CallError, Tool};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{
    component_id, from_json, invalid, mutable, registration, registry, set_field, to_json,
    READ_ONLY,
};

pub(super) fn tools() -> [Tool; 3] {
    [
        Tool::on_main_thread("ecs/list_resources", list_resources)
            .description("The type paths of the reflected resource types, and whether the world has each.")
            .tags([READ_ONLY]),
        Tool::on_main_thread("ecs/get_resource", get_resource)
            .description("The value of a resource (its type path).")
            .tags([READ_ONLY]),
        Tool::on_main_thread("ecs/set_resource", set_resource).description(
            "Sets a resource to `value`, inserting it if the world has none; with `path` (a reflect path \
             such as `.score`), sets only that field.",
        ),
    ]
}

/// The reflected resource `path`.
fn resource<'r>(
    registry: &'r TypeRegistry,
    path: &str,
) -> Result<(&'r TypeRegistration, &'r ReflectComponent), CallError> {
    let registration = registration(registry, "resource", path)?;
    match registration.data::<ReflectComponent>() {
        Some(reflect) if registration.data::<ReflectResource>().is_some() => {
            Ok((registration, reflect))
        }
        _ => Err(invalid(format!(
            "resource: `{path}` is not a reflected resource (#[reflect(Resource)])"
        ))),
    }
}

/// The entity that holds resource `registration`, if the world has it.
fn holder(world: &World, registration: &TypeRegistration) -> Option<Entity> {
    let id = component_id(world, registration.type_id())?;
    world.resource_entities().get(id)
}

/// Arguments of `ecs/list_resources`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListResourcesArgs {}

/// A resource type.
#[derive(Serialize, JsonSchema)]
struct ResourceType {
    /// Its type path.
    resource: String,
    /// Whether the world has it.
    present: bool,
}

/// Result of `ecs/list_resources`.
#[derive(Serialize, JsonSchema)]
struct ResourceList {
    /// The reflected resource types, sorted by type path.
    resources: Vec<ResourceType>,
}

fn list_resources(world: &mut World, _: ListResourcesArgs) -> Result<ResourceList, CallError> {
    let registry = registry(world)?;
    let registry = registry.read();
    let mut resources: Vec<ResourceType> = registry
        .iter()
        .filter(|r| r.data::<ReflectResource>().is_some())
        .map(|r| ResourceType {
            resource: r.type_info().type_path().to_owned(),
            present: holder(world, r).is_some(),
        })
        .collect();
    resources.sort_by(|a, b| a.resource.cmp(&b.resource));
    Ok(ResourceList { resources })
}

/// Arguments of `ecs/get_resource`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetResourceArgs {
    /// The resource's type path.
    resource: String,
}

/// A resource's value.
#[derive(Serialize, JsonSchema)]
struct ResourceValue {
    /// The value, as bevy_reflect serializes it.
    value: Box<RawValue>,
}

fn get_resource(world: &mut World, args: GetResourceArgs) -> Result<ResourceValue, CallError> {
    let registry = registry(world)?;
    let registry = registry.read();
    let (registration, reflect) = resource(&registry, &args.resource)?;
    let absent = || invalid(format!("resource: the world has no `{}`", args.resource));
    let entity = holder(world, registration).ok_or_else(absent)?;
    let entity = world.get_entity(entity).map_err(|_| absent())?;
    let value = reflect.reflect(entity).ok_or_else(absent)?;
    Ok(ResourceValue {
        value: to_json(value.as_partial_reflect(), &registry, &args.resource)?,
    })
}

/// Arguments of `ecs/set_resource`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SetResourceArgs {
    /// The resource's type path.
    resource: String,
    /// The new value: of the whole resource, or of the field at `path`.
    value: Value,
    /// A field to set instead of the whole resource (a reflect path: `.score`, `.0`, `[2]`).
    path: Option<String>,
}

fn set_resource(world: &mut World, args: SetResourceArgs) -> Result<ResourceValue, CallError> {
    let registry = registry(world)?;
    let registry = registry.read();
    let (registration, reflect) = resource(&registry, &args.resource)?;
    let held = holder(world, registration);
    match (&args.path, held) {
        (Some(path), Some(entity)) => {
            if mutable(world, registration.type_id()) != Some(true) {
                return Err(invalid(format!(
                    "resource: `{}` is immutable",
                    args.resource
                )));
            }
            let mut value = reflect
                .reflect_mut(world.entity_mut(entity))
                .ok_or_else(|| invalid(format!("resource: `{}` is immutable", args.resource)))?;
            set_field(&mut *value, &args.resource, path, &args.value, &registry)?;
        }
        (Some(_), None) => {
            return Err(invalid(format!(
                "resource: the world has no `{}` to set a field of",
                args.resource
            )))
        }
        (None, Some(entity)) => {
            let value = from_json(registration, &registry, "value", &args.value)?;
            reflect.insert(&mut world.entity_mut(entity), value.as_ref(), &registry);
        }
        (None, None) => {
            let value = from_json(registration, &registry, "value", &args.value)?;
            let id = reflect.register_component(world);
            drop(registry);
            // Spawns the resource's entity; it takes the registry's lock itself.
            world.insert_reflect_resource(id, value);
            return get_resource(
                world,
                GetResourceArgs {
                    resource: args.resource,
                },
            );
        }
    }
    drop(registry);
    get_resource(
        world,
        GetResourceArgs {
            resource: args.resource,
        },
    )
}
