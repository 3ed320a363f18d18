//! Pre-tokenizers for the `o200k_base` and `cl100k_base` split patterns, written by hand.
//!
//! tiktoken splits text into *pieces* with a regular expression before the byte-pair merge
//! (tiktoken-rs: `O200K_BASE_PAT_STR` and the pattern inside `cl100k_base()`; keep in sync with
//! those). Those patterns need a backtracking engine (lookahead, possessive quantifiers), which
//! costs most of tiktoken-rs's counting time. Here each alternative is decided directly, in the
//! pattern's order, with the backtracking worked out once below, so a piece is found in one
//! forward pass over its characters. The pieces are exactly the regex's matches: every character
//! starts a match of some alternative, so the pieces tile the text.
//!
//! The Unicode classes (`\p{L}`, `\p{Lu}`, `\s`, …) come from `regex-syntax`, the crate that
//! gives fancy-regex its classes, so both sides agree on every code point.

use regex_syntax::hir::{Class, HirKind};

/// `\p{L}`.
const LETTER: u8 = 1;
/// `\p{N}`.
const NUMBER: u8 = 2;
/// `\s` (Unicode `White_Space`).
const SPACE: u8 = 4;
/// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`: letters that may open a word.
const UPPER: u8 = 8;
/// o200k's `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`: letters that may continue a word.
const LOWER: u8 = 16;

/// Number of Unicode code points: the length of the class table.
const CODE_POINTS: usize = 0x11_0000;

/// Which of the two split patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// `O200K_BASE_PAT_STR`.
    O200k,
    /// The `cl100k_base` pattern.
    Cl100k,
}

/// The class flags of every code point, one byte each.
pub(crate) struct Classes {
    table: Vec<u8>,
}

impl Classes {
    /// Builds the table from regex-syntax's Unicode data (about a millisecond).
    pub(crate) fn new() -> Self {
        let mut table = vec![0u8; CODE_POINTS];
        for (class, flag) in [
            (r"\p{L}", LETTER),
            (r"\p{N}", NUMBER),
            (r"\s", SPACE),
            (r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", UPPER),
            (r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", LOWER),
        ] {
            for (start, end) in ranges(class) {
                for entry in &mut table[start..=end] {
                    *entry |= flag;
                }
            }
        }
        Self { table }
    }

    /// The pieces of `text` under `pattern`, in order; they concatenate to `text`.
    pub(crate) fn pieces<'t>(&'t self, pattern: Pattern, text: &'t str) -> Pieces<'t> {
        Pieces {
            scan: Scan {
                text,
                classes: &self.table,
            },
            pattern,
            at: 0,
        }
    }
}

/// The code point ranges of a one-class pattern.
fn ranges(class: &str) -> Vec<(usize, usize)> {
    let hir = regex_syntax::parse(class).expect("the class patterns are valid");
    match hir.kind() {
        HirKind::Class(Class::Unicode(unicode)) => unicode
            .ranges()
            .iter()
            .map(|r| (r.start() as usize, r.end() as usize))
            .collect(),
        _ => unreachable!("the class patterns are Unicode classes"),
    }
}

/// An iterator over the pieces of a text.
pub(crate) struct Pieces<'t> {
    scan: Scan<'t>,
    pattern: Pattern,
    at: usize,
}

impl<'t> Iterator for Pieces<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        let start = self.at;
        if start >= self.scan.text.len() {
            return None;
        }
        let end = match self.pattern {
            Pattern::O200k => self.scan.o200k(start),
            Pattern::Cl100k => self.scan.cl100k(start),
        };
        self.at = end;
        Some(&self.scan.text[start..end])
    }
}

/// One character: its code point, class flags and byte length.
#[derive(Clone, Copy)]
struct Char {
    code: char,
    flags: u8,
    len: usize,
}

impl Char {
    fn is(self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    fn is_line_break(self) -> bool {
        matches!(self.code, '\r' | '\n')
    }

    /// `[^\r\n\p{L}\p{N}]`: what may precede a word.
    fn is_word_prefix(self) -> bool {
        !self.is_line_break() && !self.is(LETTER | NUMBER)
    }

    /// `[^\s\p{L}\p{N}]`: punctuation and symbols.
    fn is_symbol(self) -> bool {
        !self.is(SPACE | LETTER | NUMBER)
    }
}

/// A text and the class table, read character by character at byte offsets.
struct Scan<'t> {
    text: &'t str,
    classes: &'t [u8],
}

