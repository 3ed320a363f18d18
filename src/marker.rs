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
use std::collections::HashSet;
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};

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
/// When the removed requests do not all fit the digest verbatim, each keeps this many leading
/// characters (then `…`): what a reader needs to recognise it (the bench's requests recall reads
/// as many).
pub(crate) const REQUEST_SHORT: usize = 200;
/// The last assistant state is cut to this many characters.
const STATE_CHARS: usize = 400;
/// A command, an error line or an outcome is cut to this many characters.
const LINE_CHARS: usize = 200;
/// The default cap of the sections after the requests: at most this many tokens (the issue's
/// figure) …
pub(crate) const DIGEST_TOKENS: usize = 2000;
/// … and at most this share of the budget, in percent.
pub(crate) const DIGEST_BUDGET_PCT: usize = 10;
/// The default cap of a whole digest, requests included, as a share of the budget in percent:
/// the removed requests come first and may take what the other sections leave of it.
pub(crate) const DIGEST_TOTAL_PCT: usize = 50;
/// Messages after a tool call searched for its result (results follow their call, with at most
/// a few notes between them).
const RESULT_LOOKAHEAD: usize = 64;

/// How much a digest may take, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DigestCap {
    /// The whole digest.
    pub total: usize,
    /// The sections after the requests, together (never more than `total`).
    pub rest: usize,
}

impl DigestCap {
    /// One cap for the whole digest, as `--digest-tokens N` asks: the requests take it first.
    pub(crate) fn fixed(tokens: usize) -> Self {
        Self {
            total: tokens,
            rest: tokens,
        }
    }

    /// The default for `budget`: the sections after the requests share the smaller of
    /// [`DIGEST_TOKENS`] and [`DIGEST_BUDGET_PCT`]% of the budget, and the whole digest, the
    /// requests first, at most [`DIGEST_TOTAL_PCT`]% of it. The requests' room thus grows with
    /// the budget, as the span a digest stands for does.
    pub(crate) fn default_for(budget: usize) -> Self {
        let rest = DIGEST_TOKENS.min(percent(budget, DIGEST_BUDGET_PCT));
        Self {
            total: rest.max(percent(budget, DIGEST_TOTAL_PCT)),
            rest,
        }
    }
}

