//! Writes the `o200k_base` and `cl100k_base` rank tables into `OUT_DIR` as flat files that the
//! counter (`src/tokens/bpe.rs`) embeds and reads in milliseconds, instead of building
//! tiktoken-rs's encoder at run time (about 0.2 s, plus as long again to read it out).
//!
//! The tables are read out of tiktoken-rs's own encoders, the reference the tests compare
//! against: every rank that decodes and is not a special token. Each entry is the rank (u32,
//! little-endian), the length of the token's bytes (u8) and the bytes.

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
        std::fs::write(out.join(format!("{name}.ranks")), table(&core))
            .expect("OUT_DIR is writable");
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
