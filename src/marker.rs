//! The notes ctxcompact leaves where it removed or cleared something, and the digest of a
//! removed span.
//!
//! Every note comes from one format here, starts with `[ctxcompact:` so a reader (or a later
//! run) can recognise it, and counts against the budget like any other text. A removal marker
//! stands at the place of its span and says how many messages and how many tokens *of the input*
//! it replaces; it reads as history, so that a kept old instruction is not taken for a new one.
//! Its digest is extractive and deterministic, built from the span only, in priority order:
//! requests (verbatim up to [`REQUEST_CHARS`]), files (read, edited, created, named in
//! commands), commands with their outcome, errors, and the last assistant state. A cap trims the
//! sections from the bottom up, leaving "+N more" counts; an empty section is omitted.
//! Re-compaction folds an earlier marker inside a span into the new one, counts and digest alike.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::classify::{self, Author};
use crate::conversation::{Message, Part, Role};
use crate::tokens::TokenCounter;

/// What a removed span leaves behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MarkerMode {
    /// A one-line note and an extractive digest of the span.
    #[default]
    Digest,
    /// The one-line note alone.
    Brief,
    /// Nothing.
    None,
}

/// A removed request is kept verbatim up to this many characters (the figure).
pub(crate) const REQUEST_CHARS: usize = 400;
/// Of a longer request, this many leading characters are kept (then ` … ` and the tail), so
/// that its first 200 characters always survive.
const REQUEST_HEAD: usize = 300;
/// The last assistant state is cut to this many characters.
const STATE_CHARS: usize = 400;
/// A command, an error line or an outcome is cut to this many characters.
const LINE_CHARS: usize = 200;
/// The default digest cap: at most this many tokens (the figure) …
pub(crate) const DIGEST_TOKENS: usize = 2000;
/// … and at most this share of the budget, in percent.
pub(crate) const DIGEST_BUDGET_PCT: usize = 10;

/// The default digest cap for `budget`: the smaller of [`DIGEST_TOKENS`] and
/// [`DIGEST_BUDGET_PCT`]% of the budget.
pub(crate) fn default_cap(budget: usize) -> usize {
    DIGEST_TOKENS.min(budget / 100 * DIGEST_BUDGET_PCT + budget % 100 * DIGEST_BUDGET_PCT / 100)
}

/// How a tool touched a file, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Touch {
    /// Changed in place.
    Edited,
    /// Written anew.
    Created,
    /// Read (or looked at).
    Read,
    /// Named in a shell command.
    Command,
}

impl Touch {
    /// In the digest's order: what the work changed first.
    const ALL: [Self; 4] = [Self::Edited, Self::Created, Self::Read, Self::Command];

    fn title(self) -> &'static str {
        match self {
            Self::Read => "Files read",
            Self::Edited => "Files edited",
            Self::Created => "Files created",
            Self::Command => "Files in commands",
        }
    }

    /// The touch a tool's name implies.
    fn of_tool(name: &str) -> Self {
        let name = name.to_ascii_lowercase();
        let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
        if has(&["write", "create", "add_file", "new_file"]) {
            Self::Created
        } else if has(&[
            "edit", "replace", "patch", "update", "insert", "modify", "delete", "move", "rename",
        ]) {
            Self::Edited
        } else {
            Self::Read
        }
    }
}

/// What the digest extracted from a span, before the cap.
#[derive(Debug, Clone, Default)]
struct Digest {
    /// Input messages replaced (old markers counted by what they replaced).
    messages: usize,
    /// Input tokens replaced.
    tokens: usize,
    requests: Vec<String>,
    files: [BTreeMap<String, usize>; 4],
    /// How each tool name touches files, worked out once per name (looked up, never iterated).
    touches: HashMap<String, Touch>,
    commands: Vec<String>,
    errors: Vec<String>,
    /// The error lines already listed (looked up, never iterated: `errors` keeps the order).
    seen_errors: HashSet<String>,
    last_state: Option<String>,
    /// Items earlier markers had already cut, per section (requests, files…, commands, errors).
    more: [usize; 7],
}

/// The marker for a removed span: `messages` are its messages (in the state they were removed
/// from), `input_tokens` each one's tokens in the input (`None` for a message that was not in
/// the input). `None` in [`MarkerMode::None`].
pub(crate) fn build(
    mode: MarkerMode,
    messages: &[Message],
    input_tokens: &[Option<usize>],
    cap: usize,
    counter: &dyn TokenCounter,
) -> Option<String> {
    if mode == MarkerMode::None {
        return None;
    }
    let digest = extract(messages, input_tokens);
    let body = match mode {
        MarkerMode::Digest => render_capped(&digest, cap, counter),
        _ => String::new(),
    };
    let header = header(digest.messages, digest.tokens, !body.is_empty());
    Some(if body.is_empty() {
        header
    } else {
        format!("{header}\n{body}\n{DIGEST_END}")
    })
}

