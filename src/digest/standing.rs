//! Standing instructions: the imperative sentences of a request a person typed (must, never,
//! always, don't, make sure, avoid…), which a digest keeps verbatim in a section of their own.
//!
//! A request is read line by line, its harness blocks left out (an agent's reminders are not the
//! person's words), and so are fenced code, indented code and quoted or shell lines. A line is
//! cut into sentences only after `.`, `!` or `?` followed by a blank, so that a sentence kept
//! holds whatever shorter piece a reader would call that sentence. A sentence is a standing
//! instruction when one of its words is a cue of [`CUES`].

use std::borrow::Cow;

use crate::classify;

/// The words (lowercase, `’` read as `'`) that make a sentence a standing instruction: the
/// issue's list (must, never, always, don't, do not, make sure, avoid) and their near kin.
const CUES: [&str; 16] = [
    "must",
    "mustn't",
    "never",
    "always",
    "don't",
    "dont",
    "do not",
    "make sure",
    "avoid",
    "should not",
    "shouldn't",
    "ensure",
    "under no circumstances",
    "no matter what",
    "please do not",
    "only ever",
];

/// A sentence longer than this many characters is not kept whole: it is prose, not a rule.
const MAX_CHARS: usize = 400;

/// The standing instructions of a request's text, in order, each a verbatim sentence.
pub(super) fn standing_in(text: &str) -> Vec<Cow<'_, str>> {
    if text.contains('<') {
        let typed = classify::strip_tags(text);
        return sentences(&typed)
            .into_iter()
            .map(|s| Cow::Owned(s.to_string()))
            .collect();
    }
    sentences(text).into_iter().map(Cow::Borrowed).collect()
}

/// The standing sentences of `text`, slices of it.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || is_code_line(line) {
            continue;
        }
        let mut start = 0;
        let bytes = line.as_bytes();
        for (at, c) in line.char_indices() {
            let ends = matches!(c, '.' | '!' | '?')
                && bytes.get(at + 1).is_some_and(u8::is_ascii_whitespace);
            if ends {
                push_standing(&line[start..=at], &mut out);
                start = at + 1;
            }
        }
        push_standing(&line[start..], &mut out);
    }
    out
}

/// Whether a line is code or output rather than a person's sentence: indented code, a quote, a
/// shell line, or mostly symbols.
fn is_code_line(line: &str) -> bool {
    if line.starts_with("    ") || line.starts_with('\t') {
        return true;
    }
    let trimmed = line.trim_start();
    if trimmed.starts_with('>') || trimmed.starts_with("$ ") {
        return true;
    }
    let letters = trimmed
        .chars()
        .filter(|c| c.is_alphabetic() || *c == ' ')
        .count();
    letters * 10 < trimmed.chars().count() * 6
}

/// Adds `sentence` (trimmed) to `out` when it is a standing instruction.
fn push_standing<'a>(sentence: &'a str, out: &mut Vec<&'a str>) {
    let sentence = sentence.trim();
    if sentence.len() < 8 || sentence.chars().count() > MAX_CHARS {
        return;
    }
    if has_cue(sentence) {
        out.push(sentence);
    }
}

/// Whether one of the [`CUES`] is a whole word (or words) of `sentence`.
fn has_cue(sentence: &str) -> bool {
    let lower = sentence.to_lowercase().replace('’', "'");
    CUES.iter().any(|cue| {
        lower.match_indices(cue).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            let after = lower[at + cue.len()..].chars().next();
            let edge = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '\''));
            edge(before) && edge(after)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imperative_sentences_are_kept_verbatim_and_code_is_not() {
        let text = "Please fix the login bug. Don't touch the schema! Make sure tests pass?\n\
                    We always deploy on Fridays, so avoid big changes.\n\
                    ```\nnever_called();\n```\n    must = 1\n$ rm -rf never\n\
                    It is done. I must say: nice.";
        assert_eq!(
            standing_in(text),
            [
                "Don't touch the schema!",
                "Make sure tests pass?",
                "We always deploy on Fridays, so avoid big changes.",
                "I must say: nice."
            ]
        );
    }

    #[test]
    fn harness_blocks_are_not_the_persons_words() {
        let text = "<system-reminder>You must never do X.</system-reminder>\nRename it, but never the public API.";
        assert_eq!(standing_in(text), ["Rename it, but never the public API."]);
        // A cue inside a longer word is not one.
        assert!(standing_in("The mustard is nevermore ensured.").is_empty());
        assert_eq!(
            standing_in("I don’t want a refund — do not cancel it."),
            ["I don’t want a refund — do not cancel it."]
        );
    }
}
