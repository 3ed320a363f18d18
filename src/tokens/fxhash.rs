/// `FxHash` (the word hasher of rustc) of a byte string, eight bytes at a time, the last word
/// zero-padded and marked with its length. `build.rs` lays out the embedded token tables by this
/// hash and the counter looks tokens up by it: both `include!` this one file, so they agree.
#[inline]
fn fx_hash(bytes: &[u8]) -> u64 {
    // rustc's FxHash multiplier: a 64-bit odd constant with good bit spread.
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let mut hash = 0u64;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut buffer = [0u8; 8];
        buffer.copy_from_slice(word);
        hash = (hash.rotate_left(5) ^ u64::from_le_bytes(buffer)).wrapping_mul(SEED);
    }
    let rest = words.remainder();
    let mut buffer = [0u8; 8];
    buffer[..rest.len()].copy_from_slice(rest);
    let last = u64::from_le_bytes(buffer) ^ ((rest.len() as u64) << 59);
    (hash.rotate_left(5) ^ last).wrapping_mul(SEED)
}