/// The last line of a marker with a digest, so that its extent is plain to a later run even when
/// it was merged into the message after it.
pub(crate) const DIGEST_END: &str = "[ctxcompact: end of digest]";

/// The words of the first line that say a digest follows.
const DIGEST_FOLLOWS: &str = "; digest below";

/// The longest marker this run could write with `messages` and `tokens` at most, without its
/// digest: what each marker reserves besides the shared digest allowance.
pub(crate) fn worst_header(messages: usize, tokens: usize, digest: bool) -> String {
    let header = header(messages, tokens, digest);
    if digest {
        format!("{header}\n\n{DIGEST_END}")
    } else {
        header
    }
}

/// The first line of every removal marker.
fn header(messages: usize, tokens: usize, digest: bool) -> String {
    let noun = if messages == 1 { "message" } else { "messages" };
    let follows = if digest { DIGEST_FOLLOWS } else { "" };
    format!(
        "[ctxcompact: {} earlier {noun} ({} input tokens) removed here{follows}; the current \
         request is the last user message]",
        thousands(messages),
        thousands(tokens)
    )
}

/// The length in bytes of the marker `text` starts with, if it starts with one: its first line,
/// or through its closing line when it has a digest.
pub(crate) fn marker_len(text: &str) -> Option<usize> {
    let start = text.len() - text.trim_start().len();
    let rest = &text[start..];
    if !rest.starts_with(crate::classify::MARKER_PREFIX) {
        return None;
    }
    let first = rest.find('\n').unwrap_or(rest.len());
    if !rest[..first].contains(DIGEST_FOLLOWS) {
        return Some(start + first);
    }
    match rest.find(DIGEST_END) {
        Some(at) => Some(start + at + DIGEST_END.len()),
        None => Some(text.len()),
    }
}

/// Reads the counts of an earlier marker's first line.
fn parse_header(text: &str) -> Option<(usize, usize)> {
    let rest = text.trim_start().strip_prefix("[ctxcompact: ")?;
    let (messages, rest) = rest.split_once(" earlier message")?;
    let (_, rest) = rest.split_once('(')?;
    let (tokens, _) = rest.split_once(" input tokens")?;
    let number = |s: &str| s.replace(',', "").parse::<usize>().ok();
    Some((number(messages)?, number(tokens)?))
}

/// Walks a span and extracts its digest.
fn extract(messages: &[Message], input_tokens: &[Option<usize>]) -> Digest {
    let mut digest = Digest::default();
    // The last assistant message with text; clipped once, at the end.
    let mut last_state: Option<&Message> = None;
    // Looked up by call id, never iterated.
    let mut results: HashMap<&str, (Cow<'_, str>, bool)> = HashMap::new();
    for message in messages {
        for part in &message.parts {
            if let Part::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } = part
            {
                results.insert(call_id, (parts_text(content), *is_error));
            }
        }
    }
    for (message, tokens) in messages.iter().zip(input_tokens) {
        let text = parts_text(&message.parts);
        if message.role == Role::User && classify::is_marker(&text) {
            let end = marker_len(&text).unwrap_or(text.len());
            fold(&mut digest, &text[..end]);
            // A marker merged into the message after it (Anthropic): that message is history too.
            let rest = text[end..].trim_start_matches('\n');
            if classify::is_request_text(rest) {
                digest.messages += 1;
                digest.tokens += tokens.unwrap_or(0);
                digest.requests.push(clip_request(rest));
            }
            continue;
        }
        digest.messages += 1;
        digest.tokens += tokens.unwrap_or(0);
        match message.role {
            Role::User if classify::author_with_text(message, &text) == Some(Author::Request) => {
                digest.requests.push(clip_request(&text));
            }
            Role::Assistant => {
                if !text.trim().is_empty() {
                    last_state = Some(message);
                }
                for part in &message.parts {
                    if let Part::ToolCall {
                        id,
                        name,
                        arguments,
                        ..
                    } = part
                    {
                        add_call(&mut digest, name, arguments, results.get(id.as_str()));
                    }
                }
            }
            _ => {}
        }
        for part in &message.parts {
            if let Part::ToolResult { call_id, .. } = part {
                let Some((text, is_error)) = results.get(call_id.as_str()) else {
                    continue;
                };
                if let Some(line) = error_line(text, *is_error) {
                    if digest.seen_errors.insert(line.clone()) {
                        digest.errors.push(line);
                    }
                }
            }
        }
    }
    if let Some(message) = last_state {
        digest.last_state = Some(clip(message.text().trim(), STATE_CHARS));
    }
    digest
}

