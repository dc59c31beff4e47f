//! `ecs/spawn`, `ecs/despawn`, `ecs/insert`, `ecs/remove`, `ecs/mutate`: changing entities through reflection.

use bevy_ecs::prelude::*;
use bevy_ecs::reflect::ReflectComponent;
use bevy_ecs::resource::IsResource;
use bevy_reflect::{PartialReflect, TypeRegistry};
use gabp_session::schemars::JsonSchema;
use gabp_session::server::{CallError, Tool};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{component, entity, from_json, invalid, mutable, registry, set_field, to_json};

pub(super) fn tools() -> [Tool; 5] {
    [
        Tool::on_main_thread("ecs/spawn", spawn).description(
            "Spawns an entity with `components` (type path to value, as ecs/get shows them); its id.",
        ),
        Tool::on_main_thread("ecs/despawn", despawn).description("Despawns an entity."),
        Tool::on_main_thread("ecs/insert", insert).description(
            "Inserts `components` (type path to value) into an entity, replacing those it has.",
        ),
        Tool::on_main_thread("ecs/remove", remove)
            .description("Removes `components` (type paths) from an entity; those it had."),
        Tool::on_main_thread("ecs/mutate", mutate).description(
            "Sets the field at `path` (a reflect path such as `.position.x` or `.0`) of an entity's \
             component to `value`; the component's new value.",
        ),
    ]
}

/// A component's reflection and a value of its type.
type Reflected<'r> = (&'r ReflectComponent, Box<dyn PartialReflect>);

/// Components by type path, read as values of their types: all of them, before anything changes.
fn values<'r>(
    registry: &'r TypeRegistry,
    components: &Map<String, Value>,
) -> Result<Vec<Reflected<'r>>, CallError> {
    components
        .iter()
        .map(|(path, value)| {
            let field = format!("components/{path}");
            let (registration, reflect) = component(registry, "components", path)?;
            Ok((reflect, from_json(registration, registry, &field, value)?))
        })
        .collect()
}

/// The id of an entity that is not a resource's.
fn game_entity(world: &World, bits: u64) -> Result<Entity, CallError> {
    let id = entity(world, "entity", bits)?;
    if world.entity(id).contains::<IsResource>() {
        return Err(invalid(format!(
            "entity: {bits} holds a resource: use ecs/get_resource and ecs/set_resource"
        )));
    }
    Ok(id)
}

/// Arguments of `ecs/spawn`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SpawnArgs {
    /// The new entity's components: type path to value.
    #[serde(default)]
    components: Map<String, Value>,
}

/// An entity.
#[derive(Serialize, JsonSchema)]
struct EntityId {
    /// The entity's id (`Entity::to_bits`).
    entity: u64,
}

fn spawn(world: &mut World, args: SpawnArgs) -> Result<EntityId, CallError> {
    let registry = registry(world)?;
    let registry = registry.read();
    let values = values(&registry, &args.components)?;
    let mut entity = world.spawn_empty();
    for (reflect, value) in values {
        reflect.insert(&mut entity, value.as_ref(), &registry);
    }
    Ok(EntityId {
        entity: entity.id().to_bits(),
    })
}

/// Arguments of `ecs/despawn`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DespawnArgs {
    /// The entity's id (`Entity::to_bits`).
    entity: u64,
}

fn despawn(world: &mut World, args: DespawnArgs) -> Result<EntityId, CallError> {
    let id = game_entity(world, args.entity)?;
    world.despawn(id);
    Ok(EntityId {
        entity: args.entity,
    })
}

/// Arguments of `ecs/insert`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct InsertArgs {
    /// The entity's id (`Entity::to_bits`).
    entity: u64,
    /// Components to insert: type path to value.
    components: Map<String, Value>,
}

fn insert(world: &mut World, args: InsertArgs) -> Result<EntityId, CallError> {
    let id = game_entity(world, args.entity)?;
    let registry = registry(world)?;
    let registry = registry.read();
    let values = values(&registry, &args.components)?;
    let mut entity = world.entity_mut(id);
    for (reflect, value) in values {
        reflect.insert(&mut entity, value.as_ref(), &registry);
    }
    Ok(EntityId {
        entity: args.entity,
    })
}

/// Arguments of `ecs/remove`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RemoveArgs {
    /// The entity's id (`Entity::to_bits`).
    entity: u64,
    /// Components to remove (type paths).
    components: Vec<String>,
}

/// Result of `ecs/remove`.
#[derive(Serialize, JsonSchema)]
struct Removed {
    /// The components the entity had, now removed.
    removed: Vec<String>,
}

fn remove(world: &mut World, args: RemoveArgs) -> Result<Removed, CallError> {
    let id = game_entity(world, args.entity)?;
    let registry = registry(world)?;
    let registry = registry.read();
    let reflects = args
        .components
        .iter()
        .map(|path| component(&registry, "components", path).map(|(_, c)| (path, c)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut entity = world.entity_mut(id);
    let mut removed = Vec::new();
    for (path, reflect) in reflects {
        if reflect.take(&mut entity).is_some() {
            removed.push(path.clone());
        }
    }
    Ok(Removed { removed })
}

/// Arguments of `ecs/mutate`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MutateArgs {
    /// The entity's id (`Entity::to_bits`).
    entity: u64,
    /// The component (type path).
    component: String,
    /// The field to set, as a reflect path: `.translation.x`, `.0`, `[2]`.
    path: String,
    /// The field's new value.
    value: Value,
}

/// Result of `ecs/mutate`.
#[derive(Serialize, JsonSchema)]
struct Mutated {
    /// The component's value after the change.
    value: Box<RawValue>,
}

fn mutate(world: &mut World, args: MutateArgs) -> Result<Mutated, CallError> {
    let id = game_entity(world, args.entity)?;
    let registry = registry(world)?;
    let registry = registry.read();
    let (registration, reflect) = component(&registry, "component", &args.component)?;
    let absent = || {
        invalid(format!(
            "component: entity {} has no `{}`",
            args.entity, args.component
        ))
    };
    if !mutable(world, registration.type_id()).ok_or_else(absent)? {
        let path = &args.component;
        return Err(invalid(format!("component: `{path}` is immutable")));
    }
    let mut value = reflect
        .reflect_mut(world.entity_mut(id))
        .ok_or_else(absent)?;
    set_field(
        &mut *value,
        &args.component,
        &args.path,
        &args.value,
        &registry,
    )?;
    let value = to_json(value.as_partial_reflect(), &registry, &args.component)?;
    Ok(Mutated { value })
}