/// `pct`% of `n`, rounded down, without overflow.
fn percent(n: usize, pct: usize) -> usize {
    n / 100 * pct + n % 100 * pct / 100
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

/// What the digest extracted from a span, before the cap. Its texts borrow from the span where
/// they can: only what an earlier marker folds in, or what had to be joined, is copied.
#[derive(Debug, Clone, Default)]
struct Digest<'a> {
    /// Input messages replaced (old markers counted by what they replaced).
    messages: usize,
    /// Input tokens replaced.
    tokens: usize,
    /// Removed requests, whole and in order (repeats dropped at the end).
    requests: Vec<Cow<'a, str>>,
    /// Every file named, with how and how many times; sorted and grouped into `files` at the end.
    uses: Vec<(Cow<'a, str>, Touch, usize)>,
    /// Per touch, in [`Touch::ALL`] order: each file once, by path, with its count.
    files: [Vec<(Cow<'a, str>, usize)>; 4],
    /// How each tool name touches files, worked out once per name (few names: a list).
    touches: Vec<(&'a str, Touch)>,
    commands: Vec<Command<'a>>,
    /// Error lines, clipped, in order (repeats dropped at the end).
    errors: Vec<Cow<'a, str>>,
    last_state: Option<Cow<'a, str>>,
    /// Items earlier markers had already cut, per section (requests, files…, commands, errors).
    more: [usize; 7],
}

/// A shell command of the span and its outcome.
#[derive(Debug, Clone)]
struct Command<'a> {
    /// The command as run, or a folded digest line as it was written.
    text: Cow<'a, str>,
    /// The exit status or first error line of its result.
    outcome: Option<Cow<'a, str>>,
    /// Whether `text` is a line of an earlier digest, written already.
    folded: bool,
}

impl Command<'_> {
    /// The command's digest line: on one line, clipped, with its outcome.
    fn line(&self) -> Cow<'_, str> {
        if self.folded {
            return Cow::Borrowed(&self.text);
        }
        let mut line = clip(&one_line(&self.text), LINE_CHARS);
        if let Some(outcome) = &self.outcome {
            line.push_str(" → ");
            line.push_str(outcome);
        }
        Cow::Owned(line)
    }
}

/// The marker for a removed span: `messages` are its messages (in the state they were removed
/// from), `input_tokens` each one's tokens in the input (`None` for a message that was not in
/// the input). `None` in [`MarkerMode::None`]; else the marker and how many of the span's
/// requests, and of its files, it does not name (left out for room, or all without a digest).
pub(crate) fn build(
    mode: MarkerMode,
    messages: &[Message],
    input_tokens: &[Option<usize>],
    cap: DigestCap,
    counter: &dyn TokenCounter,
) -> Option<(String, [usize; 2])> {
    if mode == MarkerMode::None {
        return None;
    }
    let digest = extract(messages, input_tokens);
    let (body, unnamed) = match mode {
        MarkerMode::Digest => render_capped(&digest, cap, counter),
        _ => (
            String::new(),
            [
                digest.requests.len(),
                digest.files.iter().map(Vec::len).sum(),
            ],
        ),
    };
    let header = header(digest.messages, digest.tokens, !body.is_empty());
    let text = if body.is_empty() {
        header
    } else {
        format!("{header}\n{body}\n{DIGEST_END}")
    };
    Some((text, unnamed))
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

/// Walks a span once and extracts its digest.
fn extract<'a>(messages: &'a [Message], input_tokens: &[Option<usize>]) -> Digest<'a> {
    let mut digest = Digest::default();
    // The last assistant message with text; clipped once, at the end.
    let mut last_state: Option<&Message> = None;
    for (at, (message, tokens)) in messages.iter().zip(input_tokens).enumerate() {
        let tokens = tokens.unwrap_or(0);
        match message.role {
            Role::User => {
                let text = parts_text(&message.parts);
                if classify::is_marker(&text) {
                    let end = marker_len(&text).unwrap_or(text.len());
                    fold(&mut digest, &text[..end]);
                    // A marker merged into the message after it (Anthropic): that message is
                    // history too.
                    let rest = text[end..].trim_start_matches('\n');
                    if classify::is_request_text(rest) {
                        digest.messages += 1;
                        digest.tokens += tokens;
                        digest.requests.push(sub(&text, rest));
                    }
                    continue;
                }
                digest.messages += 1;
                digest.tokens += tokens;
                if classify::author_with_text(message, &text) == Some(Author::Request) {
                    digest.requests.push(text);
                }
            }
            Role::Assistant => {
                digest.messages += 1;
                digest.tokens += tokens;
                let says =
                    |p: &Part| matches!(p, Part::Text { text, .. } if !trim(text).is_empty());
                if message.parts.iter().any(says) {
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
                        add_call(&mut digest, name, arguments, result_of(messages, at, id));
                    }
                }
            }
            _ => {
                digest.messages += 1;
                digest.tokens += tokens;
            }
        }
        for part in &message.parts {
            if let Part::ToolResult {
                content, is_error, ..
            } = part
            {
                let text = parts_text(content);
                if let Some(line) = error_line_in(&text, *is_error) {
                    digest.errors.push(clip_cow(sub(&text, line), LINE_CHARS));
                }
            }
        }
    }
    if let Some(message) = last_state {
        digest.last_state = Some(Cow::Owned(clip(message.text().trim(), STATE_CHARS)));
    }
    keep_first(&mut digest.requests);
    keep_first(&mut digest.errors);
    group_files(&mut digest);
    digest
}

/// The text of call `id`'s result, and whether it is an error: looked for in the messages after
/// `messages[at]`, through the next user turn (results follow their call, at most a few notes
/// between them).
fn result_of<'a>(messages: &'a [Message], at: usize, id: &str) -> Option<(Cow<'a, str>, bool)> {
    for message in messages.iter().skip(at + 1).take(RESULT_LOOKAHEAD) {
        for part in &message.parts {
            if let Part::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } = part
            {
                if call_id == id {
                    return Some((parts_text(content), *is_error));
                }
            }
        }
        if crate::units::is_user_turn(message) {
            break;
        }
    }
    None
}

/// Drops the repeats of `texts`, each text keeping its first place.
fn keep_first(texts: &mut Vec<Cow<'_, str>>) {
    if texts.len() < 2 {
        return;
    }
    // Looked up, never iterated: the order is the list's.
    let mut seen: HashSet<&str, BuildHasherDefault<Fnv>> = HashSet::default();
    let keep: Vec<bool> = texts.iter().map(|t| seen.insert(t.as_ref())).collect();
    let mut flags = keep.into_iter();
    texts.retain(|_| flags.next().unwrap_or(true));
}

