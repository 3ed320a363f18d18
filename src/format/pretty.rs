//! Pretty-printed JSON written straight into a byte buffer: the very bytes `serde_json`'s pretty
//! printer writes (two spaces a level, `": "` after a key, the same escapes, numbers as read), for
//! a value that starts at any nesting depth, so that each message's bytes go straight into place.
//!
//! Strings are most of the output. They are scanned eight bytes at a time for the three kinds of
//! byte JSON escapes (control characters, `"` and `\`), and copied in runs between them.

use serde_json::Value;

use super::{Key, Sink};

/// Pretty-printed JSON being assembled.
#[derive(Default)]
pub(crate) struct Pretty {
    pub(crate) bytes: Vec<u8>,
    /// Nesting of the value written next through [`Sink`].
    pub(crate) depth: usize,
    /// Arrays and objects opened through [`Sink`] and not closed.
    open: usize,
    /// Whether the innermost one open has no element yet.
    first: bool,
    /// Whether a key was just written: its value follows on its line.
    keyed: bool,
}

impl Sink for Pretty {
    fn null(&mut self) {
        self.start();
        self.bytes.extend_from_slice(b"null");
    }

    fn bool(&mut self, value: bool) {
        self.start();
        self.boolean(value);
    }

    fn str(&mut self, text: &str) {
        self.start();
        self.string(text);
    }

    fn value(&mut self, value: &Value) {
        self.start();
        self.json(value, self.depth);
    }

    fn begin_array(&mut self) {
        self.open_with(b'[');
    }

    fn end_array(&mut self) {
        self.close_with(b']');
    }

    fn begin_object(&mut self) {
        self.open_with(b'{');
    }

    fn key(&mut self, key: &str) {
        self.line(self.first, self.depth);
        self.first = false;
        self.key_string(key);
        self.keyed = true;
    }

    fn fixed_key(&mut self, key: &Key) {
        self.line(self.first, self.depth);
        self.first = false;
        self.bytes.extend_from_slice(&key.written);
        self.bytes
            .truncate(self.bytes.len() - (key.written.len() - key.len));
        self.keyed = true;
    }

    fn end_object(&mut self) {
        self.close_with(b'}');
    }
}

impl Pretty {
    /// Starts a value written through [`Sink`]: after its key, on a line of its own in an
    /// array, or as it is at the top.
    fn start(&mut self) {
        if self.keyed {
            self.keyed = false;
        } else if self.open > 0 {
            self.line(self.first, self.depth);
            self.first = false;
        }
    }

    fn open_with(&mut self, bracket: u8) {
        self.start();
        self.bytes.push(bracket);
        self.depth += 1;
        self.open += 1;
        self.first = true;
    }

    fn close_with(&mut self, bracket: u8) {
        self.depth -= 1;
        self.open -= 1;
        self.close(self.first, self.depth, bracket);
        self.first = false;
    }

