//! Numbers as they were spelled.
//!
//! `serde_json` (with `arbitrary_precision`) keeps a number's digits but not all of its
//! spelling: it writes an exponent's `E` as `e` and gives an unsigned exponent a `+` (`1E5` is
//! read as `1e+5`, `1e400` as `1e+400`). Everything else (digits, a fraction's trailing zeros,
//! `-0`) it keeps. So that output numbers are the input's byte for byte, the input is scanned
//! for the numbers it spells otherwise, and those are given back their spelling once parsed.
//!
//! The scan follows JSON's grammar only as far as telling strings from the rest: a number is a
//! run of number bytes outside strings. Numbers are matched to the parsed values by their rank
//! in document order, which a parsed value's fields keep (`preserve_order`); each is checked
//! against its normalised spelling before it is changed, so a document whose order the parse
//! did not keep (a key written twice) is left as parsed from the first mismatch on.

use serde_json::{Number, Value};

/// The numbers of an input spelled otherwise than `serde_json` writes them, found as its bytes
/// are fed in (in one piece or several).
#[derive(Debug, Default)]
pub(crate) struct Spellings {
    /// The rank of each such number among all the input's numbers, and its spelling.
    found: Vec<(usize, String)>,
    /// Numbers seen so far.
    numbers: usize,
    /// Where the scan is.
    state: ScanState,
    /// The number being read.
    number: Vec<u8>,
}

/// Where the scan is: outside strings, in a string, after a backslash in one, or in a number.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ScanState {
    #[default]
    Outside,
    String,
    Escape,
    Number,
}

impl Spellings {
    /// Whether `bytes` may spell a number otherwise than `serde_json` writes it (an `E`, or an
    /// `e` followed by a digit, after a digit): when not, there is nothing to scan for.
    pub(crate) fn may_differ(bytes: &[u8]) -> bool {
        memchr::memchr2_iter(b'e', b'E', bytes).any(|at| {
            let after_digit = at > 0 && bytes[at - 1].is_ascii_digit();
            let next = bytes.get(at + 1).copied().unwrap_or(b' ');
            after_digit && (next.is_ascii_digit() || (bytes[at] == b'E' && b"+-".contains(&next)))
        })
    }

    /// Scans the next bytes of the input.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        let mut at = 0;
        while at < bytes.len() {
            match self.state {
                ScanState::String => {
                    // Strings are most of the input: skip to their next quote or backslash.
                    match memchr::memchr2(b'"', b'\\', &bytes[at..]) {
                        None => return,
                        Some(found) => {
                            at += found;
                            self.state = if bytes[at] == b'"' {
                                ScanState::Outside
                            } else {
                                ScanState::Escape
                            };
                        }
                    }
                }
                ScanState::Escape => self.state = ScanState::String,
                ScanState::Number if is_number_byte(bytes[at]) => self.number.push(bytes[at]),
                ScanState::Number => {
                    self.end_number();
                    continue;
                }
                ScanState::Outside => match bytes[at] {
                    b'"' => self.state = ScanState::String,
                    byte if byte == b'-' || byte.is_ascii_digit() => {
                        self.state = ScanState::Number;
                        self.number.push(byte);
                    }
                    _ => {}
                },
            }
            at += 1;
        }
    }

    /// Ends the input: a number may run to its last byte.
    pub(crate) fn finish(mut self) -> Self {
        if self.state == ScanState::Number {
            self.end_number();
        }
        self
    }

    fn end_number(&mut self) {
        let spelled = String::from_utf8_lossy(&self.number).into_owned();
        if normalised(&spelled) != spelled {
            self.found.push((self.numbers, spelled));
        }
        self.numbers += 1;
        self.number.clear();
        self.state = ScanState::Outside;
    }

    /// Whether every number is spelled as `serde_json` writes it.
    pub(crate) fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// Gives the numbers of `values` (parsed from the scanned input, in order) back their
    /// spelling.
    pub(crate) fn restore<'a>(&self, values: impl IntoIterator<Item = &'a mut Value>) {
        let mut walk = Walk {
            found: &self.found,
            next: 0,
            rank: 0,
            lost: false,
        };
        for value in values {
            walk.value(value);
            if walk.lost || walk.next == self.found.len() {
                return;
            }
        }
    }
}

/// A walk through parsed values in document order, counting their numbers.
struct Walk<'a> {
    found: &'a [(usize, String)],
    /// The next entry of `found` to restore.
    next: usize,
    /// Numbers passed so far.
    rank: usize,
    /// Whether a number did not match its spelling: the order was not kept.
    lost: bool,
}

impl Walk<'_> {
    fn value(&mut self, value: &mut Value) {
        if self.lost || self.next == self.found.len() {
            return;
        }
        match value {
            Value::Number(number) => {
                let (rank, spelled) = &self.found[self.next];
                if *rank == self.rank {
                    if number.as_str() == normalised(spelled) {
                        *number = Number::from_string_unchecked(spelled.clone());
                        self.next += 1;
                    } else {
                        self.lost = true;
                    }
                }
                self.rank += 1;
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.value(item)),
            Value::Object(map) => map.values_mut().for_each(|item| self.value(item)),
            _ => {}
        }
    }
}

fn is_number_byte(byte: u8) -> bool {
    byte.is_ascii_digit() || matches!(byte, b'-' | b'+' | b'.' | b'e' | b'E')
}

/// A number as `serde_json` writes it once read: the exponent's `e` lowercase and signed.
fn normalised(spelled: &str) -> String {
    match spelled.find(['e', 'E']) {
        None => spelled.to_string(),
        Some(at) => {
            let exponent = &spelled[at + 1..];
            let sign = if exponent.starts_with(['+', '-']) {
                ""
            } else {
                "+"
            };
            format!("{}e{sign}{exponent}", &spelled[..at])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spellings(text: &str, pieces: usize) -> Spellings {
        let mut spellings = Spellings::default();
        let size = text.len().div_ceil(pieces).max(1);
        for piece in text.as_bytes().chunks(size) {
            spellings.feed(piece);
        }
        spellings.finish()
    }

    #[test]
    fn numbers_get_back_their_spelling_in_strings_escapes_and_pieces() {
        let text =
            r#"{"a": "1E5 \" 2E5", "b": [1E5, 1.50, -0, 2E-7, 1e400, 3e+2], "c": {"d": 7E1}}"#;
        for pieces in [1, 3, 17, text.len()] {
            let mut value: Value = serde_json::from_str(text).unwrap();
            let spellings = spellings(text, pieces);
            assert!(Spellings::may_differ(text.as_bytes()));
            spellings.restore([&mut value]);
            assert_eq!(
                serde_json::to_string(&value).unwrap(),
                r#"{"a":"1E5 \" 2E5","b":[1E5,1.50,-0,2E-7,1e400,3e+2],"c":{"d":7E1}}"#,
                "{pieces} pieces"
            );
        }
    }

    #[test]
    fn a_key_written_twice_leaves_the_numbers_as_parsed() {
        let text = r#"{"a": 1E5, "b": 2, "a": 3E5, "z": 4E5}"#;
        let mut value: Value = serde_json::from_str(text).unwrap();
        spellings(text, 1).restore([&mut value]);
        // The parse keeps "a" in its first place with its last value: no number is misplaced.
        assert_eq!(value["a"].to_string(), "3e+5");
        assert_eq!(value["z"].to_string(), "4e+5");
    }

    #[test]
    fn plain_input_needs_no_scan() {
        assert!(!Spellings::may_differ(
            br#"{"text": "see the hash", "n": 1e+5, "x": 2.5}"#
        ));
    }
}
