//! `ecs/query`, `ecs/get`, `ecs/list_components`: reading entities and their reflected components.

use std::any::TypeId;
use std::collections::BTreeMap;

use bevy_ecs::prelude::*;
use bevy_ecs::query::QueryBuilder;
use bevy_ecs::reflect::{ReflectComponent, ReflectResource};
use bevy_ecs::resource::IsResource;
use bevy_reflect::TypeRegistry;
use gabp_session::schemars::JsonSchema;
use gabp_session::server::{CallError, Tool};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{component, component_id, component_json, entity, registry, READ_ONLY};

/// Rows `ecs/query` answers unless told otherwise.
const DEFAULT_LIMIT: usize = 1000;
/// The most rows `ecs/query` answers.
const MAX_LIMIT: usize = 10_000;

pub(super) fn tools() -> [Tool; 3] {
    [
        Tool::on_main_thread("ecs/query", query)
            .description(
                "Entities that have every component in `components` and `with` and none in `without` \
                 (reflected type paths such as `bevy_transform::components::transform::Transform`), \
                 with the values of `components`; at most `limit` rows.",
            )
            .tags([READ_ONLY]),
        Tool::on_main_thread("ecs/get", get)
            .description(
                "The values of an entity's components (its `entity` id from ecs/query); all its reflected \
                 components when `components` is empty.",
            )
            .tags([READ_ONLY]),
        Tool::on_main_thread("ecs/list_components", list_components)
            .description(
                "The type paths of the reflected component types; with `entity`, the components that \
                 entity has.",
            )
            .tags([READ_ONLY]),
    ]
}

/// Arguments of `ecs/query`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct QueryArgs {
    /// Components every row has, returned with their values (type paths).
    #[serde(default)]
    components: Vec<String>,
    /// Components every row has, not returned.
    #[serde(default)]
    with: Vec<String>,
    /// Components no row has.
    #[serde(default)]
    without: Vec<String>,
    /// The most rows returned (default 1000).
    #[schemars(range(min = 1, max = 10000))]
    limit: Option<usize>,
}

/// One entity and the values of the components asked for.
#[derive(Serialize, JsonSchema)]
struct Row {
    /// The entity's id (`Entity::to_bits`).
    entity: u64,
    /// Component values by type path.
    components: BTreeMap<String, Box<RawValue>>,
    /// Reflected components that do not serialize (an opaque field without `Serialize`), when all were asked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unreadable: Vec<String>,
}

/// Result of `ecs/query`.
#[derive(Serialize, JsonSchema)]
struct Rows {
    /// The matching entities, in the world's order.
    entities: Vec<Row>,
    /// Whether more entities matched than `limit`.
    truncated: bool,
}

fn query(world: &mut World, args: QueryArgs) -> Result<Rows, CallError> {
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(super::invalid(format!(
            "limit: between 1 and {MAX_LIMIT}, not {limit}"
        )));
    }
    let registry = registry(world)?;
    let registry = registry.read();
    let selected = lookup(&registry, "components", &args.components)?;
    let with = lookup(&registry, "with", &args.with)?;
    let without = lookup(&registry, "without", &args.without)?;
    let empty = Rows {
        entities: Vec::new(),
        truncated: false,
    };
    // A component the world has never seen is on no entity.
    let Some(required) = selected
        .iter()
        .chain(&with)
        .map(|(_, type_id, _)| component_id(world, *type_id))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(empty);
    };
    let excluded: Vec<_> = without
        .iter()
        .filter_map(|(_, type_id, _)| component_id(world, *type_id))
        .collect();

    let mut builder = QueryBuilder::<Entity>::new(world);
    for id in required {
        builder.with_id(id);
    }
    for id in excluded {
        builder.without_id(id);
    }
    // Resources live on entities of their own; they are read with the resource tools.
    builder.without::<IsResource>();
    let mut state = builder.build();
    let mut matched: Vec<Entity> = state.iter(world).take(limit + 1).collect();
    let truncated = matched.len() > limit;
    matched.truncate(limit);

    let mut rows = Vec::with_capacity(matched.len());
    for id in matched {
        let Ok(entity) = world.get_entity(id) else {
            continue;
        };
        let mut components = BTreeMap::new();
        for (path, _, reflect) in &selected {
            if let Some(value) = component_json(entity, reflect, &registry, path) {
                components.insert((*path).clone(), value?);
            }
        }
        rows.push(Row {
            entity: id.to_bits(),
            components,
            unreadable: Vec::new(),
        });
    }
    Ok(Rows {
        entities: rows,
        truncated,
    })
}

