//! An exact `o200k_base` / `cl100k_base` token counter: the hand-written pre-tokenizer of
//! [`pretokenize`](super::pretokenize) feeding a byte-pair merge, piece by piece.
//!
//! It counts what tiktoken-rs's `encode_ordinary(text).len()` counts, token for token: the same
//! pieces, the same shortcut (a piece that is itself a token is one token), and the same merge
//! (repeatedly join the adjacent pair whose bytes form the lowest-ranked token, leftmost first).
//! The rank tables are read out of tiktoken-rs's own encoders when the crate is built
//! (`build.rs`) and embedded; tiktoken-rs stays the reference the tests compare against.
//!
//! One difference is on purpose: a piece longer than [`WINDOW`] bytes (a megabyte of one
//! repeated character is a single piece) is merged window by window, in bounded memory and
//! O(n log n) time, instead of all at once. The count is still exact. A token sequence is the
//! byte-pair encoding of its text exactly when each pair of neighbouring tokens is the encoding
//! of the two tokens' bytes (see "Properties of BPE", corollaries II–IIIa, in the README of
//! GitHub's `bpe` crate). So the windows' encodings are joined only where the token before and
//! the token after the joint pass that test; where they do not, the joint moves back one token
//! at a time, which keeps what came before a valid encoding.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::pretokenize::{Classes, Pattern};

/// A token's rank: its id, and its priority in the merge (lower merges first).
type Rank = u32;

/// A rank that no token has: "these bytes are not a token".
const NOT_A_TOKEN: Rank = Rank::MAX;

/// Pieces shorter than this are merged on a flat list, which is quadratic but fastest for the
/// short pieces text is made of; longer ones with a heap (tiktoken-rs switches at 100 bytes too).
const SHORT_PIECE: usize = 100;

/// The longest stretch of one piece merged at once: longer pieces are merged window by window.
/// 64 KiB keeps a window's merge state near 3 MB and is far above any piece of ordinary text.
pub(crate) const WINDOW: usize = 1 << 16;

include!("fxhash.rs");

/// One encoding's embedded token table (see `build.rs` for the layout): entries of rank (u32,
/// little-endian), length (u8) and bytes, and a hash table of slots over them.
struct Table {
    entries: &'static [u8],
    slots: &'static [u8],
    /// Shift that keeps the top bits of a hash: 64 less log2 of the slot count.
    shift: u32,
    /// Slot count less one.
    mask: usize,
}

impl Table {
    fn new((entries, slots): (&'static [u8], &'static [u8])) -> Self {
        let size = slots.len() / 4;
        Self {
            entries,
            slots,
            shift: 64 - size.trailing_zeros(),
            mask: size - 1,
        }
    }

    /// The rank of the token with these bytes, or [`NOT_A_TOKEN`].
    #[inline]
    fn rank(&self, bytes: &[u8]) -> Rank {
        // The top bits of a 64-bit hash: below the slot count, which is a power of two.
        #[allow(clippy::cast_possible_truncation)]
        let mut slot = (fx_hash(bytes) >> self.shift) as usize;
        loop {
            let Some(&[a, b, c, d]) = self.slots.get(slot * 4..slot * 4 + 4) else {
                return NOT_A_TOKEN;
            };
            // An empty slot (0) ends the probe; others hold an entry's offset plus one.
            let Some(entry) = (u32::from_le_bytes([a, b, c, d]) as usize).checked_sub(1) else {
                return NOT_A_TOKEN;
            };
            if let Some(&[a, b, c, d, len]) = self.entries.get(entry..entry + 5) {
                let start = entry + 5;
                if usize::from(len) == bytes.len()
                    && self.entries.get(start..start + bytes.len()) == Some(bytes)
                {
                    return Rank::from_le_bytes([a, b, c, d]);
                }
            }
            slot = (slot + 1) & self.mask;
        }
    }

    /// How many tokens the table holds (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.slots
            .chunks_exact(4)
            .filter(|slot| slot != &[0, 0, 0, 0])
            .count()
    }
}

/// The `o200k_base` table written by `build.rs`: its entries and its slots.
static O200K_TABLE: (&[u8], &[u8]) = (
    include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.ranks")),
    include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.slots")),
);
/// The `cl100k_base` table, in the same layout.
static CL100K_TABLE: (&[u8], &[u8]) = (
    include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.ranks")),
    include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.slots")),
);

/// The counter: rank table, class table and split pattern.
pub(crate) struct Bpe {
    ranks: Table,
    classes: Classes,
    pattern: Pattern,
}