/// FNV-1a, a quick hash for the short texts a digest looks up (never iterated, so its order
/// never shows).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Sorts the files named into their sections: each file once, by path, in the first section
/// that has it (edited before read), with how many times it was touched that way.
fn group_files(digest: &mut Digest<'_>) {
    // Sorted by path, then touch; each path's first 16 bytes, as a number, settle most
    // comparisons without comparing the strings.
    let mut uses: Vec<(u128, Cow<'_, str>, Touch, usize)> = std::mem::take(&mut digest.uses)
        .into_iter()
        .map(|(path, touch, n)| {
            let mut prefix = [0; 16];
            let len = path.len().min(16);
            prefix[..len].copy_from_slice(&path.as_bytes()[..len]);
            (u128::from_be_bytes(prefix), path, touch, n)
        })
        .collect();
    uses.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| a.1.cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    let mut uses = uses
        .into_iter()
        .map(|(_, path, touch, n)| (path, touch, n))
        .peekable();
    while let Some((path, touch, mut times)) = uses.next() {
        while let Some((_, other, n)) = uses.next_if(|(p, _, _)| *p == path) {
            if other == touch {
                times += n;
            }
        }
        digest.files[touch as usize].push((path, times));
    }
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

/// `part`, a slice of `whole`, borrowed for as long as `whole` borrows (copied when `whole` is
/// owned, or when `part` is not a slice of it).
fn sub<'a>(whole: &Cow<'a, str>, part: &str) -> Cow<'a, str> {
    if let Cow::Borrowed(text) = whole {
        let start = part.as_ptr().addr().wrapping_sub(text.as_ptr().addr());
        let slice = text
            .get(start..start.saturating_add(part.len()))
            .filter(|s| s.as_ptr() == part.as_ptr());
        if let Some(slice) = slice {
            return Cow::Borrowed(slice);
        }
    }
    Cow::Owned(part.to_string())
}

/// How far into a line the words that tell an error or an exit status are looked for.
const HEAD_BYTES: usize = 300;

/// Words (lowercase ASCII, four bytes or more) looked for near the start of a line, with a
/// filter built at compile time: a bit per hash of each word's first four bytes. A line is
/// passed over four bytes at a place, five places per load of eight, and a place is looked at
/// further only when its bytes' hash is a word's (about one place in four hundred by chance).
struct Needles {
    words: &'static [&'static str],
    /// A lowercase letter every word holds, when one is rare in text: a line without it, in
    /// either case, is passed over by a search for it alone.
    anchor: Option<u8>,
    /// A bit per [`window_hash`] of some word's first four bytes.
    starts: [u64; WINDOW_HASHES / 64],
}

/// Hashes of four-byte windows the filter tells apart.
const WINDOW_HASHES: usize = 1 << WINDOW_HASH_BITS;
const WINDOW_HASH_BITS: u32 = 12;

/// The hash of four bytes (little-endian) with bit 5 of each set: setting it lowercases an
/// ASCII letter, so the hash ignores ASCII case (other bytes may collide, which the filter
/// allows: a place it passes is checked exactly).
const fn window_hash(window: u32) -> usize {
    ((window | 0x2020_2020).wrapping_mul(0x9E37_79B1) >> (32 - WINDOW_HASH_BITS)) as usize
}

impl Needles {
    const fn new(words: &'static [&'static str], anchor: Option<u8>) -> Self {
        let mut starts = [0; WINDOW_HASHES / 64];
        let mut i = 0;
        while i < words.len() {
            let bytes = words[i].as_bytes();
            assert!(bytes.len() >= 4, "words are four bytes or more");
            if let Some(anchor) = anchor {
                let mut at = 0;
                while at < bytes.len() && bytes[at] != anchor {
                    at += 1;
                }
                assert!(at < bytes.len(), "every word holds the anchor");
            }
            let hash = window_hash(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
            starts[hash / 64] |= 1 << (hash % 64);
            i += 1;
        }
        Self {
            words,
            anchor,
            starts,
        }
    }

    /// Whether some word may start with the four bytes of `window`.
    fn may_start(&self, window: u32) -> bool {
        let hash = window_hash(window);
        self.starts[hash / 64] & (1 << (hash % 64)) != 0
    }

    /// Whether one of the words starts at `at` in `head`, ignoring ASCII case.
    fn starts_at(&self, head: &[u8], at: usize) -> bool {
        self.words.iter().any(|word| {
            head[at..]
                .get(..word.len())
                .is_some_and(|place| place.eq_ignore_ascii_case(word.as_bytes()))
        })
    }
}

/// The words of an exit-status line.
const EXIT_WORDS: Needles = Needles::new(&["exit code", "exit status", "exited with"], Some(b'x'));

/// The words of an error report.
const ERROR_WORDS: Needles = Needles::new(
    &[
        "error:",
        "error[",
        "traceback (most recent call last)",
        "exception:",
        "fatal:",
        "panicked at",
        "command not found",
        "no such file or directory",
        "permission denied",
    ],
    None,
);