/// The text of a message's or a result's text parts, joined (borrowed when there is one).
fn parts_text(parts: &[Part]) -> Cow<'_, str> {
    if let [Part::Text { text, .. }] = parts {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    for part in parts {
        if let Part::Text { text, .. } = part {
            out.push_str(text);
        }
    }
    Cow::Owned(out)
}

/// The first 300 bytes (or so, at a character boundary) of a line, lowercased: enough to tell
/// an error or an exit status, without copying a long line.
fn lower_head(line: &str) -> String {
    let mut end = line.len().min(300);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_ascii_lowercase()
}

/// Adds one tool call's files and command to the digest.
fn add_call(
    digest: &mut Digest,
    name: &str,
    arguments: &Value,
    result: Option<&(Cow<'_, str>, bool)>,
) {
    let parsed = arguments_value(arguments);
    let parsed = parsed.as_ref();
    let command = command_of(parsed);
    let touch = if let Some(touch) = digest.touches.get(name) {
        *touch
    } else {
        let touch = Touch::of_tool(name);
        digest.touches.insert(name.to_string(), touch);
        touch
    };
    for (touch, path) in paths_of(touch, arguments, parsed, command.as_deref()) {
        let files = &mut digest.files[touch as usize];
        match files.get_mut(path) {
            Some(times) => *times += 1,
            None => {
                files.insert(path.to_string(), 1);
            }
        }
    }
    if let Some(command) = command {
        let mut line = clip(&one_line(&command), LINE_CHARS);
        if let Some(outcome) = result.and_then(|(text, is_error)| outcome(text, *is_error)) {
            line.push_str(" → ");
            line.push_str(&outcome);
        }
        digest.commands.push(line);
    }
}

/// A call's top-level arguments as far as the digest reads them: each key with its string, or
/// its list of strings; other values are only noted. Read straight from OpenAI's JSON-encoded
/// string, borrowing the text where it has no escapes (no JSON value tree is built).
struct Args<'a> {
    entries: Vec<(Cow<'a, str>, Arg<'a>)>,
}

/// One argument's value, as the digest reads it.
enum Arg<'a> {
    Text(Cow<'a, str>),
    List(Vec<Cow<'a, str>>),
    Other,
}

impl Args<'_> {
    /// The value of the first of `keys` present.
    fn get(&self, keys: &[&str]) -> Option<&Arg<'_>> {
        keys.iter()
            .find_map(|key| self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v))
    }
}

/// A string, borrowed from the input when it can be.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_str(ArgVisitor)
            .and_then(|arg| match arg {
                Arg::Text(text) => Ok(Text(text)),
                _ => Err(serde::de::Error::custom("expected a string")),
            })
    }
}

impl<'de> Deserialize<'de> for Arg<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ArgVisitor)
    }
}

impl<'de> Deserialize<'de> for Args<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ArgsVisitor;
        impl<'de> Visitor<'de> for ArgsVisitor {
            type Value = Args<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of arguments")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Args<'de>, A::Error> {
                let mut entries = Vec::new();
                while let Some(Text(key)) = map.next_key()? {
                    entries.push((key, map.next_value()?));
                }
                Ok(Args { entries })
            }
        }
        deserializer.deserialize_map(ArgsVisitor)
    }
}

/// Reads one argument value: strings and lists of strings are kept, the rest skipped.
struct ArgVisitor;

