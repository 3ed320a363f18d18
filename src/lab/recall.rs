//! What the bench's recall figures look for: the requests of a conversation, the text a model
//! reads in an output, and what its removed messages held (paths, error lines, identifiers).

use std::collections::BTreeSet;

use crate::classify;
use crate::evidence;
use crate::{Conversation, Message, Part, Role};

/// How many of the things that were removed can still be found in the output.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Recall {
    pub(super) found: usize,
    pub(super) removed: usize,
}

impl Recall {
    pub(super) fn add(&mut self, found: bool) {
        self.removed += 1;
        self.found += usize::from(found);
    }

    /// The percentage found; 100 when nothing was removed.
    pub(super) fn pct(self) -> f64 {
        if self.removed == 0 {
            100.0
        } else {
            self.found as f64 * 100.0 / self.removed as f64
        }
    }
}

/// What the survival figures look for, read once from the input.
pub(super) struct LookedFor {
    /// Input indices of the requests.
    pub(super) requests: Vec<usize>,
    /// Each request's text.
    pub(super) texts: Vec<String>,
    /// Each request's imperative sentences ([`imperatives`]).
    pub(super) imperatives: Vec<Vec<String>>,
    /// The texts of the user messages that carry an instruction file ([`is_instruction_file`]).
    pub(super) instruction_files: Vec<String>,
}

impl LookedFor {
    pub(super) fn of(conversation: &Conversation) -> Self {
        let requests = classify::requests(conversation);
        let texts: Vec<String> = requests
            .iter()
            .map(|&i| conversation.messages[i].text())
            .collect();
        let imperatives = texts.iter().map(|t| imperatives(t)).collect();
        let instruction_files = conversation
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(Message::text)
            .filter(|t| is_instruction_file(t))
            .collect();
        Self {
            requests,
            texts,
            imperatives,
            instruction_files,
        }
    }
}

/// Whether a user message carries an instruction file, by a test of its own, apart from the
/// engine's wrappers: the marks Codex, Claude Code and Gemini CLI open or name them with.
fn is_instruction_file(text: &str) -> bool {
    let opening = text.trim_start();
    opening.starts_with("# AGENTS.md instructions")
        || opening.starts_with("This is the Gemini CLI. We are setting up the context")
        || text.contains("<user_instructions>")
        || text.contains("<session_context>")
        || text.contains("# claudeMd")
        || (text.contains("<system-reminder>") && text.contains("\nContents of "))
}

/// The words that make a sentence an instruction a person means to stand: the issue's list.
const IMPERATIVE_CUES: [&str; 7] = [
    "must",
    "never",
    "always",
    "don't",
    "do not",
    "make sure",
    "avoid",
];

/// What a person typed of a request: its text without `<name>…</name>` blocks (the harness's
/// reminders and context).
fn typed_text(text: &str) -> String {
    let mut typed = String::new();
    let mut rest = text;
    // Blocks of machine text: from `<name>` to `</name>`.
    while let Some(open) = rest.find('<') {
        typed.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        let close = format!("</{name}>");
        if let Some(end) = after.find(close.as_str()).filter(|_| !name.is_empty()) {
            rest = &after[end + close.len()..];
        } else {
            typed.push('<');
            rest = after;
        }
    }
    typed.push_str(rest);
    typed
}

/// The imperative sentences of a request, by a scan of its own, simpler than the digest's so
/// that the figure does not grade the digest by its own rule: `<tag>…</tag>` blocks and fenced
/// code left out, the rest cut at line ends and after `.`, `!` or `?` before a blank, each
/// piece of at least 3 words holding a cue of [`IMPERATIVE_CUES`] as whole words.
fn imperatives(text: &str) -> Vec<String> {
    let typed = typed_text(text);
    let mut out = Vec::new();
    let mut code = false;
    for line in typed.lines() {
        if line.trim_start().starts_with("```") {
            code = !code;
            continue;
        }
        if code {
            continue;
        }
        let mut piece = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            piece.push(c);
            let end = ".!?".contains(c) && chars.peek().is_some_and(|n| n.is_whitespace());
            if end || chars.peek().is_none() {
                let sentence = piece.trim();
                let lower = sentence.to_lowercase().replace('’', "'");
                let words: Vec<&str> = lower
                    .split(|c: char| !(c.is_alphanumeric() || c == '\''))
                    .filter(|w| !w.is_empty())
                    .collect();
                let joined = format!(" {} ", words.join(" "));
                let cued = IMPERATIVE_CUES
                    .iter()
                    .any(|cue| joined.contains(&format!(" {cue} ")));
                if words.len() >= 3 && cued {
                    out.push(sentence.to_string());
                }
                piece.clear();
            }
        }
    }
    out
}

