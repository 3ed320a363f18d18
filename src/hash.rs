//! The one hasher: `FxHash`, rustc's word hasher, for the crate's hash maps and sets, and as the
//! two lanes of [`ContentHash`], the 128-bit hash that names content (archive files, the request
//! cache's replayed conversations).
//!
//! The keys hashed are short (call ids, digest lines) and come from the conversation, not from an
//! adversary the process must resist: a few multiplications per key beat `SipHash`'s rounds per
//! eight bytes, and a keyed hash's defence against chosen collisions buys nothing here. Maps and
//! sets hashed with it are looked up, never iterated into an output, so their order never shows.
//! Both are the same in every process and on every machine (words are read little-endian).

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

/// The 1 to 7 bytes of `rest` as a little-endian word padded with zeros, read in two loads that
/// may overlap (a byte both read lands on the same bits), not copied byte by byte: most keys
/// hashed are short and end in such a remainder.
fn last_word(rest: &[u8]) -> u64 {
    let n = rest.len();
    let (low, high, width) = if n >= 4 {
        let word = |at: usize| {
            u64::from(u32::from_le_bytes([
                rest[at],
                rest[at + 1],
                rest[at + 2],
                rest[at + 3],
            ]))
        };
        (word(0), word(n - 4), n - 4)
    } else if n >= 2 {
        let word = |at: usize| u64::from(u16::from_le_bytes([rest[at], rest[at + 1]]));
        (word(0), word(n - 2), n - 2)
    } else {
        (u64::from(rest[0]), 0, 0)
    };
    low | high << (8 * width)
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut buffer = [0u8; 8];
            buffer.copy_from_slice(word);
            self.add(u64::from_le_bytes(buffer));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            self.add(last_word(rest));
        }
    }

    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    /// The word itself, as [`Self::write`] reads its eight little-endian bytes: one step, not
    /// a loop (lengths and enum tags of hashed keys).
    fn write_u64(&mut self, word: u64) {
        self.add(word);
    }

    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A 128-bit hash of a sequence of byte strings: two [`FxHasher`] lanes with different seeds,
/// each fed every piece's length and bytes and finished by an avalanche, so that content that
/// differs anywhere (or is split otherwise) names another file or cache entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ContentHash(u64, u64);

impl ContentHash {
    /// The seeds of the two lanes: the fractional bits of the golden ratio and of √2.
    const LANES: [u64; 2] = [0x9e37_79b9_7f4a_7c15, 0x6a09_e667_f3bc_c908];

    /// The hash of `bytes` alone.
    pub(crate) fn of(bytes: &[u8]) -> Self {
        Self::default().then(bytes)
    }

    /// The hash of what this hash hashed followed by `bytes`.
    pub(crate) fn then(self, bytes: &[u8]) -> Self {
        let lane = |seed: u64, previous: u64| {
            let mut hasher = FxHasher(previous ^ seed);
            hasher.add(bytes.len() as u64);
            hasher.write(bytes);
            avalanche(hasher.finish())
        };
        Self(lane(Self::LANES[0], self.0), lane(Self::LANES[1], self.1))
    }

    /// The hash of what this hash hashed followed by what `other` hashed.
    pub(crate) fn then_hash(self, other: Self) -> Self {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&other.0.to_le_bytes());
        bytes[8..].copy_from_slice(&other.1.to_le_bytes());
        self.then(&bytes)
    }

    /// The first `digits` hexadecimal digits (at most 32), for a name.
    pub(crate) fn hex(self, digits: usize) -> String {
        let full = format!("{:016x}{:016x}", self.0, self.1);
        full[..digits.min(full.len())].to_string()
    }
}

/// Spreads every input bit over every output bit (the finaliser of `SplitMix64`), so that the
/// leading digits of a name depend on every byte.
fn avalanche(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_hash_reads_every_length_as_zero_padded_words() {
        // The words as written out: each eight bytes, the last padded with zeros.
        let by_bytes = |bytes: &[u8]| {
            let mut hasher = FxHasher::default();
            for word in bytes.chunks(8) {
                let mut buffer = [0u8; 8];
                buffer[..word.len()].copy_from_slice(word);
                hasher.add(u64::from_le_bytes(buffer));
            }
            hasher.finish()
        };
        let bytes: Vec<u8> = (0..40u8).map(|b| b.wrapping_mul(151) ^ 0xa5).collect();
        for size in [0, 1, 0x1234_5678, usize::MAX] {
            let word = size as u64;
            let (mut by_word, mut by_size) = (FxHasher::default(), FxHasher::default());
            by_word.write_u64(word);
            by_size.write_usize(size);
            assert_eq!(by_word.finish(), by_bytes(&word.to_le_bytes()));
            assert_eq!(by_size.finish(), by_bytes(&word.to_le_bytes()));
        }
        for start in 0..8 {
            for end in start..bytes.len() {
                let mut hasher = FxHasher::default();
                hasher.write(&bytes[start..end]);
                assert_eq!(
                    hasher.finish(),
                    by_bytes(&bytes[start..end]),
                    "{start}..{end}"
                );
            }
        }
    }

    #[test]
    fn a_content_hash_depends_on_every_byte_and_on_how_they_were_split() {
        let a = ContentHash::of(b"ab").then(b"c");
        assert_eq!(a, ContentHash::of(b"ab").then(b"c"));
        assert_ne!(a, ContentHash::of(b"a").then(b"bc"));
        assert_ne!(a, ContentHash::of(b"ab").then(b"d"));
        // Trailing zero bytes are content too (FxHasher pads a last short word with zeros).
        assert_ne!(ContentHash::of(b"ab"), ContentHash::of(b"ab\0"));
        assert_eq!(a.hex(12).len(), 12);
        assert_ne!(ContentHash::of(b"x").hex(12), ContentHash::of(b"y").hex(12));
    }
}