impl<'de> Visitor<'de> for ArgVisitor {
    type Value = Arg<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Arg<'de>, E> {
        Ok(Arg::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Arg<'de>, E> {
        Ok(Arg::Text(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Arg<'de>, E> {
        Ok(Arg::Text(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Arg<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Arg<'de>>()? {
            if let Arg::Text(text) = item {
                items.push(text);
            }
        }
        Ok(Arg::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Arg<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Arg::Other)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Arg<'de>, E> {
        Ok(Arg::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Arg<'de>, E> {
        Ok(Arg::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Arg<'de>, E> {
        Ok(Arg::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Arg<'de>, E> {
        Ok(Arg::Other)
    }
    fn visit_unit<E>(self) -> Result<Arg<'de>, E> {
        Ok(Arg::Other)
    }
}

/// A call's arguments as the digest reads them: OpenAI's JSON-encoded string is parsed here;
/// Anthropic's object is borrowed. `None` when they are not an object.
fn arguments_value(arguments: &Value) -> Option<Args<'_>> {
    match arguments {
        Value::String(text) => serde_json::from_str(text).ok(),
        Value::Object(map) => Some(Args {
            entries: map
                .iter()
                .map(|(key, value)| {
                    let arg = match value {
                        Value::String(s) => Arg::Text(Cow::Borrowed(s.as_str())),
                        Value::Array(items) => Arg::List(
                            items
                                .iter()
                                .filter_map(Value::as_str)
                                .map(Cow::Borrowed)
                                .collect(),
                        ),
                        _ => Arg::Other,
                    };
                    (Cow::Borrowed(key.as_str()), arg)
                })
                .collect(),
        }),
        _ => None,
    }
}

/// Whether an argument's name says it holds paths.
pub(crate) fn is_path_key(key: &str) -> bool {
    let key = key.as_bytes();
    ["path", "paths", "file", "files", "filename", "filenames"]
        .iter()
        .any(|end| {
            key.len() >= end.len()
                && key[key.len() - end.len()..].eq_ignore_ascii_case(end.as_bytes())
        })
}

/// The paths a tool call names, each with how the tool touched it: path-like arguments, the
/// files of an `apply_patch` patch, and path-like words of a shell command.
pub(crate) fn call_paths(name: &str, arguments: &Value) -> Vec<(Touch, String)> {
    let parsed = arguments_value(arguments);
    let parsed = parsed.as_ref();
    let command = command_of(parsed);
    paths_of(Touch::of_tool(name), arguments, parsed, command.as_deref())
        .into_iter()
        .map(|(touch, path)| (touch, path.to_string()))
        .collect()
}

/// [`call_paths`] with the tool's touch known and the arguments and command already read.
fn paths_of<'a>(
    touch: Touch,
    arguments: &'a Value,
    parsed: Option<&'a Args<'a>>,
    command: Option<&'a str>,
) -> Vec<(Touch, &'a str)> {
    let mut out = Vec::new();
    if let Some(args) = parsed {
        for (key, value) in &args.entries {
            let path_key = is_path_key(key);
            let mut take = |s: &'a str| {
                if path_key && !s.trim().is_empty() && !s.contains('\n') {
                    out.push((touch, s.trim()));
                }
                patch_paths(s, &mut out);
            };
            match value {
                Arg::Text(s) => take(s),
                Arg::List(items) => items.iter().map(AsRef::as_ref).for_each(take),
                Arg::Other => {}
            }
        }
    } else if let Value::String(raw) = arguments {
        // A freeform tool (Codex `apply_patch`) passes its input as a bare string.
        patch_paths(raw, &mut out);
    }
    if let Some(command) = command {
        out.extend(
            command
                .split_whitespace()
                .filter_map(path_word)
                .map(|p| (Touch::Command, p)),
        );
    }
    out
}

/// The files of an `apply_patch` patch: `*** Update File: path` and the like.
fn patch_paths<'a>(text: &'a str, out: &mut Vec<(Touch, &'a str)>) {
    if !text.contains("*** ") {
        return;
    }
    for line in text.lines() {
        let found = [
            ("*** Update File: ", Touch::Edited),
            ("*** Delete File: ", Touch::Edited),
            ("*** Move to: ", Touch::Edited),
            ("*** Add File: ", Touch::Created),
        ]
        .into_iter()
        .find_map(|(prefix, touch)| line.strip_prefix(prefix).map(|p| (touch, p.trim())));
        if let Some((touch, path)) = found.filter(|(_, p)| !p.is_empty()) {
            out.push((touch, path));
        }
    }
}

/// The shell command a call runs, if it runs one: a `command`, `cmd` or `script` argument (a
/// string, or an argv array whose `sh -c`/`bash -lc` wrapper is dropped).
fn command_of<'a>(parsed: Option<&'a Args<'a>>) -> Option<Cow<'a, str>> {
    match parsed?.get(&["command", "cmd", "script"])? {
        Arg::Text(s) if !s.trim().is_empty() => Some(Cow::Borrowed(s.as_ref())),
        Arg::List(items) => {
            let words: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
            let shell = words.len() == 3
                && words[1].starts_with('-')
                && words[1].ends_with('c')
                && words[0].ends_with("sh");
            let command = if shell {
                words[2].to_string()
            } else {
                words.join(" ")
            };
            (!command.trim().is_empty()).then_some(Cow::Owned(command))
        }
        _ => None,
    }
}

/// A word of a shell command that looks like a path: it has a `/` or a file extension, and is
/// neither an option, a URL nor a number.
fn path_word(word: &str) -> Option<&str> {
    let word = word.trim_matches(|c: char| "\"'`()[]{},;:<>|&".contains(c));
    let word = word.trim_end_matches('.');
    if word.len() < 3
        || word.len() > LINE_CHARS
        || word.starts_with('-')
        || word.contains("://")
        || word.contains(['=', '$', '*', '?', '\\', '@'])
        || !word.chars().any(char::is_alphabetic)
    {
        return None;
    }
    let has_slash = word.contains('/') && word.trim_matches('/').chars().any(char::is_alphanumeric);
    let has_extension = word.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
    });
    (has_slash || has_extension).then_some(word)
}

