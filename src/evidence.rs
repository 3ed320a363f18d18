//! Evidence found in tool calls and results: the paths a call touches, the shell command it runs,
//! and the lines of a result that tell an outcome (an exit status, an error).
//!
//! The digest lists this evidence for a removed span, and a cleared output's placeholder keeps
//! its outcome line. Searches are single passes without copies: the words that tell an error or an
//! exit status are found near the start of each line through a filter built at compile time, and
//! tool-call arguments are read straight from their JSON, borrowing their text.

use std::borrow::Cow;

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::note::{LINE_CHARS, clip};

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
    pub(crate) const ALL: [Self; 4] = [Self::Edited, Self::Created, Self::Read, Self::Command];

    /// The heading of the digest's section of files touched this way.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Self::Read => "Files read",
            Self::Edited => "Files edited",
            Self::Created => "Files created",
            Self::Command => "Files in commands",
        }
    }

    /// The touch a tool's name implies.
    pub(crate) fn of_tool(name: &str) -> Self {
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

/// `part`, a slice of `whole`, borrowed for as long as `whole` borrows (copied when `whole` is
/// owned, or when `part` is not a slice of it).
pub(crate) fn sub<'a>(whole: &Cow<'a, str>, part: &str) -> Cow<'a, str> {
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
/// filter built at compile time: a bit per hash of each four-byte window a word holds at its
/// first [`Needles::stride`] places. A line is looked at every `stride` bytes only, since a word
/// starting anywhere holds one of those windows at one of those places, and a place is looked at
/// further only when its window's hash is a word's (a few places in a thousand by chance); then
/// only the words whose window it is, where they would start, are compared.
struct Needles {
    words: &'static [&'static str],
    /// A lowercase letter every word holds, when one is rare in text: a line without it, in
    /// either case, is passed over by a search for it alone.
    anchor: Option<u8>,
    /// The shortest word's length less three: how far apart the places looked at are.
    stride: usize,
    /// A bit per [`window_hash`] of each word's windows at its first `stride` places.
    windows: [u64; WINDOW_HASHES / 64],
    /// Each of those windows with bit 5 of each byte set ([`window_hash`]), its word and its
    /// place in it.
    places: [Place; MAX_PLACES],
    /// By window hash, the first of the places whose window has it, plus one (0: none); each
    /// place then names the next with the same hash likewise ([`Place::next`]).
    first: [u8; WINDOW_HASHES],
}

/// A word's window at a place ([`Needles::places`]).
#[derive(Clone, Copy)]
struct Place {
    window: u32,
    word: usize,
    at: usize,
    /// The next place whose window has the same hash, plus one (0: none).
    next: u8,
}

/// The most windows a [`Needles`] holds (fewer than 256: each is named by a byte).
const MAX_PLACES: usize = 32;

/// Four bytes with bit 5 of each set: ASCII letters lowercased (other bytes may then collide,
/// which a filter allows).
const fn folded(window: u32) -> u32 {
    window | 0x2020_2020
}

/// Hashes of four-byte windows the filter tells apart.
const WINDOW_HASHES: usize = 1 << WINDOW_HASH_BITS;
const WINDOW_HASH_BITS: u32 = 12;

/// The hash of four bytes (little-endian) with bit 5 of each set: setting it lowercases an
/// ASCII letter, so the hash ignores ASCII case (other bytes may collide, which the filter
/// allows: a place it passes is checked exactly).
const fn window_hash(window: u32) -> usize {
    (folded(window).wrapping_mul(0x9E37_79B1) >> (32 - WINDOW_HASH_BITS)) as usize
}