impl Scan<'_> {
    /// The character at byte offset `at`, or `None` at the end.
    #[inline]
    fn at(&self, at: usize) -> Option<Char> {
        let byte = *self.text.as_bytes().get(at)?;
        if byte.is_ascii() {
            return Some(Char {
                code: char::from(byte),
                flags: self.classes[usize::from(byte)],
                len: 1,
            });
        }
        let code = self.text[at..].chars().next()?;
        Some(Char {
            code,
            flags: self.classes[code as usize],
            len: code.len_utf8(),
        })
    }

    /// The end of the run of characters satisfying `keep` that starts at `at`.
    #[inline]
    fn run(&self, mut at: usize, keep: impl Fn(Char) -> bool) -> usize {
        while let Some(c) = self.at(at).filter(|&c| keep(c)) {
            at += c.len;
        }
        at
    }

    /// The end of `\p{N}{1,3}` at `at` (whose character is a number).
    fn digits(&self, mut at: usize) -> usize {
        for _ in 0..3 {
            match self.at(at) {
                Some(c) if c.is(NUMBER) => at += c.len,
                _ => break,
            }
        }
        at
    }

    /// The end of `[^\s\p{L}\p{N}]+` followed by a run of `tail` characters, with an optional
    /// leading space, or `None` when no symbol follows.
    fn symbols(&self, start: usize, first: Char, tail: fn(char) -> bool) -> Option<usize> {
        let at = if first.code == ' ' { start + 1 } else { start };
        if !self.at(at)?.is_symbol() {
            return None;
        }
        let end = self.run(at, Char::is_symbol);
        Some(self.run(end, |c| tail(c.code)))
    }

    /// The whitespace alternatives at a whitespace character `start`. Both patterns have
    /// `\s*[\r\n]+` (o200k) or `\s*[\r\n]` (cl100k), which end after the run's last line
    /// break (the greedy `\s*` backs off to it); `\s+(?!\S)`, which takes the run less its last
    /// character (so that whitespace follows), or all of it at the end of the text; and `\s+` or
    /// `\s`, which are only reached for a single character. cl100k tries `\s++$` (the whole run
    /// when it ends the text) before the line breaks: `end_first`.
    fn spaces(&self, start: usize, end_first: bool) -> usize {
        let mut at = start;
        let mut after_break = None;
        let mut last = start;
        while let Some(c) = self.at(at).filter(|c| c.is(SPACE)) {
            last = at;
            at += c.len;
            if c.is_line_break() {
                after_break = Some(at);
            }
        }
        let at_end = at == self.text.len();
        if end_first && at_end {
            return at;
        }
        if let Some(end) = after_break {
            return end;
        }
        if at_end || last == start { at } else { last }
    }

    /// The end of the o200k piece starting at `start`. The alternatives, in order:
    /// 1. `[^\r\n\p{L}\p{N}]?[UPPER]*[LOWER]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
    /// 2. `[^\r\n\p{L}\p{N}]?[UPPER]+[LOWER]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
    /// 3. `\p{N}{1,3}`
    /// 4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
    /// 5. `\s*[\r\n]+`, 6. `\s+(?!\S)`, 7. `\s+`
    fn o200k(&self, start: usize) -> usize {
        let Some(first) = self.at(start) else {
            return start;
        };
        if let Some(end) = self.o200k_word(start, first) {
            return end;
        }
        if first.is(NUMBER) {
            return self.digits(start);
        }
        if let Some(end) = self.symbols(start, first, |c| matches!(c, '\r' | '\n' | '/')) {
            return end;
        }
        self.spaces(start, false)
    }

    /// Alternatives 1 and 2 of o200k: each first with the optional prefix character taken,
    /// then without it (the regex backtracks in that order), then the contraction suffix.
    fn o200k_word(&self, start: usize, first: Char) -> Option<usize> {
        let with_prefix = first.is_word_prefix().then_some(start + first.len);
        let starts = [with_prefix, Some(start)];
        let end = starts
            .iter()
            .flatten()
            .find_map(|&at| self.upper_star_lower_plus(at))
            .or_else(|| {
                starts
                    .iter()
                    .flatten()
                    .find_map(|&at| self.upper_plus_lower_star(at))
            })?;
        Some(self.contraction(end))
    }

    /// `[UPPER]*[LOWER]+` at `at`. The classes overlap (`Lm`, `Lo`, `M` are in both): the greedy
    /// `[UPPER]*` takes the whole run, then backs off to the last position where `[LOWER]+` can
    /// start. At the run's end that is a lowercase letter (which extends the match over the
    /// following `[LOWER]` run); inside the run it is the last character in both classes, and
    /// the match ends right after it, since what follows it is in `[UPPER]` only.
    fn upper_star_lower_plus(&self, mut at: usize) -> Option<usize> {
        let mut after_last_lower = None;
        while let Some(c) = self.at(at).filter(|c| c.is(UPPER)) {
            at += c.len;
            if c.is(LOWER) {
                after_last_lower = Some(at);
            }
        }
        match self.at(at) {
            Some(c) if c.is(LOWER) => Some(self.run(at, |c| c.is(LOWER))),
            _ => after_last_lower,
        }
    }

    /// `[UPPER]+[LOWER]*` at `at`: no backtracking is ever needed.
    fn upper_plus_lower_star(&self, at: usize) -> Option<usize> {
        if !self.at(at)?.is(UPPER) {
            return None;
        }
        let end = self.run(at, |c| c.is(UPPER));
        Some(self.run(end, |c| c.is(LOWER)))
    }

    /// o200k's optional `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `at`.
    fn contraction(&self, at: usize) -> usize {
        self.contraction_of(at, &["s", "t", "re", "ve", "m", "ll", "d"])
            .unwrap_or(at)
    }

    /// The end of `'` followed case-insensitively by the first of `suffixes` that matches.
    fn contraction_of(&self, at: usize, suffixes: &[&str]) -> Option<usize> {
        let rest = self.text.get(at..)?.strip_prefix('\'')?;
        suffixes.iter().find_map(|suffix| {
            let mut chars = rest.chars();
            let mut len = 1;
            for expected in suffix.chars() {
                let c = chars.next()?;
                if fold(c) != expected {
                    return None;
                }
                len += c.len_utf8();
            }
            Some(at + len)
        })
    }

    /// The end of the cl100k piece starting at `start`. The alternatives, in order:
    /// 1. `'(?i:[sdmt]|ll|ve|re)`
    /// 2. `[^\r\n\p{L}\p{N}]?+\p{L}++`
    /// 3. `\p{N}{1,3}+`
    /// 4. ` ?[^\s\p{L}\p{N}]++[\r\n]*+`
    /// 5. `\s++$`, 6. `\s*[\r\n]`, 7. `\s+(?!\S)`, 8. `\s`
    fn cl100k(&self, start: usize) -> usize {
        let Some(first) = self.at(start) else {
            return start;
        };
        if let Some(end) = self.contraction_of(start, &["s", "d", "m", "t", "ll", "ve", "re"]) {
            return end;
        }
        // The possessive `?+` keeps a prefix character once taken: no retry without it.
        let letters = if first.is_word_prefix() {
            start + first.len
        } else {
            start
        };
        if self.at(letters).is_some_and(|c| c.is(LETTER)) {
            return self.run(letters, |c| c.is(LETTER));
        }
        if first.is(NUMBER) {
            return self.digits(start);
        }
        if let Some(end) = self.symbols(start, first, |c| matches!(c, '\r' | '\n')) {
            return end;
        }
        self.spaces(start, true)
    }
}

/// Simple case folding for the contraction letters: `(?i)s` also matches `ſ` (U+017F), and no
/// other non-ASCII character folds to `s`, `t`, `r`, `e`, `v`, `m`, `l` or `d`.
fn fold(c: char) -> char {
    if c == 'ſ' {
        's'
    } else {
        c.to_ascii_lowercase()
    }
}
