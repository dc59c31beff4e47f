//! The herding task of the `env` extension (SPEC/1.0 extensions.md §env): a world with a pen in its south-east
//! corner, sheep that flee the player, and the player who walks them in.

use crate::sheep::Sheep;
use crate::world::{BlockType, Position, World, SPAWN, WORLD_SIZE};

/// The pen: the blocks whose `x` and `z` are both at least this, a 4x4 corner floored with sand.
pub const PEN_MIN: i64 = 12;

/// A sheep flees a player this many blocks away or nearer (along either axis).
pub const FLEE_DISTANCE: i64 = 2;

/// How many sheep a herding world has.
pub const FLOCK_SIZE: usize = 3;

/// Whether `(x, z)` is inside the pen.
pub fn in_pen(x: i64, z: i64) -> bool {
    x >= PEN_MIN && z >= PEN_MIN && x < WORLD_SIZE && z < WORLD_SIZE
}

/// The next number of a 64-bit LCG.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *state >> 33
}

impl World {
    /// A fresh world for one episode of herding, the same for the same `seed`: the pen's sand floor, the
    /// player at the spawn point, and [`FLOCK_SIZE`] sheep at places drawn from `seed`, outside the pen, off the
    /// tree and out of the player's reach.
    pub fn herding(seed: u64) -> World {
        let mut world = World::new();
        for x in PEN_MIN..WORLD_SIZE {
            for z in PEN_MIN..WORLD_SIZE {
                world.set(x, 4, z, BlockType::Sand);
            }
        }
        let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
        let player = player_cell(SPAWN);
        let mut sheep: Vec<Sheep> = Vec::with_capacity(FLOCK_SIZE);
        while sheep.len() < FLOCK_SIZE {
            let (x, z) = (
                i64::try_from(next(&mut state) % 16).unwrap_or(0),
                i64::try_from(next(&mut state) % 16).unwrap_or(0),
            );
            let near_player = (x - player.0).abs().max((z - player.1).abs()) <= FLEE_DISTANCE + 1;
            let taken = sheep.iter().any(|s| s.position() == (x, z));
            if in_pen(x, z) || near_player || taken || !world.walkable(x, z) {
                continue;
            }
            sheep.push(Sheep::at(sheep.len() + 1, x, z, next(&mut state)));
        }
        world.sheep = sheep;
        world.herding = true;
        world
    }

    /// One tick of herding: a penned sheep grazes inside the pen, never leaving it; a sheep the player is
    /// near flees one block; any other grazes, walking a block one tick in four.
    pub(super) fn herd(&mut self) {
        let player = player_cell(self.position);
        let mut sheep = std::mem::take(&mut self.sheep);
        for i in 0..sheep.len() {
            let (x, z) = sheep[i].position();
            let others: Vec<(i64, i64)> = sheep
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, s)| s.position())
                .collect();
            let penned = in_pen(x, z);
            let free = |nx: i64, nz: i64| {
                self.walkable(nx, nz) && !others.contains(&(nx, nz)) && (!penned || in_pen(nx, nz))
            };
            let near = (x - player.0).abs().max((z - player.1).abs()) <= FLEE_DISTANCE;
            let one = &mut sheep[i];
            if near && !penned {
                one.flee(player, free);
            } else if one.chance(4) {
                one.step(free);
            }
        }
        self.sheep = sheep;
    }

    /// How many sheep stand in the pen.
    pub fn penned(&self) -> usize {
        self.sheep
            .iter()
            .filter(|s| {
                let (x, z) = s.position();
                in_pen(x, z)
            })
            .count()
    }

    /// The block the player stands on, `(x, z)`.
    pub fn player_cell(&self) -> (i64, i64) {
        player_cell(self.position)
    }
}

/// The block of a position, `(x, z)`.
fn player_cell(position: Position) -> (i64, i64) {
    // Positions are checked to lie in 0..=16: the casts are exact.
    (
        (position.x.floor() as i64).clamp(0, WORLD_SIZE - 1),
        (position.z.floor() as i64).clamp(0, WORLD_SIZE - 1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_makes_the_same_world_and_sheep_start_outside() {
        let a = World::herding(7);
        let b = World::herding(7);
        assert_eq!(a.entities(), b.entities());
        assert_ne!(a.entities(), World::herding(8).entities());
        for seed in 0..200 {
            let world = World::herding(seed);
            assert_eq!(world.penned(), 0, "seed {seed}");
            assert_eq!(world.entities().len(), FLOCK_SIZE);
        }
        assert_eq!(a.block(13, 4, 13).ok(), Some(BlockType::Sand));
    }

    #[test]
    fn a_sheep_flees_the_player_and_stays_in_the_pen() {
        let mut world = World::herding(1);
        world.sheep = vec![Sheep::at(1, 10, 10, 3)];
        world.position = Position {
            x: 9.5,
            y: 5.0,
            z: 9.5,
        };
        world.tick();
        let (x, z) = world.sheep[0].position();
        assert!(x + z == 21, "fled one block away from the player: {x}, {z}");
        world.sheep = vec![Sheep::at(1, 12, 12, 3)];
        for _ in 0..500 {
            world.tick();
            let (x, z) = world.sheep[0].position();
            assert!(in_pen(x, z), "left the pen to {x}, {z}");
        }
        assert_eq!(world.penned(), 1);
    }
}