    /// Appends `value` pretty-printed as it appears at nesting `depth`.
    pub(crate) fn json(&mut self, value: &Value, depth: usize) {
        match value {
            Value::Null => self.bytes.extend_from_slice(b"null"),
            Value::Bool(value) => self.boolean(*value),
            Value::Number(number) => self.bytes.extend_from_slice(number.as_str().as_bytes()),
            Value::String(text) => self.string(text),
            Value::Array(items) => {
                self.bytes.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    self.line(i == 0, depth + 1);
                    self.json(item, depth + 1);
                }
                self.close(items.is_empty(), depth, b']');
            }
            Value::Object(map) => {
                self.bytes.push(b'{');
                for (i, (key, value)) in map.iter().enumerate() {
                    self.line(i == 0, depth + 1);
                    self.key_string(key);
                    self.json(value, depth + 1);
                }
                self.close(map.is_empty(), depth, b'}');
            }
        }
    }

    /// Appends the indentation of nesting `depth`.
    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.bytes.extend_from_slice(b"  ");
        }
    }

    /// Appends a line break, after a comma unless `first`, and the indentation of nesting
    /// `depth`: one copy out of [`LINE`] up to its depth.
    fn break_line(&mut self, first: bool, depth: usize) {
        let Some(unused) = SHALLOW.checked_sub(depth) else {
            return self.deep_break_line(first, depth);
        };
        // A copy of constant length is a few moves, where a copy of the needed length calls
        // `memcpy`; the indentation not needed is cut off after.
        if first {
            self.bytes.extend_from_slice(&LINE[1..]);
        } else {
            self.bytes.extend_from_slice(&LINE);
        }
        self.bytes.truncate(self.bytes.len() - 2 * unused);
    }

    /// [`Pretty::break_line`] deeper than [`SHALLOW`]: seldom, and kept apart so that the
    /// shallow path needs few registers.
    #[cold]
    #[inline(never)]
    fn deep_break_line(&mut self, first: bool, depth: usize) {
        self.bytes.extend_from_slice(&LINE[usize::from(first)..2]);
        self.indent(depth);
    }

    fn boolean(&mut self, value: bool) {
        self.bytes
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    /// Starts an element's line: a comma after the one before, a line break, the indentation.
    pub(crate) fn line(&mut self, first: bool, depth: usize) {
        self.break_line(first, depth);
    }

    /// Closes an array or object at nesting `depth`: on a line of its own unless it is empty.
    pub(crate) fn close(&mut self, empty: bool, depth: usize, bracket: u8) {
        if !empty {
            self.break_line(true, depth);
        }
        self.bytes.push(bracket);
    }

    /// Appends `text` as a JSON string.
    pub(crate) fn string(&mut self, text: &str) {
        self.string_then(text, []);
    }

    /// Appends `key` as a JSON string and the `": "` that follows a key.
    pub(crate) fn key_string(&mut self, key: &str) {
        self.string_then(key, *b": ");
    }

    /// Appends `text` as a JSON string, then `after`. Most strings written are at most two words
    /// long and have nothing to escape (keys, types, ids): such a one of a word is copied as one
    /// word ([`plain_word`]) cut to its length, one of two words is looked at in two
    /// ([`plain_words`]) and copied, where a longer one is scanned for escapes.
    fn string_then<const N: usize>(&mut self, text: &str, after: [u8; N]) {
        if let Some(word) = plain_word(text.as_bytes()) {
            let [b0, b1, b2, b3, b4, b5, b6, b7] = word.to_le_bytes();
            self.bytes
                .extend_from_slice(&[b'"', b0, b1, b2, b3, b4, b5, b6, b7]);
            self.bytes.truncate(self.bytes.len() - (8 - text.len()));
            self.bytes.push(b'"');
        } else if plain_words(text.as_bytes()) {
            self.bytes.push(b'"');
            self.bytes.extend_from_slice(text.as_bytes());
            self.bytes.push(b'"');
        } else {
            self.scanned_string(text);
        }
        self.bytes.extend_from_slice(&after);
    }

    /// Appends `text` as a JSON string: the runs between bytes to escape copied whole. Kept
    /// apart from the short strings' path, which then needs few registers.
    #[inline(never)]
    fn scanned_string(&mut self, text: &str) {
        let mut rest = text.as_bytes();
        // Room for the text and its quotes (more when it has escapes): the pushes do not grow.
        self.bytes.reserve(rest.len() + 2);
        self.bytes.push(b'"');
        while let Some(at) = first_escape(rest) {
            let byte = rest[at];
            self.bytes.extend_from_slice(&rest[..at]);
            match ESCAPES[usize::from(byte)] {
                b'u' => {
                    let hex = |nibble: u8| b"0123456789abcdef"[usize::from(nibble)];
                    self.bytes.extend_from_slice(&[
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        hex(byte >> 4),
                        hex(byte & 15),
                    ]);
                }
                escape => self.bytes.extend_from_slice(&[b'\\', escape]),
            }
            rest = &rest[at + 1..];
        }
        self.bytes.extend_from_slice(rest);
        self.bytes.push(b'"');
    }
}

/// Deepest nesting whose line breaks are cut from [`LINE`] whole.
const SHALLOW: usize = 16;

/// A comma, a line break and the indentation of nesting [`SHALLOW`].
const LINE: [u8; 2 + 2 * SHALLOW] = {
    let mut line = [b' '; 2 + 2 * SHALLOW];
    line[0] = b',';
    line[1] = b'\n';
    line
};

