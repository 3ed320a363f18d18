//! Who wrote a user message: a person, the agent's harness, or a tool.
//!
//! Agents put machine text in user turns — caveats, command echoes, reminders, notifications,
//! interruption notes, environment blocks, and ctxcompact's own markers. Pinning "the first user
//! message" by position would then pin a caveat and lose the person's real request. Every user
//! message is therefore classified as an [`Author::Request`] (a person's words), [`Author::Harness`]
//! (machine text only) or [`Author::Results`] (it only carries tool results). The patterns are
//! data, in `data/harness.json`: one entry per pattern, with the agent it comes from and an
//! example. A `tag` pattern removes `<tag>…</tag>` blocks wherever they are; a `prefix` pattern
//! marks the whole remaining text as harness when it starts with it. A message is a request when
//! text is left once its harness blocks are removed and no prefix matches.

use std::borrow::Cow;
use std::sync::LazyLock;

use serde::Deserialize;

use crate::conversation::{Conversation, Message, Part, Role, joined_text};
use crate::note;

/// Who wrote a user-role message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Author {
    /// A person's words.
    Request,
    /// Machine text in a user turn only.
    Harness,
    /// Only tool results (with no request text beside them).
    Results,
}

/// How a harness pattern (or an instruction file's wrapper) matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    /// A `<tag>…</tag>` block, wherever it is.
    Tag,
    /// Text that starts with the pattern (after leading blanks).
    Prefix,
}

/// One entry of `data/harness.json`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Pattern {
    /// The agent whose harness writes it.
    pub agent: String,
    kind: Kind,
    /// The tag name or the prefix.
    #[serde(rename = "pattern")]
    pub text: String,
    /// A real-looking example of the text it matches.
    #[allow(dead_code)]
    pub example: String,
}

/// The shipped patterns (keep `data/harness.json` one entry per pattern).
static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../data/harness.json"))
        .expect("data/harness.json is checked by a unit test")
});

/// Each tag pattern's opening (`<name`) and closing (`</name>`) text, built once.
static TAGS: LazyLock<Vec<(&'static Pattern, String, String)>> = LazyLock::new(|| {
    PATTERNS
        .iter()
        .filter(|p| p.kind == Kind::Tag)
        .map(|p| (p, format!("<{}", p.text), format!("</{}>", p.text)))
        .collect()
});

/// Text with every harness `<tag>…</tag>` block removed: what a person typed of a request.
pub(crate) fn strip_tags(text: &str) -> String {
    let mut out = text.to_string();
    for (_, open, close) in TAGS.iter() {
        while let Some(start) = find_open(&out, open) {
            let end = out[start..]
                .find(close.as_str())
                .map_or(out.len(), |at| start + at + close.len());
            out.replace_range(start..end, "");
        }
    }
    out
}

/// `text` without its harness `<tag>…</tag>` blocks, borrowed when it has none: a tool output
/// the harness appended a reminder to, read for what the tool wrote.
pub(crate) fn without_tags(text: &str) -> Cow<'_, str> {
    if TAGS
        .iter()
        .all(|(_, open, _)| find_open(text, open).is_none())
    {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(strip_tags(text))
    }
}

/// Where an opening tag `<name` starts (followed by `>` or a blank, not a longer name).
pub(crate) fn find_open(text: &str, open: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(open) {
        let start = from + at;
        let next = text[start + open.len()..].chars().next();
        if matches!(next, Some('>' | ' ' | '\n' | '\t' | '/')) {
            return Some(start);
        }
        from = start + open.len();
    }
    None
}

/// The harness pattern that makes `text` machine text, if any: the prefix it starts with, or the
/// tag whose blocks are all it holds.
pub(crate) fn harness_pattern(text: &str) -> Option<&'static Pattern> {
    let prefixed = |rest: &str| {
        PATTERNS
            .iter()
            .filter(|p| p.kind == Kind::Prefix)
            .find(|p| rest.starts_with(&p.text))
    };
    // Most messages hold no tag at all: nothing to strip, no copy.
    if !text.contains('<') {
        return prefixed(text.trim_start());
    }
    let stripped = strip_tags(text);
    let rest = stripped.trim_start();
    if rest.trim_end().is_empty() {
        let trimmed = text.trim_start();
        return TAGS
            .iter()
            .find(|(_, open, _)| find_open(trimmed, open).is_some())
            .map(|(pattern, ..)| *pattern);
    }
    prefixed(rest)
}