impl Needles {
    // A place's number fits a byte: there are `MAX_PLACES` at most.
    #[allow(clippy::cast_possible_truncation)]
    const fn new(words: &'static [&'static str], anchor: Option<u8>) -> Self {
        let mut shortest = usize::MAX;
        let mut i = 0;
        while i < words.len() {
            let bytes = words[i].as_bytes();
            assert!(bytes.len() >= 4, "words are four bytes or more");
            if bytes.len() < shortest {
                shortest = bytes.len();
            }
            if let Some(anchor) = anchor {
                let mut at = 0;
                while at < bytes.len() && bytes[at] != anchor {
                    at += 1;
                }
                assert!(at < bytes.len(), "every word holds the anchor");
            }
            i += 1;
        }
        let stride = shortest - 3;
        let mut windows = [0; WINDOW_HASHES / 64];
        let mut places = [Place {
            window: 0,
            word: 0,
            at: 0,
            next: 0,
        }; MAX_PLACES];
        let mut first = [0; WINDOW_HASHES];
        let mut places_len = 0;
        let mut i = 0;
        while i < words.len() {
            let bytes = words[i].as_bytes();
            let mut at = 0;
            while at < stride {
                let window = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
                let window = u32::from_le_bytes(window);
                let hash = window_hash(window);
                windows[hash / 64] |= 1 << (hash % 64);
                assert!(places_len < MAX_PLACES, "at most MAX_PLACES windows");
                places[places_len] = Place {
                    window: folded(window),
                    word: i,
                    at,
                    next: first[hash],
                };
                places_len += 1;
                first[hash] = places_len as u8;
                at += 1;
            }
            i += 1;
        }
        Self {
            words,
            anchor,
            stride,
            windows,
            places,
            first,
        }
    }

    /// Whether some word may hold the four bytes of `window` at one of its first places.
    fn may_hold(&self, window: u32) -> bool {
        let hash = window_hash(window);
        self.windows[hash / 64] & (1 << (hash % 64)) != 0
    }

    /// Whether a word holding `window` (the four bytes at `at` in `head`) at one of its first
    /// places starts there, ignoring ASCII case: bytes equal but for case are equal once
    /// [`folded`], so only the words with that folded window are compared, among the places
    /// whose window has its hash. Kept out of [`head_has`]'s loop, which passes it a few places
    /// in a thousand: inlined, its registers would crowd the loop's.
    #[inline(never)]
    fn holds_at(&self, head: &[u8], at: usize, window: u32) -> bool {
        let mut next = self.first[window_hash(window)];
        let window = folded(window);
        while let Some(place) = usize::from(next).checked_sub(1).map(|i| &self.places[i]) {
            let word = self.words[place.word].as_bytes();
            let starts = place.window == window
                && at >= place.at
                && head[at - place.at..]
                    .get(..word.len())
                    .is_some_and(|found| found.eq_ignore_ascii_case(word));
            if starts {
                return true;
            }
            next = place.next;
        }
        false
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
    // A word starting at `start` holds the window at the first place at or after `start`: that
    // place is less than `stride` bytes in, and the window ends within the word.
    let stride = needles.stride;
    let mut at = 0;
    while let Some(window) = head.get(at..at + 4) {
        let window = u32::from_le_bytes(window.try_into().expect("a slice of four bytes"));
        if needles.may_hold(window) && needles.holds_at(head, at, window) {
            return true;
        }
        at += stride;
    }
    false
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
pub(crate) fn trim(line: &str) -> &str {
    let trimmed = line.trim_ascii();
    let bytes = trimmed.as_bytes();
    if bytes.first().is_none_or(u8::is_ascii) && bytes.last().is_none_or(u8::is_ascii) {
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

/// A call's top-level arguments as far as the digest reads them: each key with its string, or
/// its list of strings; other values are only noted. Read straight from OpenAI's JSON-encoded
/// string, borrowing the text where it has no escapes (no JSON value tree is built).
pub(crate) struct Args<'a> {
    entries: Vec<(Cow<'a, str>, Arg<'a>)>,
}

/// One argument's value, as the digest reads it.
enum Arg<'a> {
    Text(Cow<'a, str>),
    List(Vec<Cow<'a, str>>),
    Other,
}

impl<'a> Args<'a> {
    /// Every string the arguments hold, a list's items included, in order.
    pub(crate) fn texts(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .flat_map(|(_, value)| match value {
                Arg::Text(text) => std::slice::from_ref(text),
                Arg::List(items) => items.as_slice(),
                Arg::Other => &[],
            })
            .map(AsRef::as_ref)
    }

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
pub(crate) fn arguments_value(arguments: &Value) -> Option<Args<'_>> {
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
#[cfg_attr(not(feature = "lab"), allow(dead_code))]
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
pub(crate) fn paths_of<'a>(
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
pub(crate) fn command_of<'a>(parsed: Option<&Args<'a>>) -> Option<Cow<'a, str>> {
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
pub(crate) fn path_word(word: &str) -> Option<&str> {
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

/// How many lines from each end of a result are looked at for an exit status.
const EXIT_LINES: usize = 5;

/// A command's outcome from its result: an exit-status line, or the first error line.
pub(crate) fn outcome_in(text: &str, is_error: bool) -> Option<&str> {
    // The first lines, kept for the error check; then the last lines not among them, from the
    // end.
    let mut lines = NonBlankLines(text);
    let (first, taken) = take_lines(&mut lines, NonBlankLines::next);
    let first = &first[..taken];
    let rest = lines.0;
    if let Some(line) = exit_line(&text[..text.len() - rest.len()], first, false) {
        return Some(line);
    }
    let (last, taken) = take_lines(&mut lines, NonBlankLines::next_back);
    if let Some(line) = exit_line(&rest[lines.0.len()..], &last[..taken], true) {
        return Some(line);
    }
    error_among(first.iter().copied(), is_error)
}

/// The first of `lines` (the trimmed lines of `region`, in order, or from the end when
/// `from_end`) that tells an exit status. Each of its words ([`EXIT_WORDS`]) and `exit:` hold
/// an `x`, which is no blank: only the lines holding the next `x` of the region are looked at.
fn exit_line<'a>(region: &'a str, lines: &[&'a str], from_end: bool) -> Option<&'a str> {
    let base = region.as_ptr().addr();
    // The part of the region after (or before) the lines looked at.
    let (mut from, mut to) = (0, region.len());
    let mut lines = lines.iter();
    loop {
        let rest = &region.as_bytes()[from..to];
        let found = if from_end {
            memchr::memrchr2(b'x', b'X', rest)
        } else {
            memchr::memchr2(b'x', b'X', rest)
        };
        let x = from + found?;
        let start = |line: &str| line.as_ptr().addr() - base;
        let line = lines.find(|line| (start(line)..start(line) + line.len()).contains(&x))?;
        if head_has(line, &EXIT_WORDS) || starts_with_ignore_case(line, "exit:") {
            return Some(line);
        }
        if from_end {
            to = start(line);
        } else {
            from = start(line) + line.len();
        }
    }
}

/// Up to [`EXIT_LINES`] lines taken by `step` from `lines`, and how many.
fn take_lines<'a>(
    lines: &mut NonBlankLines<'a>,
    step: impl Fn(&mut NonBlankLines<'a>) -> Option<&'a str>,
) -> ([&'a str; EXIT_LINES], usize) {
    let mut taken = [""; EXIT_LINES];
    let mut count = 0;
    while count < EXIT_LINES
        && let Some(line) = step(lines)
    {
        taken[count] = line;
        count += 1;
    }
    (taken, count)
}

/// The first line of a result flagged as an error, or the first of its first lines that says
/// it is one, clipped.
#[cfg_attr(not(feature = "lab"), allow(dead_code))]
pub(crate) fn error_line(text: &str, is_error: bool) -> Option<String> {
    error_line_in(text, is_error).map(|line| clip(line, LINE_CHARS))
}

/// [`error_line`], unclipped and borrowed from `text`.
pub(crate) fn error_line_in(text: &str, is_error: bool) -> Option<&str> {
    error_among(NonBlankLines(text), is_error)
}

/// [`error_line_in`] from a result's non-blank lines (its first three at least).
fn error_among<'a>(mut lines: impl Iterator<Item = &'a str>, is_error: bool) -> Option<&'a str> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_that_look_like_paths() {
        let words: Vec<&str> = "cd /repo && cat src/main.rs | grep -n foo.bar 1.5 --x=y README.md"
            .split_whitespace()
            .filter_map(path_word)
            .collect();
        assert_eq!(words, ["/repo", "src/main.rs", "foo.bar", "README.md"]);
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
            while line.len() < 2 * HEAD_BYTES && !seed.is_multiple_of(41) {
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
        /// The outcome is the first of the first five and then the last five non-blank lines
        /// that tells an exit status, else the error line among the first ones, whichever
        /// lines around them hold an `x`.
        #[test]
        fn the_outcome_is_the_first_exit_line_from_either_end_else_the_error_line(
            text in "(exit code 1|Exit: 2|xexited with 3|error: x|fatal: y|ok|index|X|\n|\n\n|\r\n|\u{3000}| ){0,40}",
            is_error in proptest::bool::ANY,
        ) {
            let lines: Vec<&str> = text.lines().map(trim).filter(|l| !l.is_empty()).collect();
            let says_exit = |line: &&&str| {
                head_has(line, &EXIT_WORDS) || starts_with_ignore_case(line, "exit:")
            };
            let exit = lines.iter().take(5).chain(lines.iter().rev().take(5)).find(says_exit);
            let expected = match exit {
                Some(line) => Some(*line),
                None if is_error => lines.first().copied(),
                None => lines.iter().take(3).copied().find(|line| says_error(line)),
            };
            proptest::prop_assert_eq!(outcome_in(&text, is_error), expected);
        }

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