/// A command's outcome from its result: an exit-status line, or the first error line.
fn outcome(text: &str, is_error: bool) -> Option<String> {
    let lines = || text.lines().map(str::trim).filter(|l| !l.is_empty());
    for line in lines().take(5).chain(lines().rev().take(5)) {
        let lower = lower_head(line);
        if lower.contains("exit code")
            || lower.contains("exit status")
            || lower.contains("exited with")
            || lower.starts_with("exit:")
        {
            return Some(clip(line, LINE_CHARS));
        }
    }
    error_line(text, is_error)
}

/// The first line of a result flagged as an error, or the first of its first lines that says
/// it is one.
pub(crate) fn error_line(text: &str, is_error: bool) -> Option<String> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    if is_error {
        return lines.next().map(|l| clip(l, LINE_CHARS));
    }
    lines
        .take(3)
        .find(|line| says_error(line))
        .map(|l| clip(l, LINE_CHARS))
}

/// Whether a line reads as an error report.
fn says_error(line: &str) -> bool {
    let lower = lower_head(line);
    [
        "error:",
        "error[",
        "traceback (most recent call last)",
        "exception:",
        "fatal:",
        "panicked at",
        "command not found",
        "no such file or directory",
        "permission denied",
    ]
    .iter()
    .any(|w| lower.contains(w))
        || lower.starts_with("error")
        || lower.starts_with("failed")
}

/// Folds an earlier marker into the digest: its counts, and the items of its digest.
fn fold(digest: &mut Digest, text: &str) {
    if let Some((messages, tokens)) = parse_header(text) {
        digest.messages += messages;
        digest.tokens += tokens;
    }
    let mut section: Option<usize> = None;
    for line in text.lines().skip(1) {
        if line == DIGEST_END {
            break;
        }
        if let Some(state) = line.strip_prefix("Last state: ") {
            digest.last_state = Some(state.to_string());
            section = None;
            continue;
        }
        if let Some((index, rest)) = section_heading(line) {
            section = Some(index);
            if (1..=4).contains(&index) {
                fold_files(digest, index - 1, rest);
            }
            continue;
        }
        let Some(index) = section else { continue };
        if let Some(more) = line
            .strip_prefix("+")
            .and_then(|r| r.strip_suffix(" more"))
            .and_then(|n| n.parse::<usize>().ok())
        {
            digest.more[index] += more;
            continue;
        }
        match index {
            0 => {
                if let Some(request) = line.strip_prefix("» ") {
                    digest.requests.push(request.to_string());
                } else if let Some(last) = digest.requests.last_mut() {
                    last.push('\n');
                    last.push_str(line);
                }
            }
            5 => {
                if let Some(command) = line.strip_prefix("$ ") {
                    digest.commands.push(command.to_string());
                }
            }
            6 => {
                if let Some(error) = line.strip_prefix("! ") {
                    if digest.seen_errors.insert(error.to_string()) {
                        digest.errors.push(error.to_string());
                    }
                }
            }
            _ => {}
        }
    }
}

/// Adds a folded files line (`a ×2, b, +3 more`) to files section `touch`.
fn fold_files(digest: &mut Digest, touch: usize, rest: &str) {
    for item in rest.split(", ").filter(|i| !i.is_empty()) {
        if let Some(more) = item
            .strip_prefix('+')
            .and_then(|r| r.strip_suffix(" more"))
            .and_then(|n| n.parse::<usize>().ok())
        {
            digest.more[touch + 1] += more;
            continue;
        }
        let (path, times) = match item.rsplit_once(" ×") {
            Some((path, n)) => (path, n.parse::<usize>().unwrap_or(1)),
            None => (item, 1),
        };
        *digest.files[touch].entry(path.to_string()).or_insert(0) += times;
    }
}