/// Whether the first [`HEAD_BYTES`] bytes of `line` hold one of `needles`, ignoring ASCII
/// case: one pass, no copy, no searcher built per needle.
fn head_has(line: &str, needles: &Needles) -> bool {
    let head = &line.as_bytes()[..line.len().min(HEAD_BYTES)];
    if let Some(anchor) = needles.anchor
        && memchr::memchr2(anchor, anchor.to_ascii_uppercase(), head).is_none()
    {
        return false;
    }
    let found = |window: u32, at: usize| needles.may_start(window) && needles.starts_at(head, at);
    // Five windows of four bytes per load of eight.
    let mut at = 0;
    while let Some(bytes) = head.get(at..at + 8) {
        let word = u64::from_le_bytes(bytes.try_into().expect("a slice of eight bytes"));
        // The low four bytes of the word shifted by `k` bytes: the window at `at + k`.
        let window = |k: usize| {
            let [a, b, c, d, ..] = (word >> (8 * k)).to_le_bytes();
            u32::from_le_bytes([a, b, c, d])
        };
        if (0..5).any(|k| found(window(k), at + k)) {
            return true;
        }
        at += 5;
    }
    (at..head.len().saturating_sub(3)).any(|at| {
        let bytes = [head[at], head[at + 1], head[at + 2], head[at + 3]];
        found(u32::from_le_bytes(bytes), at)
    })
}

/// The lines of a text that are not blank, trimmed: `text.lines().map(trim)` less the empty
/// ones, from either end, each found with one search for its line break.
struct NonBlankLines<'a>(&'a str);

impl<'a> Iterator for NonBlankLines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        while !self.0.is_empty() {
            let end = memchr::memchr(b'\n', self.0.as_bytes());
            let (line, rest) = match end {
                Some(end) => (&self.0[..end], &self.0[end + 1..]),
                None => (self.0, ""),
            };
            self.0 = rest;
            let line = trim(line);
            if !line.is_empty() {
                return Some(line);
            }
        }
        None
    }
}

impl DoubleEndedIterator for NonBlankLines<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        while !self.0.is_empty() {
            // A line break at the very end closes the last line: it starts none after it.
            let body = self.0.strip_suffix('\n').unwrap_or(self.0);
            let start = memchr::memrchr(b'\n', body.as_bytes()).map_or(0, |at| at + 1);
            let line = trim(&body[start..]);
            self.0 = &self.0[..start];
            if !line.is_empty() {
                return Some(line);
            }
        }
        None
    }
}

/// `str::trim`, quicker on ASCII edges (most lines).
fn trim(line: &str) -> &str {
    let trimmed = line.trim_ascii();
    let edges = [trimmed.as_bytes().first(), trimmed.as_bytes().last()];
    if edges.into_iter().flatten().all(u8::is_ascii) {
        trimmed
    } else {
        trimmed.trim()
    }
}

/// Whether `line` starts with `prefix` (lowercase ASCII), ignoring ASCII case.
fn starts_with_ignore_case(line: &str, prefix: &str) -> bool {
    line.len() >= prefix.len()
        && line.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// Adds one tool call's files and command to the digest.
fn add_call<'a>(
    digest: &mut Digest<'a>,
    name: &'a str,
    arguments: &'a Value,
    result: Option<(Cow<'a, str>, bool)>,
) {
    let parsed = arguments_value(arguments);
    let command = command_of(parsed.as_ref());
    let touch = if let Some(&(_, touch)) = digest.touches.iter().find(|(n, _)| *n == name) {
        touch
    } else {
        let touch = Touch::of_tool(name);
        digest.touches.push((name, touch));
        touch
    };
    paths_of(
        touch,
        arguments,
        parsed.as_ref(),
        command.as_ref(),
        &mut digest.uses,
    );
    if let Some(command) = command {
        let outcome = result.and_then(|(text, is_error)| {
            outcome_in(&text, is_error).map(|line| clip_cow(sub(&text, line), LINE_CHARS))
        });
        digest.commands.push(Command {
            text: command,
            outcome,
            folded: false,
        });
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

impl<'a> Args<'a> {
    /// The value of the first of `keys` present.
    fn get(&self, keys: &[&str]) -> Option<&Arg<'a>> {
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
    let command = command_of(parsed.as_ref());
    let mut out = Vec::new();
    paths_of(
        Touch::of_tool(name),
        arguments,
        parsed.as_ref(),
        command.as_ref(),
        &mut out,
    );
    out.into_iter()
        .map(|(path, touch, _)| (touch, path.into_owned()))
        .collect()
}

/// Adds to `out` the paths of a call, each once per mention, with the tool's touch known and
/// the arguments and command already read.
fn paths_of<'a>(
    touch: Touch,
    arguments: &'a Value,
    parsed: Option<&Args<'a>>,
    command: Option<&Cow<'a, str>>,
    out: &mut Vec<(Cow<'a, str>, Touch, usize)>,
) {
    if let Some(args) = parsed {
        for (key, value) in &args.entries {
            let path_key = is_path_key(key);
            let mut take = |s: &Cow<'a, str>| {
                if path_key && !s.trim().is_empty() && !s.contains('\n') {
                    out.push((sub(s, s.trim()), touch, 1));
                }
                patch_paths(s, out);
            };
            match value {
                Arg::Text(s) => take(s),
                Arg::List(items) => items.iter().for_each(take),
                Arg::Other => {}
            }
        }
    } else if let Value::String(raw) = arguments {
        // A freeform tool (Codex `apply_patch`) passes its input as a bare string.
        patch_paths(&Cow::Borrowed(raw.as_str()), out);
    }
    if let Some(command) = command {
        for word in command.split_whitespace().filter_map(path_word) {
            out.push((sub(command, word), Touch::Command, 1));
        }
    }
}

/// The files of an `apply_patch` patch: `*** Update File: path` and the like.
// The `Cow` (not `&str`) tells whether the paths may borrow from the span.
#[allow(clippy::ptr_arg)]
fn patch_paths<'a>(text: &Cow<'a, str>, out: &mut Vec<(Cow<'a, str>, Touch, usize)>) {
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
            out.push((sub(text, path), touch, 1));
        }
    }
}

