//! The demo game's world: a 16x16x16 voxel grid and one player, `steve`. Pure game logic, no I/O: every
//! operation checks its input and answers a [`DemoError`] instead of panicking.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sheep::{walkable, Entity, Sheep, SHEEP_Y};
use super::DemoError;

/// Blocks along each axis; block coordinates are integers `0..=15`.
pub const WORLD_SIZE: i64 = 16;

/// The one player of the world.
pub const PLAYER_ID: &str = "steve";

/// Where the player stands when the world is made: on the grass, in the middle.
pub const SPAWN: Position = Position {
    x: 8.5,
    y: 5.0,
    z: 8.5,
};

/// A block type. `air` is the empty block: placing it removes what was there, and reading it gives `null`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum BlockType {
    // No doc comments on the variants: with them, schemars writes a `oneOf` per variant instead of one `enum`.
    Air,
    Stone,
    Dirt,
    Grass,
    Sand,
    OakLog,
    OakPlanks,
    Glass,
    Torch,
}

impl BlockType {
    /// Every block type, in palette order.
    pub const ALL: [BlockType; 9] = [
        BlockType::Air,
        BlockType::Stone,
        BlockType::Dirt,
        BlockType::Grass,
        BlockType::Sand,
        BlockType::OakLog,
        BlockType::OakPlanks,
        BlockType::Glass,
        BlockType::Torch,
    ];

    /// The name on the wire (`oak_log`).
    pub fn as_str(self) -> &'static str {
        match self {
            BlockType::Air => "air",
            BlockType::Stone => "stone",
            BlockType::Dirt => "dirt",
            BlockType::Grass => "grass",
            BlockType::Sand => "sand",
            BlockType::OakLog => "oak_log",
            BlockType::OakPlanks => "oak_planks",
            BlockType::Glass => "glass",
            BlockType::Torch => "torch",
        }
    }

    /// The block as `get_block` and `world/block_change` report it: its name, or `None` for air.
    pub fn reported(self) -> Option<String> {
        (self != BlockType::Air).then(|| self.as_str().to_owned())
    }
}

/// A point in the world, in blocks (the player's feet).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Position {
    /// East-west, 0..=16.
    pub x: f64,
    /// Height, 0..=16.
    pub y: f64,
    /// North-south, 0..=16.
    pub z: f64,
}

/// One inventory slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Slot {
    /// The slot number, from 0.
    pub slot: u32,
    /// The item in it.
    pub item: String,
    /// How many.
    pub count: u32,
}

/// The world: blocks, the player and a few counters.
#[derive(Debug, Clone)]
pub struct World {
    blocks: Vec<BlockType>,
    pub(super) position: Position,
    inventory: Vec<Slot>,
    block_changes: u64,
    ticks: u64,
    pub(super) sheep: Vec<Sheep>,
    /// Whether the world has a pen the sheep are herded into (made by [`World::herding`]).
    pub(super) herding: bool,
}

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}

fn index(x: i64, y: i64, z: i64) -> Result<usize, DemoError> {
    for (axis, value) in [("x", x), ("y", y), ("z", z)] {
        if !(0..WORLD_SIZE).contains(&value) {
            return Err(DemoError::BlockOutOfBounds { axis, value });
        }
    }
    // In range, so each factor is 0..16 and the index 0..4096.
    usize::try_from((y * WORLD_SIZE + z) * WORLD_SIZE + x).map_err(|_| {
        DemoError::BlockOutOfBounds {
            axis: "x",
            value: x,
        }
    })
}

impl World {
    /// A fresh world: stone at `y` 0 to 2, dirt at 3, grass at 4, a three-block oak trunk at x 3, z 3, air
    /// above; `steve` at the spawn point (8.5, 5, 8.5) with a few stacks in his inventory.
    pub fn new() -> Self {
        let size = usize::try_from(WORLD_SIZE * WORLD_SIZE * WORLD_SIZE).unwrap_or(4096);
        let mut world = World {
            blocks: vec![BlockType::Air; size],
            position: SPAWN,
            inventory: [
                ("stone", 64),
                ("dirt", 32),
                ("oak_planks", 16),
                ("torch", 8),
            ]
            .into_iter()
            .zip(0..)
            .map(|((item, count), slot)| Slot {
                slot,
                item: item.to_owned(),
                count,
            })
            .collect(),
            block_changes: 0,
            ticks: 0,
            sheep: Sheep::flock(),
            herding: false,
        };
        for x in 0..WORLD_SIZE {
            for z in 0..WORLD_SIZE {
                for y in 0..5 {
                    let block = match y {
                        0..=2 => BlockType::Stone,
                        3 => BlockType::Dirt,
                        _ => BlockType::Grass,
                    };
                    world.set(x, y, z, block);
                }
            }
        }
        for y in 5..8 {
            world.set(3, y, 3, BlockType::OakLog);
        }
        world
    }

    pub(super) fn set(&mut self, x: i64, y: i64, z: i64, block: BlockType) {
        if let Some(cell) = index(x, y, z).ok().and_then(|i| self.blocks.get_mut(i)) {
            *cell = block;
        }
    }