/// Every text of a conversation a reader (or a model) sees: message text, tool-call names and
/// arguments, tool-result text; one string to search.
pub fn searchable(conversation: &Conversation) -> String {
    let mut out = String::new();
    let system = conversation.system.iter();
    for message in system.chain(&conversation.messages) {
        push_parts(&mut out, &message.parts);
    }
    out
}

fn push_parts(out: &mut String, parts: &[Part]) {
    for part in parts {
        match part {
            Part::Text { text, .. } => out.push_str(text),
            Part::ToolCall {
                name, arguments, ..
            } => {
                out.push_str(name);
                out.push('\n');
                match arguments {
                    serde_json::Value::String(text) => out.push_str(text),
                    other => out.push_str(&other.to_string()),
                }
            }
            Part::ToolResult { content, .. } => push_parts(out, content),
            Part::Opaque(_) => {}
        }
        out.push('\n');
    }
}

/// The first `n` characters of `text`.
pub fn first_chars(text: &str, n: usize) -> &str {
    text.char_indices()
        .nth(n)
        .map_or(text, |(at, _)| &text[..at])
}

/// Characters of a removed request the requests recall looks for (the issue's figure).
pub(super) const RECALL_CHARS: usize = 200;
/// Characters of a removed request the named recall looks for: enough to tell which request it
/// was.
pub(super) const NAMED_CHARS: usize = 40;

/// The words of `text` that identify something, by a test of their own, simpler and broader
/// than the digest's, so that the identifiers recall does not grade the digest by its own
/// rule: words of letters, digits and `_-#@.` with at least 6 characters, holding both a digit
/// and a letter (user names, order and booking numbers, hashes, tickets), or numbers of at
/// least 7 digits (a leading `#` kept); a word with a `.` only as an e-mail address or a
/// version ([`is_version`]), never a file name; never a JSON key, a date or a time stamp.
fn identifier_words(text: &str, out: &mut BTreeSet<String>) {
    let words = text.split(|c: char| !(c.is_ascii_alphanumeric() || "_-#@.".contains(c)));
    for word in words {
        // Where the word ends in `text` (a slice of it): a JSON key is followed by `":`.
        let end = word.as_ptr() as usize - text.as_ptr() as usize + word.len();
        if text[end..].starts_with("\":") {
            continue;
        }
        let word = word.trim_matches(|c| c == '.' || c == '-' || c == '_');
        // A date or a time stamp (`2024-05-01T16`) names a moment, not a thing.
        let dated = word.len() > 4
            && word[..4].chars().all(|c| c.is_ascii_digit())
            && word[4..].starts_with('-');
        let digits = word.chars().filter(char::is_ascii_digit).count();
        let letters = word.chars().filter(char::is_ascii_alphabetic).count();
        let shaped = if word.contains('.') {
            (word.contains('@') && letters > 0) || is_version(word)
        } else {
            let number = digits + usize::from(word.starts_with('#')) == word.len();
            (word.len() >= 6 && digits > 0 && letters > 0) || (number && digits >= 7)
        };
        if shaped && !dated && word.len() <= 80 {
            out.insert(word.to_string());
        }
    }
}

/// A version: numbers joined by dots, three or more (`1.2.3`, `4.1.2` of `==4.1.2`), or two
/// or more after a `v` (`v1.2`), with an optional `-` suffix (`2.0.0-rc.1`).
fn is_version(word: &str) -> bool {
    let core = word.split('-').next().unwrap_or(word);
    let (numbers, least) = match core.strip_prefix(['v', 'V']) {
        Some(rest) => (rest, 2),
        None => (core, 3),
    };
    let parts: Vec<&str> = numbers.split('.').collect();
    parts.len() >= least
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 8 && p.chars().all(|c| c.is_ascii_digit()))
}

/// What the removed messages held: the paths named in their tool calls, the error lines of
/// their results, and their identifiers ([`identifier_words`]), each without repeats.
pub(super) struct Removed {
    pub(super) paths: Vec<String>,
    pub(super) errors: Vec<String>,
    /// The identifiers a person or a tool call wrote: those of the removed requests (harness
    /// blocks left out, [`typed_text`]) and of the removed tool calls' arguments (the issue's
    /// figure).
    pub(super) written: Vec<String>,
    /// Those and the identifiers of every other removed text: harness messages and tool results.
    pub(super) identifiers: Vec<String>,
}