/// The shell command a call runs, if it runs one: a `command`, `cmd` or `script` argument (a
/// string, or an argv array whose `sh -c`/`bash -lc` wrapper is dropped).
fn command_of<'a>(parsed: Option<&Args<'a>>) -> Option<Cow<'a, str>> {
    match parsed?.get(&["command", "cmd", "script"])? {
        Arg::Text(s) if !s.trim().is_empty() => Some(s.clone()),
        Arg::List(items) => {
            let words: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
            let shell = words.len() == 3
                && words[1].starts_with('-')
                && words[1].ends_with('c')
                && words[0].ends_with("sh");
            if shell {
                return (!words[2].trim().is_empty()).then(|| items[2].clone());
            }
            let command = words.join(" ");
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
fn outcome_in(text: &str, is_error: bool) -> Option<&str> {
    let lines = || NonBlankLines(text);
    for line in lines().take(5).chain(lines().rev().take(5)) {
        if head_has(line, &EXIT_WORDS) || starts_with_ignore_case(line, "exit:") {
            return Some(line);
        }
    }
    error_line_in(text, is_error)
}

/// The first line of a result flagged as an error, or the first of its first lines that says
/// it is one, clipped.
pub(crate) fn error_line(text: &str, is_error: bool) -> Option<String> {
    error_line_in(text, is_error).map(|line| clip(line, LINE_CHARS))
}

/// [`error_line`], unclipped and borrowed from `text`.
fn error_line_in(text: &str, is_error: bool) -> Option<&str> {
    let mut lines = NonBlankLines(text);
    if is_error {
        return lines.next();
    }
    lines.take(3).find(|line| says_error(line))
}

/// Whether a line reads as an error report.
fn says_error(line: &str) -> bool {
    head_has(line, &ERROR_WORDS)
        || starts_with_ignore_case(line, "error")
        || starts_with_ignore_case(line, "failed")
}

/// Folds an earlier marker into the digest: its counts, and the items of its digest.
fn fold(digest: &mut Digest<'_>, text: &str) {
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
            digest.last_state = Some(Cow::Owned(state.to_string()));
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
                    digest.requests.push(Cow::Owned(request.to_string()));
                } else if let Some(last) = digest.requests.last_mut() {
                    let last = last.to_mut();
                    last.push('\n');
                    last.push_str(line);
                }
            }
            5 => {
                if let Some(command) = line.strip_prefix("$ ") {
                    digest.commands.push(Command {
                        text: Cow::Owned(command.to_string()),
                        outcome: None,
                        folded: true,
                    });
                }
            }
            6 => {
                if let Some(error) = line.strip_prefix("! ") {
                    digest.errors.push(Cow::Owned(error.to_string()));
                }
            }
            _ => {}
        }
    }
}

/// Adds a folded files line (`a ×2, b, +3 more`) to files section `touch`.
fn fold_files(digest: &mut Digest<'_>, touch: usize, rest: &str) {
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
        digest
            .uses
            .push((Cow::Owned(path.to_string()), Touch::ALL[touch], times));
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

/// The items of one section, made into text only when counted or rendered.
#[derive(Debug, Clone, Copy)]
enum Items<'d> {
    /// Removed requests: verbatim (a long one by its head and tail), or, when `short`, each
    /// by its first [`REQUEST_SHORT`] characters.
    Requests {
        texts: &'d [Cow<'d, str>],
        short: bool,
    },
    /// Files, with how many times each was touched.
    Files(&'d [(Cow<'d, str>, usize)]),
    Commands(&'d [Command<'d>]),
    /// Lines written as they are.
    Lines(&'d [Cow<'d, str>]),
}

impl<'d> Items<'d> {
    fn len(&self) -> usize {
        match self {
            Self::Requests { texts, .. } | Self::Lines(texts) => texts.len(),
            Self::Files(files) => files.len(),
            Self::Commands(commands) => commands.len(),
        }
    }