/// The section a digest line opens, with the rest of the line after `): `.
fn section_heading(line: &str) -> Option<(usize, &str)> {
    let titles = [
        "Requests",
        Touch::ALL[0].title(),
        Touch::ALL[1].title(),
        Touch::ALL[2].title(),
        Touch::ALL[3].title(),
        "Commands",
        "Errors",
    ];
    titles.iter().enumerate().find_map(|(i, title)| {
        let rest = line.strip_prefix(title)?.strip_prefix(" (")?;
        let (count, rest) = rest.split_once("):")?;
        count
            .chars()
            .all(|c| c.is_ascii_digit() || c == ',')
            .then(|| (i, rest.trim_start()))
    })
}

/// One section of a rendered digest.
struct Section {
    title: &'static str,
    /// Items, oldest first.
    items: Vec<String>,
    /// Items an earlier marker had already cut.
    more: usize,
    /// Items written on the heading line, comma-separated (files), rather than one per line.
    inline: bool,
    /// Prefix of each item on its own line.
    bullet: &'static str,
}

impl Section {
    fn total(&self) -> usize {
        self.items.len() + self.more
    }
}

/// The digest's sections in priority order.
fn sections(digest: &Digest) -> Vec<Section> {
    let mut sections = vec![Section {
        title: "Requests",
        items: digest.requests.clone(),
        more: digest.more[0],
        inline: false,
        bullet: "» ",
    }];
    // A file is listed once, in the first section that has it: edited before read.
    let mut listed: BTreeSet<&str> = BTreeSet::new();
    for touch in Touch::ALL {
        let files = &digest.files[touch as usize];
        sections.push(Section {
            title: touch.title(),
            items: files
                .iter()
                .filter(|(path, _)| listed.insert(path.as_str()))
                .map(|(path, &n)| {
                    if n > 1 {
                        format!("{path} ×{n}")
                    } else {
                        path.clone()
                    }
                })
                .collect(),
            more: digest.more[touch as usize + 1],
            inline: true,
            bullet: "",
        });
    }
    sections.push(Section {
        title: "Commands",
        items: digest.commands.clone(),
        more: digest.more[5],
        inline: false,
        bullet: "$ ",
    });
    sections.push(Section {
        title: "Errors",
        items: digest.errors.clone(),
        more: digest.more[6],
        inline: false,
        bullet: "! ",
    });
    sections.push(Section {
        title: "Last state",
        items: digest.last_state.iter().cloned().collect(),
        more: 0,
        inline: true,
        bullet: "",
    });
    sections
}

/// Renders sections, keeping the first `kept[i]` items of section `i`; a section with
/// `shown[i]` false is left out altogether.
fn render(sections: &[Section], kept: &[usize], shown: &[bool]) -> String {
    let mut out = String::new();
    for ((section, &kept), _) in sections.iter().zip(kept).zip(shown).filter(|(_, s)| **s) {
        let items = &section.items[..kept];
        let more = section.more + section.items.len() - kept;
        if section.title == "Last state" {
            if let Some(state) = items.first() {
                out.push_str("Last state: ");
                out.push_str(state);
                out.push('\n');
            }
            continue;
        }
        let _ = write!(out, "{} ({}):", section.title, thousands(section.total()));
        if section.inline {
            let mut line: Vec<String> = items.to_vec();
            if more > 0 {
                line.push(format!("+{more} more"));
            }
            out.push(' ');
            out.push_str(&line.join(", "));
            out.push('\n');
        } else {
            out.push('\n');
            for item in items {
                out.push_str(section.bullet);
                out.push_str(item);
                out.push('\n');
            }
            if more > 0 {
                let _ = writeln!(out, "+{more} more");
            }
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// Renders the digest within `cap` tokens, trimming from the bottom up: the digest is one
/// sequence — each section's heading, then its items, sections in priority order — and the
/// longest beginning of it that fits is kept. The section cut in the middle says how many items
/// it left out; the sections below it are named, with their counts, on one closing line. Items
/// are counted one by one, and only until the cap is reached, so the cost does not grow with the
/// span. Empty when not even the closing line fits.
fn render_capped(digest: &Digest, cap: usize, counter: &dyn TokenCounter) -> String {
    let sections = sections(digest);
    let present: Vec<bool> = sections.iter().map(|s| s.total() > 0).collect();
    let mut shown = vec![false; sections.len()];
    let mut kept = vec![0; sections.len()];
    // The closing line's cost should every section from `s` on be left out.
    let closing_from: Vec<usize> = (0..=sections.len())
        .map(|s| {
            let which: Vec<bool> = present
                .iter()
                .enumerate()
                .map(|(i, p)| *p && i >= s)
                .collect();
            let line = left_out(&sections, &which);
            if line.is_empty() {
                0
            } else {
                counter.count_text(&line) + 1
            }
        })
        .collect();
    let mut used = 0;
    'fill: for (s, section) in sections.iter().enumerate().filter(|(s, _)| present[*s]) {
        let room = cap.saturating_sub(closing_from[s + 1]);
        let total = thousands(section.total());
        let heading = format!("{} ({total}): +{total} more\n", section.title);
        let cost = counter.count_text(&heading) + 1;
        if used + cost > room {
            break;
        }
        used += cost;
        shown[s] = true;
        for item in &section.items {
            let cost = counter.count_text(item) + 2;
            if used + cost > room {
                break 'fill;
            }
            used += cost;
            kept[s] += 1;
        }
    }
    loop {
        let mut text = render(&sections, &kept, &shown);
        let omitted: Vec<bool> = present.iter().zip(&shown).map(|(p, s)| *p && !*s).collect();
        let closing = left_out(&sections, &omitted);
        if !closing.is_empty() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&closing);
        }
        let tokens = counter.count_text(&text);
        if tokens <= cap {
            return text;
        }
        // The per-item counts fell short: give up the lowest kept items, about as many bytes as
        // the excess (4 bytes a token, the rough average), else the lowest section.
        let mut excess = (tokens - cap) * 4;
        while excess > 0 {
            if let Some(s) = kept.iter().rposition(|k| *k > 0) {
                kept[s] -= 1;
                excess = excess.saturating_sub(sections[s].items[kept[s]].len().max(1));
            } else if let Some(s) = shown.iter().rposition(|s| *s) {
                shown[s] = false;
                excess = 0;
            } else {
                return String::new();
            }
        }
    }
}

