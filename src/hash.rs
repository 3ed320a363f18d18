//! The one hasher of the crate's hash maps and sets: `FxHash`, rustc's word hasher.
//!
//! The keys hashed are short (call ids, digest lines) and come from the conversation, not from an
//! adversary the process must resist: a few multiplications per key beat `SipHash`'s rounds per
//! eight bytes, and a keyed hash's defence against chosen collisions buys nothing here. Maps and
//! sets hashed with it are looked up, never iterated into an output, so their order never shows.

use std::hash::{BuildHasherDefault, Hasher};

/// Builds [`FxHasher`]s, for `HashMap` and `HashSet`.
pub(crate) type FxBuild = BuildHasherDefault<FxHasher>;

/// The state of one `FxHash`.
#[derive(Default)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    /// rustc's `FxHash` multiplier: a 64-bit odd constant with good bit spread.
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut buffer = [0u8; 8];
            buffer.copy_from_slice(word);
            self.add(u64::from_le_bytes(buffer));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut buffer = [0u8; 8];
            buffer[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(buffer));
        }
    }

    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