/// Whether `text` is a person's words rather than harness text. A ctxcompact marker merged in
/// front of a message (Anthropic) is left out first: the words after it still count.
pub(crate) fn is_request_text(text: &str) -> bool {
    let text = match note::marker_len(text) {
        Some(end) => &text[end..],
        None => text,
    };
    !text.trim().is_empty() && harness_pattern(text).is_none()
}

/// Whether `text` is a ctxcompact marker.
pub(crate) fn is_marker(text: &str) -> bool {
    text.trim_start().starts_with(note::MARKER_PREFIX)
}

/// Who wrote a user-role message (`None` for other roles).
pub(crate) fn author(message: &Message) -> Option<Author> {
    if message.role != Role::User {
        return None;
    }
    author_with_text(message, &joined_text(&message.parts))
}

/// [`author`] for a message whose text (its text parts, joined) the caller already has.
pub(crate) fn author_with_text(message: &Message, text: &str) -> Option<Author> {
    if message.role != Role::User {
        return None;
    }
    // The log's own metadata says who wrote it before any text pattern does.
    if message.harness.is_some() {
        return Some(if message.has_results() {
            Author::Results
        } else {
            Author::Harness
        });
    }
    if is_request_text(text) {
        return Some(Author::Request);
    }
    let opaque = message.parts.iter().any(|p| matches!(p, Part::Opaque(_)));
    if message.has_results() {
        Some(Author::Results)
    } else if text.trim().is_empty() && opaque {
        // An image or document alone: a person sent it.
        Some(Author::Request)
    } else {
        Some(Author::Harness)
    }
}

/// The indices of the conversation's requests, in order.
pub(crate) fn requests(conversation: &Conversation) -> Vec<usize> {
    requests_in(&conversation.messages)
}

/// The indices of the requests among `messages`, in order.
pub(crate) fn requests_in(messages: &[Message]) -> Vec<usize> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| author(m) == Some(Author::Request))
        .map(|(i, _)| i)
        .collect()
}

/// Every harness message of the conversation: its index, the agent and the pattern that matched.
pub(crate) fn harness(
    conversation: &Conversation,
) -> Vec<(usize, &'static str, &'static str, &'static str)> {
    conversation
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| author(m) == Some(Author::Harness))
        .filter_map(|(i, m)| match m.harness {
            // Marked by the log's metadata: the pattern is the field that says so.
            Some((agent, field)) => Some((i, agent, field, "metadata")),
            None => harness_pattern(&m.text())
                .map(|p| (i, p.agent.as_str(), p.text.as_str(), "pattern")),
        })
        .collect()
}

/// Whether a message is a user turn: a user message with something besides tool results.
pub(crate) fn is_user_turn(message: &Message) -> bool {
    message.role == Role::User
        && (message.parts.is_empty()
            || message
                .parts
                .iter()
                .any(|p| !matches!(p, Part::ToolResult { .. })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_example_is_harness_and_names_its_agent() {
        assert!(PATTERNS.len() >= 15);
        for pattern in PATTERNS.iter() {
            assert!(!pattern.agent.is_empty());
            assert!(
                harness_pattern(&pattern.example).is_some(),
                "{}",
                pattern.example
            );
            assert!(!is_request_text(&pattern.example), "{}", pattern.example);
        }
    }

    #[test]
    fn a_request_beside_a_reminder_is_still_a_request() {
        assert!(is_request_text(
            "<system-reminder>Files changed.</system-reminder>\nPlease fix the login bug."
        ));
        assert!(!is_request_text(
            "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"
        ));
        assert!(!is_request_text(
            "[Request interrupted by user for tool use]"
        ));
        assert!(is_request_text("did you push?"));
        // A longer tag name is not the pattern's tag.
        assert!(is_request_text("<command-names>are words</command-names>"));
    }

    #[test]
    fn markers_are_harness() {
        let marker = "[ctxcompact: 3 earlier messages (120 tokens of the input) removed here]";
        assert!(is_marker(marker));
        assert!(!is_request_text(marker));
        // Merged in front of a request, it leaves the request a request.
        assert!(is_request_text(&format!("{marker}\n\nNow fix the tests.")));
        let digest = "[ctxcompact: 3 earlier messages (120 tokens of the input) removed here; digest below. History.]\nRequests (1):\n» Do it.\n[ctxcompact: end of digest]";
        assert!(!is_request_text(digest));
        assert!(is_request_text(&format!("{digest}\n\nAnd then?")));
    }
}
