//! References: the paths and identifiers an agent writes and later needs again — file names
//! and paths, ids mixing letters and digits (`credit_card_7407366`, `HAT138`, `#W2378156`),
//! hex addresses (`0x401a2f`), versions, dates, names with `_`, `.` or `::` in them — found by
//! a scan of the lab's own, apart from the engine's detectors, so that the next-step measure
//! does not grade the engine by its own rule.
//!
//! A reference is looked for as a whole word: a match counts only where the characters on
//! either side of it are neither letters, digits nor `_` (`HAT138` is not in `HAT1380`, and
//! `lib/a.ex` is in `/home/me/lib/a.ex`).

use std::collections::BTreeSet;

/// Characters a reference is made of, besides letters and digits; every other character
/// (blanks, quotes, brackets, commas, `=`, backticks…) ends one.
const WORD_SIGNS: &str = "_./-:#@~";

/// The longest reference, in characters: past it, a word is data (base64, minified code), not
/// a name someone writes again.
const LONGEST: usize = 200;

/// Adds the references of `text` to `out`.
pub(super) fn scan(text: &str, out: &mut BTreeSet<String>) {
    // A closing tag (`</div>`) is markup, not the path `/div`.
    let text = text.replace("</", "< ");
    let words = text.split(|c: char| !(c.is_alphanumeric() || WORD_SIGNS.contains(c)));
    for word in words {
        let word = normalise(word);
        if is_reference(word) {
            out.insert(word.to_string());
        }
    }
}

/// Whether `text` holds `reference` as a whole word.
pub(super) fn holds(text: &str, reference: &str) -> bool {
    let inside = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(reference).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + reference.len()..].chars().next();
        !before.is_some_and(inside) && !after.is_some_and(inside)
    })
}

/// A word as it names something: trailing punctuation off (`main.rs.` → `main.rs`), a line
/// number after a file off (`lib/a.ex:42:7` → `lib/a.ex`), a glob stem's trailing `_` off
/// (`ash_*` → `ash`), a leading `#`, `@`, `:` or `-` off
/// (`#W2378156` → `W2378156`), and a leading `./` or `../` off; a leading `/`, `~` or a dot
/// file's `.` stays.
fn normalise(word: &str) -> &str {
    let trailing = |c: char| ".:-/#@~".contains(c);
    let mut word = word.trim_end_matches(trailing);
    while let Some((head, line)) = word.rsplit_once(':') {
        let numbered = !line.is_empty() && line.chars().all(|c| c.is_ascii_digit());
        if !(numbered && (head.contains('.') || head.contains('/'))) {
            break;
        }
        word = head;
    }
    loop {
        if let Some(rest) = word.strip_prefix("./").or_else(|| word.strip_prefix("../")) {
            word = rest;
        } else if word.starts_with(['#', '@', ':', '-'])
            || (word.starts_with('.') && !word[1..].starts_with(char::is_alphanumeric))
        {
            word = &word[1..];
        } else {
            // A `_` ends a glob's stem (`ash_*`), not a name, unless the name opens with one
            // (`__init__`).
            let word = word.trim_end_matches(trailing);
            return if word.starts_with('_') {
                word
            } else {
                word.trim_end_matches(|c| trailing(c) || c == '_')
            };
        }
    }
}

/// Whether a normalised word is a reference: 3 to [`LONGEST`] characters, and
/// - a number of at least 3 digits, possibly joined by `.`, `-`, `:` or `/` (`7407366`,
///   `1.2.3`, `2024-05-01`), or
/// - digits and letters together (`HAT138`, `0x401a2f`, `credit_card_7407366`), but not a
///   quantity (`100ms`, `2nd`, `64KB`), or
/// - letters joined by `_` or `::` (`user_id`, `std::fs`), or
/// - a path: a `/` after a leading `/` or `~`, or with a `.` (a file or host name), or with 3
///   parts or more (`src/lab/bench`; not `and/or`), or
/// - letters joined by `.` (`main.rs`, `socket.assigns`), unless every part is a single
///   letter (`e.g`, `i.e`).
///
/// Plain words, however spelled (`Hello`, `well-known`, `README`), are not references.
fn is_reference(word: &str) -> bool {
    let length = word.chars().count();
    if !(3..=LONGEST).contains(&length) {
        return false;
    }
    let digits = word.chars().filter(char::is_ascii_digit).count();
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    if letters == 0 {
        return digits >= 3
            && word
                .chars()
                .all(|c| c.is_ascii_digit() || ".-:/".contains(c));
    }
    if digits > 0 {
        return !is_quantity(word);
    }
    if word.contains('_') || word.contains("::") {
        return letters >= 2;
    }
    if word.contains('/') {
        let parts = word.split('/').filter(|p| !p.is_empty()).count();
        return word.starts_with(['/', '~']) || word.contains('.') || parts >= 3;
    }
    if word.contains('.') {
        let parts: Vec<&str> = word.split('.').collect();
        return parts.iter().all(|p| !p.is_empty()) && parts.iter().any(|p| p.chars().count() > 1);
    }
    false
}

/// A number with a unit or an ordinal suffix of at most 3 letters: `100ms`, `2nd`, `64KB`, `3x`.
fn is_quantity(word: &str) -> bool {
    let number = word.trim_start_matches(|c: char| c.is_ascii_digit());
    number.len() < word.len()
        && (1..=3).contains(&number.len())
        && number.chars().all(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn references(text: &str) -> Vec<String> {
        let mut out = BTreeSet::new();
        scan(text, &mut out);
        out.into_iter().collect()
    }

    #[test]
    fn ids_paths_addresses_and_versions_are_references() {
        assert_eq!(
            references(
                "Paid with credit_card_7407366 for flight HAT138 (order #W2378156). \
                 See ./src/lab/bench.rs:42, lib/a.ex:10:3 and ~/.bashrc; jump to 0x401a2f."
            ),
            [
                "0x401a2f",
                "HAT138",
                "W2378156",
                "credit_card_7407366",
                "lib/a.ex",
                "src/lab/bench.rs",
                "~/.bashrc"
            ]
        );
        assert_eq!(
            references(
                "pip install django==4.1.2, v1.2; on 2024-05-01 see main.rs or `std::fs`, \
                 __init__, not ash_*."
            ),
            [
                "2024-05-01",
                "4.1.2",
                "__init__",
                "main.rs",
                "std::fs",
                "v1.2"
            ]
        );
    }

    #[test]
    fn plain_words_short_numbers_and_quantities_are_not() {
        assert_eq!(
            references(
                "Hello, e.g. the <b>well-known</b> README and/or 42 items took 100ms, the 2nd \
                 time; i.e. 12."
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_reference_is_found_as_a_whole_word_only() {
        assert!(holds("flight HAT138, then", "HAT138"));
        assert!(!holds("flight HAT1380", "HAT138"));
        assert!(!holds("my_user_id", "user_id"));
        assert!(holds("/home/me/lib/a.ex", "lib/a.ex"));
        assert!(!holds("lib/a.exs", "lib/a.ex"));
    }
}