impl Bpe {
    /// The counter for `pattern`'s encoding, over its embedded table (nothing to build but the
    /// character classes, about a millisecond).
    pub(crate) fn new(pattern: Pattern) -> Self {
        let table = match pattern {
            Pattern::O200k => O200K_TABLE,
            Pattern::Cl100k => CL100K_TABLE,
        };
        Self {
            ranks: Table::new(table),
            classes: Classes::new(),
            pattern,
        }
    }

    /// Tokens of `text`: `encode_ordinary(text).len()`.
    pub(crate) fn count(&self, text: &str) -> usize {
        let mut parts = Vec::new();
        self.classes
            .pieces(self.pattern, text)
            .map(|piece| self.count_piece(piece.as_bytes(), &mut parts))
            .sum()
    }

    #[inline]
    fn rank(&self, bytes: &[u8]) -> Rank {
        self.ranks.rank(bytes)
    }

    /// Tokens of one piece; `parts` is scratch space.
    fn count_piece(&self, piece: &[u8], parts: &mut Vec<(usize, Rank)>) -> usize {
        if piece.len() == 1 || self.rank(piece) != NOT_A_TOKEN {
            1
        } else if piece.len() < SHORT_PIECE {
            self.merge_short(piece, parts);
            parts.len() - 1
        } else if piece.len() <= WINDOW {
            self.merge_long(piece).len()
        } else {
            self.count_windows(piece, WINDOW)
        }
    }

