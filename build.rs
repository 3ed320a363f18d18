//! Writes the `o200k_base` and `cl100k_base` rank tables into `OUT_DIR` as flat files that the
//! counter (`src/tokens/bpe.rs`) embeds and reads in milliseconds, instead of building
//! tiktoken-rs's encoder at run time (about 0.2 s, plus as long again to read it out).
//!
//! The tables are read out of tiktoken-rs's own encoders, the reference the tests compare
//! against: every rank that decodes and is not a special token. `NAME.ranks` holds the entries:
//! the rank (u32, little-endian), the length of the token's bytes (u8) and the bytes.
//! `NAME.slots` is an open-addressing hash table over them, laid out here so that the counter
//! has nothing to build: a power of two of slots (u32, little-endian), each empty (0) or the
//! offset of an entry plus one, placed by the top bits of [`fx_hash`] of the token's bytes with
//! linear probing.

use std::collections::HashSet;
use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for (name, core) in [
        ("o200k_base", tiktoken_rs::o200k_base()),
        ("cl100k_base", tiktoken_rs::cl100k_base()),
    ] {
        let core = core.expect("tiktoken-rs ships the o200k and cl100k tables");
        let table = table(&core);
        std::fs::write(out.join(format!("{name}.slots")), slots(&table))
            .expect("OUT_DIR is writable");
        std::fs::write(out.join(format!("{name}.ranks")), table).expect("OUT_DIR is writable");
    }
}

/// The ordinary tokens of an encoder, in rank order.
fn table(core: &tiktoken_rs::CoreBPE) -> Vec<u8> {
    let specials: HashSet<&str> = core.special_tokens();
    let last_special = specials
        .iter()
        .flat_map(|special| core.encode_with_special_tokens(special))
        .max()
        .unwrap_or(0);
    let mut table = Vec::new();
    for rank in 0u32.. {
        match core.decode_bytes(&[rank]) {
            Ok(bytes) => {
                if std::str::from_utf8(&bytes).is_ok_and(|s| specials.contains(s)) {
                    continue;
                }
                let len = u8::try_from(bytes.len()).expect("tokens are under 256 bytes");
                table.extend(rank.to_le_bytes());
                table.push(len);
                table.extend(bytes);
            }
            Err(_) if rank > last_special => break,
            Err(_) => {}
        }
    }
    table
}

include!("src/tokens/fxhash.rs");

/// The hash table over the entries of `table`: twice as many slots as entries, rounded up to a
/// power of two, so probes stay short.
fn slots(table: &[u8]) -> Vec<u8> {
    let mut offsets = Vec::new();
    let mut at = 0;
    while at < table.len() {
        offsets.push(at);
        at += 5 + usize::from(table[at + 4]);
    }
    let size = (offsets.len() * 2).next_power_of_two();
    let shift = 64 - size.trailing_zeros();
    let mut slots = vec![0u32; size];
    for offset in offsets {
        let bytes = &table[offset + 5..offset + 5 + usize::from(table[offset + 4])];
        let mut slot = usize::try_from(fx_hash(bytes) >> shift).expect("below the slot count");
        while slots[slot] != 0 {
            slot = (slot + 1) & (size - 1);
        }
        slots[slot] = u32::try_from(offset + 1).expect("tables are under 4 GB");
    }
    slots.iter().flat_map(|slot| slot.to_le_bytes()).collect()
}