    fn get(&self, i: usize) -> Cow<'d, str> {
        match *self {
            Self::Requests {
                texts,
                short: false,
            } => clip_request(&texts[i]),
            Self::Requests { texts, short: true } => {
                clip_cow(Cow::Borrowed(&texts[i]), REQUEST_SHORT)
            }
            Self::Files(files) => match &files[i] {
                (path, 1) => Cow::Borrowed(path),
                (path, n) => Cow::Owned(format!("{path} ×{n}")),
            },
            Self::Commands(commands) => commands[i].line(),
            Self::Lines(lines) => Cow::Borrowed(&lines[i]),
        }
    }
}

/// One section of a rendered digest.
struct Section<'d> {
    title: &'static str,
    /// Items, oldest first.
    items: Items<'d>,
    /// Items an earlier marker had already cut.
    more: usize,
    /// Items written on the heading line, comma-separated (files), rather than one per line.
    inline: bool,
    /// Prefix of each item on its own line.
    bullet: &'static str,
}

impl Section<'_> {
    fn total(&self) -> usize {
        self.items.len() + self.more
    }
}

/// The title of the last section, written as `Last state: …` with no count.
const LAST_STATE: &str = "Last state";

/// The digest's sections in priority order.
fn sections<'d>(digest: &'d Digest<'_>) -> Vec<Section<'d>> {
    let mut sections = vec![Section {
        title: "Requests",
        items: Items::Requests {
            texts: &digest.requests,
            short: false,
        },
        more: digest.more[0],
        inline: false,
        bullet: "» ",
    }];
    for touch in Touch::ALL {
        sections.push(Section {
            title: touch.title(),
            items: Items::Files(&digest.files[touch as usize]),
            more: digest.more[touch as usize + 1],
            inline: true,
            bullet: "",
        });
    }
    sections.push(Section {
        title: "Commands",
        items: Items::Commands(&digest.commands),
        more: digest.more[5],
        inline: false,
        bullet: "$ ",
    });
    sections.push(Section {
        title: "Errors",
        items: Items::Lines(&digest.errors),
        more: digest.more[6],
        inline: false,
        bullet: "! ",
    });
    sections.push(Section {
        title: LAST_STATE,
        items: Items::Lines(digest.last_state.as_slice()),
        more: 0,
        inline: true,
        bullet: "",
    });
    sections
}