    /// Byte-pair merge on a flat list of `(start, rank of the pair starting here)`, ending with
    /// two sentinels; leaves the token starts (and the end) in `parts`.
    fn merge_short(&self, piece: &[u8], parts: &mut Vec<(usize, Rank)>) {
        parts.clear();
        parts.extend((0..piece.len() - 1).map(|i| (i, self.rank(&piece[i..i + 2]))));
        parts.push((piece.len() - 1, NOT_A_TOKEN));
        parts.push((piece.len(), NOT_A_TOKEN));
        // The rank of the pair starting at part `i`: its bytes run to the start of part i + 2.
        let pair = |parts: &[(usize, Rank)], i: usize| match parts.get(i + 2) {
            Some(&(end, _)) => self.rank(&piece[parts[i].0..end]),
            None => NOT_A_TOKEN,
        };
        loop {
            let mut best = (NOT_A_TOKEN, 0);
            for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < best.0 {
                    best = (rank, i);
                }
            }
            if best.0 == NOT_A_TOKEN {
                break;
            }
            let i = best.1;
            parts.remove(i + 1);
            parts[i].1 = pair(parts, i);
            if i > 0 {
                parts[i - 1].1 = pair(parts, i - 1);
            }
        }
    }

    /// Byte-pair merge with a heap of candidate pairs, in O(n log n): the same merges in the
    /// same order as [`Bpe::merge_short`]. Returns the start of each token.
    fn merge_long(&self, piece: &[u8]) -> Vec<usize> {
        let n = piece.len();
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<Option<usize>> = (0..n).map(|i| i.checked_sub(1)).collect();
        let mut pair: Vec<Rank> = vec![NOT_A_TOKEN; n];
        let mut heap = BinaryHeap::with_capacity(n);
        for i in 0..n.saturating_sub(1) {
            pair[i] = self.rank(&piece[i..i + 2]);
            if pair[i] != NOT_A_TOKEN {
                heap.push(Reverse((pair[i], i)));
            }
        }
        while let Some(Reverse((rank, i))) = heap.pop() {
            // Stale entries: the token at `i` was merged away or has grown since.
            if pair[i] != rank {
                continue;
            }
            let gone = next[i];
            let after = next[gone];
            next[i] = after;
            pair[gone] = NOT_A_TOKEN;
            pair[i] = NOT_A_TOKEN;
            if after < n {
                prev[after] = Some(i);
                pair[i] = self.rank(&piece[i..next[after]]);
                if pair[i] != NOT_A_TOKEN {
                    heap.push(Reverse((pair[i], i)));
                }
            }
            if let Some(before) = prev[i] {
                pair[before] = self.rank(&piece[before..after]);
                if pair[before] != NOT_A_TOKEN {
                    heap.push(Reverse((pair[before], before)));
                }
            }
        }
        let mut starts = Vec::new();
        let mut at = 0;
        while at < n {
            starts.push(at);
            at = next[at];
        }
        starts
    }

    /// Whether the tokens `piece[first.0..first.1]` and `piece[first.1..end]` are the
    /// byte-pair encoding of their joined bytes.
    fn compatible(&self, piece: &[u8], first: (usize, usize), end: usize) -> bool {
        let mut parts = Vec::new();
        self.merge_short_or_long(&piece[first.0..end], &mut parts);
        parts.len() == 3 && parts[1].0 == first.1 - first.0
    }

    /// Either merge, for a stretch of any length, leaving `(start, _)` parts and the end.
    fn merge_short_or_long(&self, bytes: &[u8], parts: &mut Vec<(usize, Rank)>) {
        if bytes.len() < SHORT_PIECE {
            self.merge_short(bytes, parts);
        } else {
            parts.clear();
            parts.extend(self.merge_long(bytes).into_iter().map(|s| (s, NOT_A_TOKEN)));
            parts.push((bytes.len(), NOT_A_TOKEN));
        }
    }

    /// Tokens of a piece longer than `window` bytes, merged window by window (see the module
    /// docs): exactly the count of merging it whole.
    pub(crate) fn count_windows(&self, piece: &[u8], window: usize) -> usize {
        let mut total = 0;
        // The tokens of the last accepted window, as (start, end) in `piece`: the joint may move
        // back over them.
        let mut open: Vec<(usize, usize)> = Vec::new();
        // The last window merged and its token starts: a run of one character repeats it.
        let mut memo: (&[u8], Vec<usize>) = (&[], Vec::new());
        let mut start = 0;
        loop {
            let end = (start + window).min(piece.len());
            let bytes = &piece[start..end];
            if memo.0 != bytes {
                memo = (bytes, self.merge_long(bytes));
            }
            let starts = &memo.1;
            let first_end = starts.get(1).map_or(end, |s| start + s);
            if let Some(&before) = open.last() {
                if !self.compatible(piece, before, first_end) {
                    open.pop();
                    total -= 1;
                    start = before.0;
                    if open.is_empty() {
                        // Backed over a whole window: no longer any token to test the joint
                        // against. Never seen on real text; merge what is left at once.
                        return total + self.merge_long(&piece[start..]).len();
                    }
                    continue;
                }
            }
            total += starts.len();
            if end == piece.len() {
                return total;
            }
            open.clear();
            open.extend(
                starts
                    .iter()
                    .zip(starts.iter().skip(1).chain([&(end - start)]))
                    .map(|(&s, &e)| (start + s, start + e)),
            );
            start = end;
        }
    }

    /// Tokens of a piece merged whole, without the one-token shortcut (for tests).
    #[cfg(test)]
    fn count_merged(&self, piece: &[u8]) -> usize {
        let mut parts = Vec::new();
        self.merge_short_or_long(piece, &mut parts);
        parts.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o200k() -> Bpe {
        Bpe::new(Pattern::O200k)
    }

    #[test]
    fn windows_count_exactly_what_one_merge_counts() {
        let bpe = o200k();
        let texts = [
            "a".repeat(5000),
            "ab".repeat(3000),
            "=".repeat(4000),
            "aaaaaaaaaabbbbbbbbbbbaaaaaaaaaaaaaaaabababa".repeat(100),
            "ééééééééé".repeat(300),
            " ".repeat(3000),
            "Zzzzzzzzzzzzzzzz".repeat(400),
        ];
        for text in &texts {
            let whole = bpe.count_merged(text.as_bytes());
            for window in [2, 3, 7, 16, 100, 257, 1024] {
                assert_eq!(
                    bpe.count_windows(text.as_bytes(), window),
                    whole,
                    "{} bytes of {:?}… in windows of {window}",
                    text.len(),
                    &text[..10]
                );
            }
        }
    }

    #[test]
    fn embedded_tables_hold_every_ordinary_token() {
        assert_eq!(Bpe::new(Pattern::O200k).ranks.len(), 199_998);
        assert_eq!(Bpe::new(Pattern::Cl100k).ranks.len(), 100_256);
    }

    #[test]
    fn short_and_long_merges_agree() {
        let bpe = o200k();
        for text in [
            "abcabcabcabcabcabcabc",
            "hello world",
            "ééééé",
            "zzzzzzzzzzzzzzzzzzzzz",
        ] {
            let mut parts = Vec::new();
            bpe.merge_short(text.as_bytes(), &mut parts);
            let short: Vec<usize> = parts.iter().map(|p| p.0).collect();
            let mut long = bpe.merge_long(text.as_bytes());
            long.push(text.len());
            assert_eq!(short, long, "{text}");
        }
    }
}
