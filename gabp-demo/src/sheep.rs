//! The sheep of the demo world: they wander one block per tick on the grass, so that an agent sees time pass
//! and sees it stop when time is paused (SPEC/1.0 extensions.md §time-control).

use schemars::JsonSchema;
use serde::Serialize;

use super::world::{BlockType, WORLD_SIZE};

/// The height at which sheep walk: on the grass.
pub const SHEEP_Y: i64 = 5;

/// Where the sheep start, and the seed of each one's wandering.
const FLOCK: [(i64, i64, u64); 3] = [
    (2, 12, 0x5eed_0001),
    (12, 2, 0x5eed_0002),
    (13, 13, 0x5eed_0003),
];

/// One sheep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sheep {
    id: String,
    x: i64,
    z: i64,
    heading: usize,
    moves: u64,
    rng: u64,
}

/// A sheep as `world/entities` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Entity {
    /// `sheep-1`, `sheep-2`, ...
    pub id: String,
    /// `sheep`.
    pub kind: String,
    /// East-west block.
    pub x: i64,
    /// Height.
    pub y: i64,
    /// North-south block.
    pub z: i64,
    /// Blocks walked since the world was made: one per tick unless boxed in.
    pub moves: u64,
}

/// North, east, south, west as `(dx, dz)`.
const HEADINGS: [(i64, i64); 4] = [(0, -1), (1, 0), (0, 1), (-1, 0)];

impl Sheep {
    /// The flock of a fresh world.
    pub fn flock() -> Vec<Sheep> {
        FLOCK
            .iter()
            .zip(1..)
            .map(|(&(x, z, seed), n)| Sheep {
                id: format!("sheep-{n}"),
                x,
                z,
                heading: usize::try_from(seed % 4).unwrap_or(0),
                moves: 0,
                rng: seed,
            })
            .collect()
    }

    /// Sheep number `n` (from 1) standing at `(x, z)`, wandering by `seed`.
    pub fn at(n: usize, x: i64, z: i64, seed: u64) -> Sheep {
        Sheep {
            id: format!("sheep-{n}"),
            x,
            z,
            heading: usize::try_from(seed % 4).unwrap_or(0),
            moves: 0,
            rng: seed,
        }
    }

    /// Where it stands, `(x, z)`.
    pub fn position(&self) -> (i64, i64) {
        (self.x, self.z)
    }

    /// True one time in `n`, by the sheep's own pseudo-random numbers.
    pub fn chance(&mut self, n: u64) -> bool {
        self.next() % n.max(1) == 0
    }

    /// One tick of fleeing the player at `from`: walks one block to the free neighbour farthest from it
    /// (ties broken by the sheep's heading), unless no neighbour is farther than where it stands.
    pub fn flee(&mut self, from: (i64, i64), free: impl Fn(i64, i64) -> bool) {
        let distance = |x: i64, z: i64| (x - from.0).pow(2) + (z - from.1).pow(2);
        let mut best = (distance(self.x, self.z), None);
        for turn in 0..4 {
            let heading = (self.heading + turn) % 4;
            let (dx, dz) = HEADINGS[heading];
            let (x, z) = (self.x + dx, self.z + dz);
            if (0..WORLD_SIZE).contains(&x) && (0..WORLD_SIZE).contains(&z) && free(x, z) {
                let d = distance(x, z);
                if d > best.0 {
                    best = (d, Some((heading, x, z)));
                }
            }
        }
        if let (_, Some((heading, x, z))) = best {
            self.heading = heading;
            self.x = x;
            self.z = z;
            self.moves += 1;
        }
    }

    /// The next pseudo-random number (a 64-bit LCG: the same world always wanders the same way).
    fn next(&mut self) -> u64 {
        self.rng = self
            .rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.rng >> 33
    }

    /// One tick: sometimes turns, then walks one block, turning clockwise past the edge of the world and past
    /// blocks in the way (`free(x, z)` says whether a sheep may stand there). Boxed in, it stays.
    pub fn step(&mut self, free: impl Fn(i64, i64) -> bool) {
        match self.next() % 8 {
            0 => self.heading = (self.heading + 1) % 4,
            1 => self.heading = (self.heading + 3) % 4,
            _ => {}
        }
        for turn in 0..4 {
            let heading = (self.heading + turn) % 4;
            let (dx, dz) = HEADINGS[heading];
            let (x, z) = (self.x + dx, self.z + dz);
            if (0..WORLD_SIZE).contains(&x) && (0..WORLD_SIZE).contains(&z) && free(x, z) {
                self.heading = heading;
                self.x = x;
                self.z = z;
                self.moves += 1;
                return;
            }
        }
    }

    /// As `world/entities` reports it.
    pub fn entity(&self) -> Entity {
        Entity {
            id: self.id.clone(),
            kind: "sheep".to_owned(),
            x: self.x,
            y: SHEEP_Y,
            z: self.z,
            moves: self.moves,
        }
    }
}

/// Whether a sheep may stand on a block holding `block` at its walking height.
pub fn walkable(block: BlockType) -> bool {
    matches!(block, BlockType::Air | BlockType::Torch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_one_block_per_tick_inside_the_world() {
        let mut flock = Sheep::flock();
        for _ in 0..500 {
            for sheep in &mut flock {
                let (x, z) = sheep.position();
                let moves = sheep.moves;
                sheep.step(|_, _| true);
                let (nx, nz) = sheep.position();
                assert_eq!((nx - x).abs() + (nz - z).abs(), 1, "{}", sheep.id);
                assert_eq!(sheep.moves, moves + 1);
                assert!((0..WORLD_SIZE).contains(&nx) && (0..WORLD_SIZE).contains(&nz));
            }
        }
    }

    #[test]
    fn blocked_turns_and_boxed_in_stays() {
        let mut sheep = Sheep::flock().remove(0);
        let (x, z) = sheep.position();
        sheep.step(|bx, bz| (bx, bz) == (x + 1, z));
        assert_eq!(sheep.position(), (x + 1, z), "the only free way");
        sheep.step(|_, _| false);
        assert_eq!(sheep.position(), (x + 1, z));
        assert_eq!(sheep.moves, 1);
    }

    #[test]
    fn the_same_world_wanders_the_same_way() {
        let walk = || {
            let mut sheep = Sheep::flock().remove(1);
            (0..50)
                .map(|_| {
                    sheep.step(|_, _| true);
                    sheep.position()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(walk(), walk());
    }
}