    /// The block at `x, y, z`.
    ///
    /// # Errors
    ///
    /// [`DemoError::BlockOutOfBounds`] outside `0..=15`.
    pub fn block(&self, x: i64, y: i64, z: i64) -> Result<BlockType, DemoError> {
        let i = index(x, y, z)?;
        Ok(self.blocks.get(i).copied().unwrap_or(BlockType::Air))
    }

    /// Puts `block` at `x, y, z` and returns what was there.
    ///
    /// # Errors
    ///
    /// [`DemoError::BlockOutOfBounds`] outside `0..=15`.
    pub fn place(
        &mut self,
        x: i64,
        y: i64,
        z: i64,
        block: BlockType,
    ) -> Result<BlockType, DemoError> {
        let previous = self.block(x, y, z)?;
        self.set(x, y, z, block);
        self.block_changes += 1;
        Ok(previous)
    }

    /// Checks that `player_id` (default `steve`) names the player, and returns the canonical id.
    ///
    /// # Errors
    ///
    /// [`DemoError::UnknownPlayer`] for anyone else.
    pub fn player_id(player_id: Option<&str>) -> Result<&'static str, DemoError> {
        match player_id {
            None | Some(PLAYER_ID) => Ok(PLAYER_ID),
            Some(other) => Err(DemoError::UnknownPlayer(other.to_owned())),
        }
    }

    /// Checks that every coordinate of `position` is a finite number in `0..=16`.
    ///
    /// # Errors
    ///
    /// [`DemoError::PositionOutOfBounds`] naming the first bad axis.
    pub fn check_position(position: Position) -> Result<Position, DemoError> {
        let limit = WORLD_SIZE as f64;
        for (axis, value) in [("x", position.x), ("y", position.y), ("z", position.z)] {
            if !value.is_finite() || !(0.0..=limit).contains(&value) {
                return Err(DemoError::PositionOutOfBounds { axis, value });
            }
        }
        Ok(position)
    }

    /// The position of `player_id` (default `steve`).
    ///
    /// # Errors
    ///
    /// [`DemoError::UnknownPlayer`].
    pub fn position(&self, player_id: Option<&str>) -> Result<Position, DemoError> {
        Self::player_id(player_id)?;
        Ok(self.position)
    }

    /// Moves `player_id` (default `steve`) to `position`; returns the canonical player id.
    ///
    /// # Errors
    ///
    /// [`DemoError::UnknownPlayer`], or [`DemoError::PositionOutOfBounds`] (the player stays put).
    pub fn teleport(
        &mut self,
        player_id: Option<&str>,
        position: Position,
    ) -> Result<&'static str, DemoError> {
        let id = Self::player_id(player_id)?;
        self.position = Self::check_position(position)?;
        Ok(id)
    }

    /// The inventory of `player_id` (default `steve`).
    ///
    /// # Errors
    ///
    /// [`DemoError::UnknownPlayer`].
    pub fn inventory(&self, player_id: Option<&str>) -> Result<&[Slot], DemoError> {
        Self::player_id(player_id)?;
        Ok(&self.inventory)
    }

    /// How many of each block type the world holds (types with none left out).
    pub fn counts(&self) -> BTreeMap<BlockType, u64> {
        let mut counts = BTreeMap::new();
        for block in &self.blocks {
            *counts.entry(*block).or_insert(0) += 1;
        }
        counts
    }

    /// How many blocks were placed since the world was made.
    pub fn block_changes(&self) -> u64 {
        self.block_changes
    }

    /// Whether a sheep may stand at `(x, z)`.
    pub(super) fn walkable(&self, x: i64, z: i64) -> bool {
        index(x, SHEEP_Y, z)
            .ok()
            .and_then(|i| self.blocks.get(i))
            .is_some_and(|b| walkable(*b))
    }

    /// Advances the game clock by one tick: each sheep walks one block (in a herding world, as
    /// [`World::herd`] says).
    pub fn tick(&mut self) {
        self.ticks = self.ticks.wrapping_add(1);
        if self.herding {
            self.herd();
            return;
        }
        let blocks = &self.blocks;
        for sheep in &mut self.sheep {
            sheep.step(|x, z| {
                index(x, SHEEP_Y, z)
                    .ok()
                    .and_then(|i| blocks.get(i))
                    .is_some_and(|b| walkable(*b))
            });
        }
    }

    /// The sheep, as `world/entities` reports them.
    pub fn entities(&self) -> Vec<Entity> {
        self.sheep.iter().map(Sheep::entity).collect()
    }

    /// The highest block that is not air in each column, `(block, y)`, or `None` for an empty column.
    pub fn top(&self, x: i64, z: i64) -> Option<(BlockType, i64)> {
        (0..WORLD_SIZE)
            .rev()
            .find_map(|y| match self.block(x, y, z) {
                Ok(BlockType::Air) | Err(_) => None,
                Ok(block) => Some((block, y)),
            })
    }

    /// Ticks since the world was made.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_world_layers() {
        let world = World::new();
        assert_eq!(world.block(0, 0, 0).ok(), Some(BlockType::Stone));
        assert_eq!(world.block(15, 2, 15).ok(), Some(BlockType::Stone));
        assert_eq!(world.block(8, 3, 8).ok(), Some(BlockType::Dirt));
        assert_eq!(world.block(8, 4, 8).ok(), Some(BlockType::Grass));
        assert_eq!(world.block(8, 5, 8).ok(), Some(BlockType::Air));
        assert_eq!(world.block(3, 7, 3).ok(), Some(BlockType::OakLog));
        assert_eq!(world.block(3, 8, 3).ok(), Some(BlockType::Air));
        assert_eq!(world.block(15, 15, 15).ok(), Some(BlockType::Air));
        let counts = world.counts();
        assert_eq!(counts[&BlockType::Stone], 768);
        assert_eq!(counts[&BlockType::Dirt], 256);
        assert_eq!(counts[&BlockType::Grass], 256);
        assert_eq!(counts[&BlockType::OakLog], 3);
        assert_eq!(counts[&BlockType::Air], 4096 - 768 - 512 - 3);
        assert_eq!(counts.values().sum::<u64>(), 4096);
        assert_eq!(world.position(None).ok(), Some(SPAWN));
        assert_eq!(world.block_changes(), 0);
    }

    #[test]
    fn out_of_range_coordinates_are_errors() {
        let mut world = World::new();
        for (x, y, z, axis, value) in [
            (16, 0, 0, "x", 16),
            (0, -1, 0, "y", -1),
            (0, 0, i64::MAX, "z", i64::MAX),
            (i64::MIN, 0, 0, "x", i64::MIN),
        ] {
            let refused = |r: Result<BlockType, DemoError>| matches!(r, Err(DemoError::BlockOutOfBounds { axis: a, value: v }) if a == axis && v == value);
            assert!(refused(world.block(x, y, z)));
            assert!(refused(world.place(x, y, z, BlockType::Stone)));
        }
        assert_eq!(world.block_changes(), 0);
        let err = world.block(16, 0, 0).unwrap_err().to_string();
        assert_eq!(
            err,
            "x = 16 is outside the world; block coordinates are integers 0..=15"
        );
    }

    #[test]
    fn place_returns_previous_and_counts() {
        let mut world = World::new();
        assert_eq!(
            world.place(8, 5, 9, BlockType::OakLog).ok(),
            Some(BlockType::Air)
        );
        assert_eq!(world.block(8, 5, 9).ok(), Some(BlockType::OakLog));
        assert_eq!(
            world.place(8, 5, 9, BlockType::Air).ok(),
            Some(BlockType::OakLog)
        );
        assert_eq!(world.block(8, 5, 9).ok(), Some(BlockType::Air));
        assert_eq!(world.block_changes(), 2);
        assert_eq!(BlockType::Air.reported(), None);
        assert_eq!(BlockType::OakLog.reported().as_deref(), Some("oak_log"));
    }

    #[test]
    fn players_and_positions() {
        let mut world = World::new();
        assert_eq!(World::player_id(Some("steve")).ok(), Some("steve"));
        assert!(matches!(
            World::player_id(Some("alex")),
            Err(DemoError::UnknownPlayer(who)) if who == "alex"
        ));
        assert!(world.inventory(Some("alex")).is_err());
        assert_eq!(world.inventory(None).map(<[Slot]>::len).ok(), Some(4));
        let to = Position {
            x: 2.5,
            y: 5.0,
            z: 13.5,
        };
        assert_eq!(world.teleport(None, to).ok(), Some("steve"));
        assert_eq!(world.position(Some("steve")).ok(), Some(to));
        for (bad, axis) in [
            (Position { x: 16.5, ..to }, "x"),
            (Position { y: -0.1, ..to }, "y"),
            (Position { z: f64::NAN, ..to }, "z"),
            (
                Position {
                    x: f64::INFINITY,
                    ..to
                },
                "x",
            ),
        ] {
            match world.teleport(Some("steve"), bad) {
                Err(DemoError::PositionOutOfBounds { axis: a, .. }) => assert_eq!(a, axis),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            world.position(None).ok(),
            Some(to),
            "a refused teleport moves nobody"
        );
        assert!(world
            .teleport(Some("alex"), to)
            .unwrap_err()
            .to_string()
            .contains("alex"));
        let edge = Position {
            x: 0.0,
            y: 16.0,
            z: 16.0,
        };
        assert_eq!(world.teleport(None, edge).ok(), Some("steve"));
    }

    #[test]
    fn block_names() {
        for block in BlockType::ALL {
            let json = serde_json::to_value(block).unwrap();
            assert_eq!(json, block.as_str());
            let back: BlockType = serde_json::from_value(json).unwrap();
            assert_eq!(back, block);
        }
        assert!(serde_json::from_value::<BlockType>(serde_json::json!("diamond")).is_err());
    }

    #[test]
    fn ticks_advance() {
        let mut world = World::new();
        world.tick();
        world.tick();
        assert_eq!(world.ticks(), 2);
    }
}