/// [`Removed`] of the messages not `kept`; `requests` are the input indices of the requests.
pub(super) fn removed_evidence(
    conversation: &Conversation,
    kept: &[bool],
    requests: &[usize],
) -> Removed {
    let mut paths = BTreeSet::new();
    let mut errors = BTreeSet::new();
    let mut written = BTreeSet::new();
    let mut others = BTreeSet::new();
    let removed = conversation.messages.iter().enumerate();
    for (index, message) in removed.filter(|(i, _)| !kept[*i]) {
        if message.role == Role::User {
            let request = requests.binary_search(&index).is_ok();
            for part in &message.parts {
                if let Part::Text { text, .. } = part {
                    if request {
                        identifier_words(&typed_text(text), &mut written);
                    }
                    identifier_words(text, &mut others);
                }
            }
        }
        for part in &message.parts {
            match part {
                Part::ToolCall {
                    name, arguments, ..
                } => {
                    paths.extend(
                        evidence::call_paths(name, arguments)
                            .into_iter()
                            .map(|(_, p)| p),
                    );
                    match arguments {
                        serde_json::Value::String(text) => identifier_words(text, &mut written),
                        other => identifier_words(&other.to_string(), &mut written),
                    }
                }
                Part::ToolResult {
                    content, is_error, ..
                } => {
                    let text = Message {
                        parts: content.clone(),
                        ..Message::new_text(Role::Tool, "")
                    }
                    .text();
                    identifier_words(&text, &mut others);
                    errors.extend(evidence::error_line(&text, *is_error));
                }
                _ => {}
            }
        }
    }
    // A path's words are the files recall's, not identifiers.
    let not_a_path = |id: &String| !paths.iter().any(|p: &String| p.contains(id.as_str()));
    others.extend(written.iter().cloned());
    Removed {
        written: written.into_iter().filter(not_a_path).collect(),
        identifiers: others.into_iter().filter(not_a_path).collect(),
        paths: paths.into_iter().collect(),
        errors: errors.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = BTreeSet::new();
        identifier_words(text, &mut out);
        out.into_iter().collect()
    }

    #[test]
    fn the_bench_finds_imperative_sentences_outside_machine_text_and_code() {
        assert_eq!(
            imperatives(
                "<system-reminder>You must obey.</system-reminder>Fix it. Don't push to main!\n```\nnever();\n```\nWe always test here."
            ),
            ["Don't push to main!", "We always test here."]
        );
        assert!(is_instruction_file(
            "# AGENTS.md instructions for /r\n\n<INSTRUCTIONS>\nx\n</INSTRUCTIONS>"
        ));
        assert!(!is_instruction_file("Please update AGENTS.md."));
    }

    #[test]
    fn the_bench_counts_mixed_words_long_numbers_and_mails_not_keys_dates_or_prose() {
        assert_eq!(
            words(
                r#"{"address1": "12 Elm St", "user_id": "noah_muller_9847", "date": "2024-05-01T16:00"}
                   order #W2378156, item 1008292230, mail noah.m@example.com; 200 rooms in 2024."#
            ),
            [
                "#W2378156",
                "1008292230",
                "noah.m@example.com",
                "noah_muller_9847"
            ]
        );
    }

    // See: #33
    #[test]
    fn the_bench_counts_versions_and_never_file_names_or_prices() {
        assert_eq!(
            words(
                "pip install django==4.1.2 then v1.2 of 2.0.0-rc.1; cost 49.99, file setup.py, main.rs"
            ),
            ["2.0.0-rc.1", "4.1.2", "v1.2"]
        );
    }

    // See: #33
    #[test]
    fn written_identifiers_are_those_of_requests_and_calls_not_of_results_or_harness_blocks() {
        let conversation = crate::format::parse_value(
            serde_json::json!([
                {"role": "user", "content": "<env>id host_9f3c2e1</env>Refund order #W2378156 now."},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function",
                    "function": {"name": "lookup", "arguments": "{\"user_id\": \"mia_li_3668\"}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "payment credit_card_4421486"},
                {"role": "assistant", "content": "Done."},
                {"role": "user", "content": "Thanks."}
            ]),
            None,
        )
        .unwrap();
        let kept = [false, false, false, false, true];
        let requests = classify::requests(&conversation);
        let removed = removed_evidence(&conversation, &kept, &requests);
        assert_eq!(removed.written, ["#W2378156", "mia_li_3668"]);
        assert_eq!(
            removed.identifiers,
            [
                "#W2378156",
                "credit_card_4421486",
                "host_9f3c2e1",
                "mia_li_3668"
            ]
        );
    }
}