/// The reflected components `paths` name, with their type ids.
fn lookup<'a, 'r>(
    registry: &'r TypeRegistry,
    field: &str,
    paths: &'a [String],
) -> Result<Vec<(&'a String, TypeId, &'r ReflectComponent)>, CallError> {
    paths
        .iter()
        .map(|path| component(registry, field, path).map(|(r, c)| (path, r.type_id(), c)))
        .collect()
}

/// Arguments of `ecs/get`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetArgs {
    /// The entity's id (`Entity::to_bits`).
    entity: u64,
    /// The components to read (type paths); all reflected ones when empty.
    #[serde(default)]
    components: Vec<String>,
}

fn get(world: &mut World, args: GetArgs) -> Result<Row, CallError> {
    let id = entity(world, "entity", args.entity)?;
    let registry = registry(world)?;
    let registry = registry.read();
    let entity = world
        .get_entity(id)
        .map_err(|_| super::invalid(format!("entity: no entity {} in the world", args.entity)))?;
    let mut components = BTreeMap::new();
    let mut unreadable = Vec::new();
    if args.components.is_empty() {
        for &component_id in entity.archetype().components() {
            let type_id = world
                .components()
                .get_info(component_id)
                .and_then(|info| info.type_id());
            let Some(registration) = type_id.and_then(|t| registry.get(t)) else {
                continue;
            };
            let Some(reflect) = registration.data::<ReflectComponent>() else {
                continue;
            };
            let path = registration.type_info().type_path();
            match component_json(entity, reflect, &registry, path) {
                Some(Ok(value)) => {
                    components.insert(path.to_owned(), value);
                }
                Some(Err(_)) => unreadable.push(path.to_owned()),
                None => {}
            }
        }
    }
    for path in &args.components {
        let (_, reflect) = component(&registry, "components", path)?;
        let value = component_json(entity, reflect, &registry, path).ok_or_else(|| {
            super::invalid(format!(
                "components: entity {} has no `{path}`",
                args.entity
            ))
        })?;
        components.insert(path.clone(), value?);
    }
    Ok(Row {
        entity: args.entity,
        components,
        unreadable,
    })
}

/// Arguments of `ecs/list_components`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListComponentsArgs {
    /// List this entity's components instead of every reflected component type.
    entity: Option<u64>,
}

/// Result of `ecs/list_components`.
#[derive(Serialize, JsonSchema)]
struct ComponentList {
    /// Type paths, sorted (an entity's components the app did not reflect are named by their Rust name).
    components: Vec<String>,
}

fn list_components(
    world: &mut World,
    args: ListComponentsArgs,
) -> Result<ComponentList, CallError> {
    let registry = registry(world)?;
    let registry = registry.read();
    let mut components = Vec::new();
    if let Some(bits) = args.entity {
        let id = entity(world, "entity", bits)?;
        let entity = world
            .get_entity(id)
            .map_err(|_| super::invalid(format!("entity: no entity {bits} in the world")))?;
        for &component_id in entity.archetype().components() {
            let Some(info) = world.components().get_info(component_id) else {
                continue;
            };
            let reflected = info.type_id().and_then(|t| registry.get(t));
            components.push(match reflected {
                Some(registration) => registration.type_info().type_path().to_owned(),
                None => info.name().to_string(),
            });
        }
    } else {
        for registration in registry.iter() {
            if registration.data::<ReflectComponent>().is_some()
                && registration.data::<ReflectResource>().is_none()
            {
                components.push(registration.type_info().type_path().to_owned());
            }
        }
    }
    components.sort();
    Ok(ComponentList { components })
}