/// The bytes of a text of one to eight bytes with nothing to escape, in order from the lowest
/// byte, zeros above; `None` for a longer or empty text or one with a byte to escape. Read as
/// two overlapping loads of a power-of-two width, the last shifted into place.
fn plain_word(bytes: &[u8]) -> Option<u64> {
    let len = bytes.len();
    let (first, last, width) = match len {
        1 => (u64::from(bytes[0]), 0, 1),
        2 | 3 => {
            let at = |at: usize| u64::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
            (at(0), at(len - 2), 2)
        }
        4..=8 => {
            let at = |at: usize| {
                let word: [u8; 4] = bytes[at..at + 4].try_into().expect("four bytes");
                u64::from(u32::from_le_bytes(word))
            };
            (at(0), at(len - 4), 4)
        }
        _ => return None,
    };
    let word = first | last << (8 * (len - width));
    // Bytes above the text are zeros, flagged as control characters: only flags below its
    // length count, and those are exact (a borrow only flags bytes above a flagged one).
    let below = u64::MAX >> (64 - 8 * len);
    (escapes_in(word) & below == 0).then_some(word)
}

/// Whether `bytes` is of nine to sixteen bytes with nothing to escape: its first and its last
/// eight bytes, overlapping, have no flag ([`escapes_in`]).
fn plain_words(bytes: &[u8]) -> bool {
    let len = bytes.len();
    if !(9..=16).contains(&len) {
        return false;
    }
    escapes_in(word_at(bytes, 0)) | escapes_in(word_at(bytes, len - 8)) == 0
}

/// The eight bytes of `bytes` from `at`, in order from the lowest byte.
fn word_at(bytes: &[u8], at: usize) -> u64 {
    let word: [u8; 8] = bytes[at..at + 8].try_into().expect("eight bytes");
    u64::from_le_bytes(word)
}

/// Where the first byte of `bytes` that JSON escapes is, looking eight bytes at a time. The last
/// word ends the text, overlapping bytes already looked at; a text shorter than a word is looked
/// at in one word too ([`short_escape`]).
fn first_escape(bytes: &[u8]) -> Option<usize> {
    let Some(last) = bytes.len().checked_sub(8) else {
        return short_escape(bytes);
    };
    let mut at = 0;
    while at < last {
        let found = escapes_in(word_at(bytes, at));
        if found != 0 {
            return first_flag(at, found);
        }
        at += 8;
    }
    first_flag(last, escapes_in(word_at(bytes, last)))
}

/// Where the first byte JSON escapes is in a text shorter than a word: its first and last `n`
/// bytes side by side in one word (`n` the power of two with `n <= len < 2n`, overlapping when
/// `len < 2n`), spaces above. A flag in the last `n` lies above bytes already found clean.
fn short_escape(bytes: &[u8]) -> Option<usize> {
    let len = bytes.len();
    let (n, first, last) = match len {
        0 => return None,
        1 => (1, u64::from(bytes[0]), u64::from(bytes[0])),
        2 | 3 => {
            let at = |at: usize| u64::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
            (2, at(0), at(len - 2))
        }
        _ => {
            let at = |at: usize| {
                let word: [u8; 4] = bytes[at..at + 4].try_into().expect("four bytes");
                u64::from(u32::from_le_bytes(word))
            };
            (4, at(0), at(len - 4))
        }
    };
    let halves = first | last << (8 * n);
    let spaces = if n == 4 { 0 } else { repeat(b' ') << (16 * n) };
    let found = escapes_in(halves | spaces);
    let byte = found.trailing_zeros() as usize / 8;
    (found != 0).then(|| if byte < n { byte } else { len + byte - 2 * n })
}

/// The position of the lowest flag of `found`, a word read at `at`: exact, since no byte below
/// it was flagged, so none borrowed.
fn first_flag(at: usize, found: u64) -> Option<usize> {
    (found != 0).then(|| at + found.trailing_zeros() as usize / 8)
}

/// Eight copies of a byte.
const fn repeat(byte: u8) -> u64 {
    u64::from_ne_bytes([byte; 8])
}

/// The top bit of each byte of `word` that is zero, and maybe of bytes above the first such:
/// the lowest flag is always exact (a byte flagged only by a borrow lies above a zero byte).
const fn zeros_in(word: u64) -> u64 {
    word.wrapping_sub(repeat(1)) & !word & repeat(0x80)
}

/// The top bit of each byte of `word` that JSON escapes — below 0x20, `"` or `\` — with the
/// lowest flag exact, as in [`zeros_in`]. A byte below 0x20 borrows when 0x20 is subtracted
/// from it, as a zero byte does when 1 is.
const fn escapes_in(word: u64) -> u64 {
    let control = word.wrapping_sub(repeat(0x20)) & !word & repeat(0x80);
    control | zeros_in(word ^ repeat(b'"')) | zeros_in(word ^ repeat(b'\\'))
}