/// The closing line naming the sections left out, with their counts; empty when none is.
fn left_out(sections: &[Section], which: &[bool]) -> String {
    let names: Vec<String> = sections
        .iter()
        .zip(which)
        .filter(|(_, w)| **w)
        .map(|(s, _)| format!("{} ({})", s.title, thousands(s.total())))
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!("Left out for room: {}", names.join(", "))
    }
}

/// A removed request as the digest keeps it: verbatim up to [`REQUEST_CHARS`] characters, else
/// its head and tail around ` … `.
fn clip_request(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= REQUEST_CHARS {
        return text.to_string();
    }
    let head: String = text.chars().take(REQUEST_HEAD).collect();
    let tail_len = REQUEST_CHARS - REQUEST_HEAD - 3;
    let tail: String = text.chars().skip(chars - tail_len).collect();
    format!("{head} … {tail}")
}

/// The first `max` characters of `text`, with `…` when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Newlines and runs of blanks become single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The placeholder that replaces a cleared tool result's content: the tool, the size, and the
/// first line when it is an error or an exit status.
pub(crate) fn cleared_output(tool: &str, tokens: usize, content: &str, is_error: bool) -> String {
    let evidence = outcome(content, is_error)
        .map(|line| format!(": {line}"))
        .unwrap_or_default();
    format!(
        "[ctxcompact: output of {tool} cleared ({} tokens){evidence}]",
        thousands(tokens)
    )
}

/// The line that stands for the middle of a capped tool output; `unit` is `lines` or
/// `characters`.
pub(crate) fn omitted(omitted: usize, total: usize, unit: &str) -> String {
    format!(
        "[… {} of {} {unit} omitted …]",
        thousands(omitted),
        thousands(total)
    )
}

/// The note that stands for the middle of a task shortened to fit the budget.
pub(crate) fn shortened(cut: usize, total: usize) -> String {
    format!(
        "[… ctxcompact shortened the task to fit the budget: {} of {} characters cut here …]",
        thousands(cut),
        thousands(total)
    )
}

