//! `world/render`: the world seen from above as a PNG picture, returned as an image content item (SPEC/1.0
//! extensions.md §content).

use super::sheep::Entity;
use super::world::{BlockType, Position, World, WORLD_SIZE};
use super::DemoError;

/// Pixels per block when the call does not say.
pub const DEFAULT_SCALE: u32 = 8;
/// The largest scale.
pub const MAX_SCALE: u32 = 32;

/// The colour of the sheep.
pub const SHEEP_COLOUR: [u8; 3] = [245, 245, 240];
/// The colour of the player.
pub const PLAYER_COLOUR: [u8; 3] = [220, 40, 40];

/// The colour of a block seen from above, before shading by height.
pub fn block_colour(block: BlockType) -> [u8; 3] {
    match block {
        BlockType::Air => [135, 190, 235],
        BlockType::Stone => [125, 125, 125],
        BlockType::Dirt => [134, 96, 67],
        BlockType::Grass => [95, 159, 53],
        BlockType::Sand => [219, 207, 163],
        BlockType::OakLog => [102, 81, 51],
        BlockType::OakPlanks => [162, 130, 78],
        BlockType::Glass => [200, 230, 240],
        BlockType::Torch => [255, 200, 60],
    }
}

/// The colour of a column whose top block is `block` at height `y`: higher is brighter.
pub fn shaded(block: BlockType, y: i64) -> [u8; 3] {
    let shade = 0.6 + 0.4 * (y.clamp(0, WORLD_SIZE - 1) as f64) / ((WORLD_SIZE - 1) as f64);
    block_colour(block).map(|c| (f64::from(c) * shade).round().clamp(0.0, 255.0) as u8)
}

/// A picture of the world from above, `scale` pixels per block: north (z 0) at the top, west (x 0) on the left;
/// sheep as white squares, the player as a red one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    /// Width and height in pixels.
    pub size: u32,
    /// RGB, row by row.
    pub pixels: Vec<u8>,
}

impl Picture {
    /// Draws `world` with its `entities` and the player at `player`.
    pub fn draw(world: &World, entities: &[Entity], player: Position, scale: u32) -> Picture {
        let scale = scale.clamp(1, MAX_SCALE);
        let blocks = u32::try_from(WORLD_SIZE).unwrap_or(16);
        let size = blocks * scale;
        let mut picture = Picture {
            size,
            pixels: vec![0; (size * size * 3) as usize],
        };
        for z in 0..WORLD_SIZE {
            for x in 0..WORLD_SIZE {
                let colour = match world.top(x, z) {
                    Some((block, y)) => shaded(block, y),
                    None => block_colour(BlockType::Air),
                };
                picture.fill(x, z, 0, scale, colour);
            }
        }
        // Marks are inset by a quarter of a block, so the ground shows around them.
        let inset = scale / 4;
        for entity in entities {
            picture.fill(entity.x, entity.z, inset, scale, SHEEP_COLOUR);
        }
        let column = |v: f64| (v.floor() as i64).clamp(0, WORLD_SIZE - 1);
        picture.fill(
            column(player.x),
            column(player.z),
            inset,
            scale,
            PLAYER_COLOUR,
        );
        picture
    }

    fn fill(&mut self, x: i64, z: i64, inset: u32, scale: u32, colour: [u8; 3]) {
        let (Ok(x), Ok(z)) = (u32::try_from(x), u32::try_from(z)) else {
            return;
        };
        for py in z * scale + inset..(z + 1) * scale - inset {
            for px in x * scale + inset..(x + 1) * scale - inset {
                let at = ((py * self.size + px) * 3) as usize;
                if let Some(pixel) = self.pixels.get_mut(at..at + 3) {
                    pixel.copy_from_slice(&colour);
                }
            }
        }
    }

    /// The colour at pixel `(px, py)`.
    pub fn pixel(&self, px: u32, py: u32) -> Option<[u8; 3]> {
        let at = ((py * self.size + px) * 3) as usize;
        self.pixels.get(at..at + 3)?.try_into().ok()
    }

    /// The picture as a PNG file.
    ///
    /// # Errors
    ///
    /// [`DemoError::Picture`] when the encoder fails (it does not for a well-formed picture).
    pub fn png(&self) -> Result<Vec<u8>, DemoError> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.size, self.size);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let encode = || -> Result<(), png::EncodingError> {
            let mut writer = encoder.write_header()?;
            writer.write_image_data(&self.pixels)?;
            writer.finish()
        };
        encode().map_err(DemoError::Picture)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        pixels.truncate(info.buffer_size());
        (info.width, info.height, pixels)
    }

    #[test]
    fn a_real_png_with_the_trunk_and_the_player_where_they_are() {
        let world = World::new();
        let player = world.position(None).unwrap();
        let picture = Picture::draw(&world, &world.entities(), player, DEFAULT_SCALE);
        let png = picture.png().unwrap();
        assert!(png.len() <= 64 * 1024, "{} bytes", png.len());
        let (width, height, pixels) = decode(&png);
        assert_eq!((width, height), (128, 128));
        assert_eq!(pixels, picture.pixels);
        // The oak trunk's top (x 3, z 3, y 7): the middle of its block.
        let trunk = shaded(BlockType::OakLog, 7);
        assert_eq!(picture.pixel(3 * 8 + 4, 3 * 8 + 4), Some(trunk));
        // Grass at a corner where nothing stands; the player at (8.5, 8.5) drawn red.
        assert_eq!(picture.pixel(0, 127), Some(shaded(BlockType::Grass, 4)));
        assert_eq!(picture.pixel(8 * 8 + 4, 8 * 8 + 4), Some(PLAYER_COLOUR));
        for sheep in world.entities() {
            let (px, py) = (sheep.x as u32 * 8 + 4, sheep.z as u32 * 8 + 4);
            assert_eq!(picture.pixel(px, py), Some(SHEEP_COLOUR), "{}", sheep.id);
        }
    }

    #[test]
    fn scale_sets_the_size_and_is_clamped() {
        let world = World::new();
        let player = world.position(None).unwrap();
        for (scale, size) in [(1, 16), (32, 512), (99, 512), (0, 16)] {
            let picture = Picture::draw(&world, &[], player, scale);
            assert_eq!(picture.size, size, "scale {scale}");
            let (w, h, _) = decode(&picture.png().unwrap());
            assert_eq!((w, h), (size, size));
        }
    }
}