/// What each byte becomes after a backslash: 0 for a byte written as it is, `u` for one
/// written as `\u00XX` (as `serde_json` escapes).
const ESCAPES: [u8; 256] = {
    let mut escapes = [0; 256];
    let mut byte = 0;
    while byte < 0x20 {
        escapes[byte] = b'u';
        byte += 1;
    }
    escapes[0x08] = b'b';
    escapes[0x09] = b't';
    escapes[0x0a] = b'n';
    escapes[0x0c] = b'f';
    escapes[0x0d] = b'r';
    escapes[b'"' as usize] = b'"';
    escapes[b'\\' as usize] = b'\\';
    escapes
};

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn pretty(value: &Value) -> String {
        let mut out = Pretty::default();
        out.json(value, 0);
        String::from_utf8(out.bytes).expect("the writer writes UTF-8")
    }

    #[test]
    fn writes_what_serde_json_writes() {
        let value = json!({
            "empty": [], "none": {}, "n": 1.50, "big": 123_456_789_012_345_678_u64,
            "text": "a \"quoted\" \\ line\nand\ttab\u{0001}\u{001f}\u{007f} é 😀",
            "nested": [[1, [true, false, null]], {"k": {"deeper": ["x"]}}],
        });
        assert_eq!(
            pretty(&value),
            serde_json::to_string_pretty(&value).unwrap()
        );
        // Deeper than the line breaks cut whole.
        let deep = (0..SHALLOW + 4).fold(json!({"leaf": [1]}), |inner, _| json!([{"k": inner}]));
        assert_eq!(pretty(&deep), serde_json::to_string_pretty(&deep).unwrap());
        let exact: Value =
            serde_json::from_str("[1.0e+3, -0.000, 12345678901234567890123]").unwrap();
        assert_eq!(
            pretty(&exact),
            serde_json::to_string_pretty(&exact).unwrap()
        );
    }

    #[test]
    #[should_panic(expected = "a key JSON writes as it is")]
    fn a_fixed_key_to_escape_is_refused() {
        Key::new("a\"b");
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x7f\"\\\\]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..6)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_value_is_written_as_serde_json_writes_it(value in json_value()) {
            prop_assert_eq!(pretty(&value), serde_json::to_string_pretty(&value).unwrap());
        }

        #[test]
        fn any_string_is_escaped_as_serde_json_escapes_it(text in "(?s).{0,80}", ascii in "[\\x00-\\x7f]{0,80}") {
            for text in [&text, &ascii] {
                let mut out = Pretty::default();
                out.string(text);
                prop_assert_eq!(out.bytes, serde_json::to_vec(text).unwrap());
            }
        }

        /// A key known when the program is built is written as a key of that name, first in
        /// its object or not, at any depth.
        #[test]
        fn a_fixed_key_is_written_as_its_name(
            name in r"[ !#-\[\]-~é]{0,10}",
            depth in 0_usize..20,
            first in any::<bool>(),
        ) {
            let name: &'static str = Box::leak(name.into_boxed_str());
            let fixed = Key::new(name);
            let written = |key: &dyn Fn(&mut Pretty)| {
                let mut out = Pretty::default();
                for _ in 0..depth {
                    out.begin_array();
                }
                out.begin_object();
                if !first {
                    out.key("before");
                    out.null();
                }
                key(&mut out);
                out.null();
                out.end_object();
                for _ in 0..depth {
                    out.end_array();
                }
                String::from_utf8(out.bytes).unwrap()
            };
            prop_assert_eq!(written(&|out| out.fixed_key(&fixed)), written(&|out| out.key(name)));
        }

        /// Short strings and keys, around the length written as one copy, with bytes to escape
        /// and not, after text already written.
        #[test]
        fn short_strings_and_keys_are_escaped_as_serde_json_escapes_them(
            plain in "[a-zé]{0,18}",
            escaped in r#"[a-z"\\\x00-\x1f]{0,18}"#,
            before in "[a-z]{0,3}",
        ) {
            for text in [&plain, &escaped] {
                let mut out = Pretty::default();
                out.bytes.extend_from_slice(before.as_bytes());
                out.string(text);
                out.key_string(text);
                let quoted = serde_json::to_string(text).unwrap();
                prop_assert_eq!(
                    String::from_utf8(out.bytes).unwrap(),
                    format!("{before}{quoted}{quoted}: ")
                );
            }
        }
    }
}