/// `9812` → `9,812`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::parse_value;
    use crate::tokens::CharEstimate;

    fn span() -> Vec<Message> {
        let call = |id: &str, name: &str, args: &str| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}});
        parse_value(
            json!([
                {"role": "user", "content": "Please rename the ledger module."},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    call("a", "Read", "{\"file_path\": \"src/ledger.rs\"}"),
                    call("b", "Bash", "{\"command\": \"cargo test --lib ledger\"}")]},
                {"role": "tool", "tool_call_id": "a", "content": "pub mod ledger;"},
                {"role": "tool", "tool_call_id": "b", "content": "error: could not compile\nexit code: 101"},
                {"role": "assistant", "content": null, "tool_calls": [call("c", "Write", "{\"file_path\": \"src/books.rs\"}")]},
                {"role": "tool", "tool_call_id": "c", "content": "ok"},
                {"role": "assistant", "content": "Renamed; tests still fail."}
            ]),
            None,
        )
        .unwrap()
        .messages
    }

    #[test]
    fn the_digest_keeps_requests_files_commands_errors_and_state() {
        let messages = span();
        let tokens = vec![Some(10); messages.len()];
        let text = build(MarkerMode::Digest, &messages, &tokens, 500, &CharEstimate).unwrap();
        assert_eq!(
            text,
            "[ctxcompact: 7 earlier messages (70 input tokens) removed here; digest below; the \
             current request is the last user message]\n\
             Requests (1):\n» Please rename the ledger module.\n\
             Files created (1): src/books.rs\n\
             Files read (1): src/ledger.rs\n\
             Commands (1):\n$ cargo test --lib ledger → exit code: 101\n\
             Errors (1):\n! error: could not compile\n\
             Last state: Renamed; tests still fail.\n\
             [ctxcompact: end of digest]"
        );
    }

    #[test]
    fn the_cap_trims_from_the_bottom_with_counts() {
        let messages = span();
        let tokens = vec![Some(10); messages.len()];
        let full = build(MarkerMode::Digest, &messages, &tokens, 500, &CharEstimate).unwrap();
        let small = build(MarkerMode::Digest, &messages, &tokens, 60, &CharEstimate).unwrap();
        let body = small.split_once('\n').map_or("", |(_, b)| b);
        let digest = body.strip_suffix(DIGEST_END).unwrap_or(body);
        assert!(CharEstimate.count_text(digest.trim_end()) <= 60, "{body}");
        assert!(small.len() < full.len());
        assert!(body.starts_with("Requests (1):\n» Please rename"), "{body}");
        assert!(!body.contains("Last state:"), "{body}");
        assert!(
            body.ends_with("Left out for room: Commands (1), Errors (1), Last state (1)\n[ctxcompact: end of digest]"),
            "{body}"
        );
    }

    #[test]
    fn an_earlier_marker_folds_into_the_new_one() {
        let messages = span();
        let tokens = vec![Some(10); messages.len()];
        let old = build(MarkerMode::Digest, &messages, &tokens, 500, &CharEstimate).unwrap();
        let mut again = vec![Message::new_text(Role::User, old)];
        again.push(Message::new_text(Role::Assistant, "Next step."));
        let text = build(
            MarkerMode::Digest,
            &again,
            &[Some(99), Some(5)],
            500,
            &CharEstimate,
        )
        .unwrap();
        assert!(
            text.starts_with("[ctxcompact: 8 earlier messages (75 input tokens"),
            "{text}"
        );
        assert!(
            text.contains("» Please rename the ledger module."),
            "{text}"
        );
        assert!(text.contains("Files read (1): src/ledger.rs"), "{text}");
        assert!(
            text.contains("$ cargo test --lib ledger → exit code: 101"),
            "{text}"
        );
        assert!(text.contains("Last state: Next step."), "{text}");
    }

    #[test]
    fn long_requests_keep_their_head_and_tail() {
        let long = format!("{}{}", "a".repeat(350), "z".repeat(100));
        let clipped = clip_request(&long);
        assert_eq!(clipped.chars().count(), REQUEST_CHARS);
        assert!(clipped.starts_with(&"a".repeat(300)));
        assert!(clipped.ends_with(&"z".repeat(97)));
    }

    #[test]
    fn shell_words_that_look_like_paths() {
        let words: Vec<&str> = "cd /repo && cat src/main.rs | grep -n foo.bar 1.5 --x=y README.md"
            .split_whitespace()
            .filter_map(path_word)
            .collect();
        assert_eq!(words, ["/repo", "src/main.rs", "foo.bar", "README.md"]);
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(
            cleared_output("read_file", 2431, "fn main() {}", false),
            "[ctxcompact: output of read_file cleared (2,431 tokens)]"
        );
        assert_eq!(
            cleared_output("bash", 12, "Error: no such file\nmore", false),
            "[ctxcompact: output of bash cleared (12 tokens): Error: no such file]"
        );
        assert_eq!(
            omitted(100, 1000, "lines"),
            "[… 100 of 1,000 lines omitted …]"
        );
        assert_eq!(
            parse_header(&header(1234, 56789, true)),
            Some((1234, 56789))
        );
    }
}