/// Renders sections, keeping the first `kept[i]` items of section `i`; a section with
/// `shown[i]` false is left out altogether.
fn render(sections: &[Section<'_>], kept: &[usize], shown: &[bool]) -> String {
    let mut out = String::new();
    for ((section, &kept), _) in sections.iter().zip(kept).zip(shown).filter(|(_, s)| **s) {
        let more = section.total() - kept;
        if section.title == LAST_STATE {
            if kept > 0 {
                out.push_str("Last state: ");
                out.push_str(&section.items.get(0));
                out.push('\n');
            }
            continue;
        }
        let _ = write!(out, "{} ({}):", section.title, thousands(section.total()));
        if section.inline {
            for i in 0..kept {
                out.push_str(if i == 0 { " " } else { ", " });
                out.push_str(&section.items.get(i));
            }
            if more > 0 {
                let _ = write!(out, "{}+{more} more", if kept == 0 { " " } else { ", " });
            }
            out.push('\n');
        } else {
            out.push('\n');
            for i in 0..kept {
                out.push_str(section.bullet);
                out.push_str(&section.items.get(i));
                out.push('\n');
            }
            if more > 0 {
                let _ = writeln!(out, "+{more} more");
            }
        }
    }
    // The closing newline only: a request's own trailing spaces are part of its verbatim text.
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

/// Renders the digest within `cap`, trimming from the bottom up: the digest is one sequence —
/// each section's heading, then its items, sections in priority order — and the longest
/// beginning of it that fits is kept. The requests come first, within `cap.total`: verbatim
/// when they all fit so, else each by its first [`REQUEST_SHORT`] characters; the sections
/// after them share `cap.rest` of what is left. The section cut in the middle says how many
/// items it left out; the sections below it are named, with their counts, on one closing line.
/// Items are counted one by one, and only until the cap is reached, so the cost does not grow
/// with the span. Empty when not even the closing line fits. Also returns how many requests,
/// and how many files, it left out.
fn render_capped(
    digest: &Digest<'_>,
    cap: DigestCap,
    counter: &dyn TokenCounter,
) -> (String, [usize; 2]) {
    let mut sections = sections(digest);
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
    let mut requests_used = 0;
    for s in (0..sections.len()).filter(|&s| present[s]) {
        let limit = if s == 0 {
            cap.total
        } else {
            cap.total.min(requests_used + cap.rest)
        };
        let room = limit.saturating_sub(closing_from[s + 1]);
        let section = &sections[s];
        let total = thousands(section.total());
        let heading = format!("{} ({total}): +{total} more\n", section.title);
        let cost = counter.count_text(&heading) + 1;
        if used + cost > room {
            break;
        }
        shown[s] = true;
        let (mut n, mut after) = fill(section, used + cost, room, counter);
        if n < section.items.len() {
            if let Items::Requests { texts, .. } = section.items {
                // Not all verbatim: each by its head, so that as many as can be are named.
                sections[s].items = Items::Requests { texts, short: true };
                (n, after) = fill(&sections[s], used + cost, room, counter);
            }
        }
        kept[s] = n;
        used = after;
        if s == 0 {
            requests_used = used;
        }
        if n < sections[s].items.len() {
            break;
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
        if tokens <= cap.total {
            let unnamed = |s: usize| sections[s].items.len() - if shown[s] { kept[s] } else { 0 };
            return (text, [unnamed(0), (1..=4).map(unnamed).sum()]);
        }
        // The per-item counts fell short: give up the lowest kept items, about as many bytes as
        // the excess (4 bytes a token, the rough average), else the lowest section.
        let mut excess = (tokens - cap.total) * 4;
        while excess > 0 {
            if let Some(s) = kept.iter().rposition(|k| *k > 0) {
                kept[s] -= 1;
                excess = excess.saturating_sub(sections[s].items.get(kept[s]).len().max(1));
            } else if let Some(s) = shown.iter().rposition(|s| *s) {
                shown[s] = false;
                excess = 0;
            } else {
                let files = digest.files.iter().map(Vec::len).sum();
                return (String::new(), [digest.requests.len(), files]);
            }
        }
    }
}

/// How many of a section's items fit from `used` tokens up to `room`, each counted with its
/// line break and bullet, and the tokens used then.
fn fill(
    section: &Section<'_>,
    mut used: usize,
    room: usize,
    counter: &dyn TokenCounter,
) -> (usize, usize) {
    let mut n = 0;
    while n < section.items.len() {
        let cost = counter.count_text(&section.items.get(n)) + 2;
        if used + cost > room {
            break;
        }
        used += cost;
        n += 1;
    }
    (n, used)
}

/// The closing line naming the sections left out, with their counts; empty when none is.
fn left_out(sections: &[Section<'_>], which: &[bool]) -> String {
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
fn clip_request(text: &str) -> Cow<'_, str> {
    if text.len() <= REQUEST_CHARS {
        return Cow::Borrowed(text);
    }
    let chars = text.chars().count();
    if chars <= REQUEST_CHARS {
        return Cow::Borrowed(text);
    }
    let head: String = text.chars().take(REQUEST_HEAD).collect();
    let tail_len = REQUEST_CHARS - REQUEST_HEAD - 3;
    let tail: String = text.chars().skip(chars - tail_len).collect();
    Cow::Owned(format!("{head} … {tail}"))
}

/// The first `max` characters of `text`, with `…` when cut.
fn clip(text: &str, max: usize) -> String {
    clip_cow(Cow::Borrowed(text), max).into_owned()
}

/// [`clip`], borrowing what needs no cut.
fn clip_cow(text: Cow<'_, str>, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return text;
    }
    match text.char_indices().nth(max) {
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
        None => text,
    }
}

/// Newlines and runs of blanks become single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The placeholder that replaces a cleared tool result's content: the tool, the size, and the
/// first line when it is an error or an exit status. It starts with [`cleared_head`].
pub(crate) fn cleared_output(tool: &str, tokens: usize, content: &str, is_error: bool) -> String {
    let mut placeholder = cleared_head(tool);
    placeholder.push_str(&thousands(tokens));
    placeholder.push_str(" tokens)");
    if let Some(line) = outcome_in(content, is_error) {
        placeholder.push_str(": ");
        placeholder.push_str(&clip_cow(Cow::Borrowed(line), LINE_CHARS));
    }
    placeholder.push(']');
    placeholder
}

/// How every placeholder of a cleared output starts, before the tool's name.
const CLEARED_START: &str = "[ctxcompact: output of ";

/// The start of every placeholder of `tool`'s outputs: it ends with punctuation just before the
/// size, a digit, where the BPE tokenizers always end a piece.
pub(crate) fn cleared_head(tool: &str) -> String {
    // Room for the size and the closing bracket, so that the placeholder is allocated once.
    let mut head = String::with_capacity(CLEARED_START.len() + tool.len() + 32);
    head.push_str(CLEARED_START);
    head.push_str(tool);
    head.push_str(" cleared (");
    head
}

/// Whether `text` is the placeholder of a cleared output.
pub(crate) fn is_cleared_output(text: &str) -> bool {
    text.starts_with(CLEARED_START)
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

    /// The digest marker of `messages` under a cap of `cap` tokens, counted in characters.
    fn digest(messages: &[Message], tokens: &[Option<usize>], cap: usize) -> String {
        build(
            MarkerMode::Digest,
            messages,
            tokens,
            DigestCap::fixed(cap),
            &CharEstimate,
        )
        .unwrap()
        .0
    }

    #[test]
    fn the_digest_keeps_requests_files_commands_errors_and_state() {
        let messages = span();
        let tokens = vec![Some(10); messages.len()];
        let text = digest(&messages, &tokens, 500);
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
    fn a_request_ending_the_digest_keeps_its_trailing_spaces() {
        let messages = parse_value(
            json!([
                {"role": "user", "content": "Thanks, that is all I needed. "},
                {"role": "assistant", "content": "Glad to help."}
            ]),
            None,
        )
        .unwrap()
        .messages;
        let text = digest(&messages[..1], &[Some(10)], 500);
        assert!(
            text.contains("» Thanks, that is all I needed. \n[ctxcompact: end of digest]"),
            "{text}"
        );
    }

    #[test]
    fn the_cap_trims_from_the_bottom_with_counts() {
        let messages = span();
        let tokens = vec![Some(10); messages.len()];
        let full = digest(&messages, &tokens, 500);
        let small = digest(&messages, &tokens, 60);
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
        let old = digest(&messages, &tokens, 500);
        let mut again = vec![Message::new_text(Role::User, old)];
        again.push(Message::new_text(Role::Assistant, "Next step."));
        let text = digest(&again, &[Some(99), Some(5)], 500);
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

    #[test]
    fn evidence_words_are_found_in_any_case_within_the_head_of_a_line() {
        assert!(head_has("Process EXITED WITH code 2", &EXIT_WORDS));
        assert!(head_has("exit code", &EXIT_WORDS));
        assert!(!head_has("exit cod", &EXIT_WORDS));
        assert!(!head_has("the exit was clean", &EXIT_WORDS));
        assert!(head_has("  at line 3: Error: bad", &ERROR_WORDS));
        assert!(head_has("bash: cargo: COMMAND NOT FOUND", &ERROR_WORDS));
        let late = format!("{}error: late", "x".repeat(HEAD_BYTES - 6));
        assert!(head_has(&late, &ERROR_WORDS));
        let too_late = format!("{}error: late", "x".repeat(HEAD_BYTES - 5));
        assert!(!head_has(&too_late, &ERROR_WORDS));
        assert!(!head_has("", &ERROR_WORDS) && !head_has("e", &ERROR_WORDS));
        // Against a plain search at every place, on lines built from pieces of the words, their
        // case changed, and bytes that lowercase like letters without being ones.
        let pieces = [
            "e",
            "E",
            "x",
            "IT",
            "exit code",
            "Exit Status",
            "exited with",
            "error:",
            "ERROR[",
            "fatal:",
            "no such file or directory",
            "Permission denied",
            " ",
            "\u{e9}",
            "\u{c5}",
            "\u{5}",
            "@",
            "%",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            let mut line = String::new();
            while line.len() < 2 * HEAD_BYTES && seed % 41 != 0 {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                line.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            for needles in [&EXIT_WORDS, &ERROR_WORDS] {
                let head = &line.as_bytes()[..line.len().min(HEAD_BYTES)];
                let plain = (0..head.len()).any(|at| {
                    needles.words.iter().any(|word| {
                        head[at..]
                            .get(..word.len())
                            .is_some_and(|place| place.eq_ignore_ascii_case(word.as_bytes()))
                    })
                });
                assert_eq!(head_has(&line, needles), plain, "{line:?}");
            }
        }
        assert_eq!(
            outcome_in("ok\nok\nexit status 1\n", false),
            Some("exit status 1")
        );
        assert_eq!(
            outcome_in("Traceback (most recent call last):\n  x", false),
            Some("Traceback (most recent call last):")
        );
    }

    proptest::proptest! {
        /// Non-blank lines, from the front and from the back, are the trimmed non-empty lines
        /// of `str::lines`, on text made of line breaks, carriage returns, blanks (ASCII and
        /// not) and words.
        #[test]
        fn non_blank_lines_are_the_trimmed_lines_that_are_not_empty(
            text in "([\n\r \t]|\u{3000}|\u{a0}|ab|\u{e9}x){0,40}"
        ) {
            let lines: Vec<&str> = text.lines().map(trim).filter(|l| !l.is_empty()).collect();
            let forward: Vec<&str> = NonBlankLines(&text).collect();
            let mut backward: Vec<&str> = NonBlankLines(&text).rev().collect();
            backward.reverse();
            proptest::prop_assert_eq!(&forward, &lines);
            proptest::prop_assert_eq!(&backward, &lines);
        }
    }
}
