//! The digest of a removed span: what its removal marker says the span held.
//!
//! A removal marker stands at the place of its span and says how many messages and how many
//! tokens *of the input* it replaces ([`crate::note`] words it); it reads as history, so that a
//! kept old instruction is not taken for a new one. Its digest is extractive and deterministic,
//! built from the span only, in priority order: requests (verbatim up to [`REQUEST_CHARS`], all
//! shortened together before any is left out),
//! files (read, edited, created, named in commands), commands with their outcome, errors,
//! identifiers (user names, order numbers, hashes, URLs: [`crate::identifiers`]) and code
//! names, those a person or a call wrote first (at most [`IDENTIFIERS_PCT`]% of the sections'
//! cap), and the last assistant state ([`render`] writes
//! them within the cap). Harness text in user messages (a hook's output, a reminder) is read as
//! a tool's output is: its errors, identifiers and names. A cap trims the sections from the bottom up, leaving "+N more" counts;
//! an empty section is omitted. Re-compaction folds an earlier marker inside a span into the new
//! one, counts and digest alike. Markers count against the budget like any other text.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::account::MarkerMode;
use crate::classify::{self, Author};
use crate::conversation::{Message, Part, Role};
use serde_json::Value;

use crate::evidence::{
    Args, Touch, arguments_value, command_of, error_line_in, outcome_in, paths_of, sub, trim,
};
use crate::gist;
use crate::hash::FxBuild;
use crate::identifiers::{self, Counted, Tally};
use crate::note::{
    DIGEST_END, LINE_CHARS, Place, clip, clip_cow, header, is_cleared_output, marker_len, one_line,
    parse_header, tight_header,
};
use crate::tokens::TokenCounter;

mod render;
mod standing;

use render::Renderer;

/// A removed request is kept verbatim up to this many characters (the figure).
pub(crate) const REQUEST_CHARS: usize = 400;
/// Of a longer request, this many leading characters are kept (then ` … ` and the tail), so
/// that its first 200 characters always survive.
const REQUEST_HEAD: usize = 300;
/// When the removed requests do not all fit the digest verbatim, all of them are shortened
/// together, step by step, to their first this many characters (then `…`), until they all fit:
/// the first step keeps what the bench's verbatim recall reads (200), the last what a reader
/// needs to recognise a request (40, what its named recall reads). Only when not even the last
/// step fits them all are some left out, the oldest first.
pub(crate) const REQUEST_SHORT: [usize; 3] = [200, 80, 40];
/// The last assistant state is cut to this many characters.
const STATE_CHARS: usize = 400;
/// The default cap of the sections after the requests: at most this many tokens (the issue's
/// figure) …
pub(crate) const DIGEST_TOKENS: usize = 2000;
/// … and at most this share of the budget, in percent.
pub(crate) const DIGEST_BUDGET_PCT: usize = 10;
/// Under a window whose depth follows the agent's traffic, the sections after the requests
/// take at most this many tokens …
const LOOP_DIGEST_TOKENS: usize = 4000;
/// … and at most this share of the budget, in percent: each compaction of a loop folds the
/// last one's marker into its own, so its digest stands for all the history removed so far.
const LOOP_DIGEST_BUDGET_PCT: usize = 30;
/// The default cap of a whole digest, requests included, as a share of the budget in percent:
/// the removed requests come first and may take what the other sections leave of it.
pub(crate) const DIGEST_TOTAL_PCT: usize = 50;
/// The identifiers section takes at most this share of the cap of the sections after the
/// requests, in percent.
const IDENTIFIERS_PCT: usize = 50;
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

    /// This cap, within `tokens`.
    pub(crate) fn within(self, tokens: usize) -> Self {
        Self {
            total: self.total.min(tokens),
            rest: self.rest.min(tokens),
        }
    }

    /// The default for `budget`: the sections after the requests share the smaller of
    /// [`DIGEST_TOKENS`] and [`DIGEST_BUDGET_PCT`]% of the budget ([`LOOP_DIGEST_TOKENS`] and
    /// [`LOOP_DIGEST_BUDGET_PCT`]% in a loop: `in_loop`), and the whole digest, the requests
    /// first, at most [`DIGEST_TOTAL_PCT`]% of it. The requests' room thus grows with the
    /// budget, as the span a digest stands for does.
    pub(crate) fn default_for(budget: usize, in_loop: bool) -> Self {
        let rest = if in_loop {
            LOOP_DIGEST_TOKENS.min(percent(budget, LOOP_DIGEST_BUDGET_PCT))
        } else {
            DIGEST_TOKENS.min(percent(budget, DIGEST_BUDGET_PCT))
        };
        Self {
            total: rest.max(percent(budget, DIGEST_TOTAL_PCT)),
            rest,
        }
    }
}

/// `pct`% of `n`, rounded down, without overflow.
pub(crate) fn percent(n: usize, pct: usize) -> usize {
    n / 100 * pct + n % 100 * pct / 100
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
    /// The standing instructions of the removed requests, verbatim, in order as they are found;
    /// newest first, each once, at the end.
    standing: Vec<Cow<'a, str>>,
    /// Every file named, with how and how many times; sorted and grouped into `files` at the end.
    uses: Vec<(Cow<'a, str>, Touch, usize)>,
    /// Per touch, in [`Touch::ALL`] order: each file once, by path, with its count.
    files: [Vec<(Cow<'a, str>, usize)>; 4],
    /// How each tool name touches files, worked out once per name (few names: a list).
    touches: Vec<(&'a str, Touch)>,
    /// The identifiers of the span's requests, tool calls and results, as they are found.
    ids: Tally,
    /// The other names of its tool results (paths, code names: [`gist::for_each_name`]),
    /// named after every identifier, as room allows.
    names: Tally,
    /// Each identifier and name once (none that is a file named), without a count: the tokens
    /// a count takes name more of them. Those a person or a tool call wrote first, then those
    /// of tool outputs, each the latest seen first.
    identifiers: Vec<Cow<'a, str>>,
    commands: Vec<Command<'a>>,
    /// Error lines, clipped, in order (repeats dropped at the end).
    errors: Vec<Cow<'a, str>>,
    last_state: Option<Cow<'a, str>>,
    /// Items earlier markers had already cut, per section (requests, files…, commands, errors,
    /// identifiers, standing instructions).
    more: [usize; 9],
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

/// The names of the outputs cleared from a span's messages before it was removed, which their
/// placeholders no longer hold, in the order the outputs were cleared, each output's ranked.
#[derive(Debug, Default)]
pub(crate) struct ClearedNames<'a> {
    /// Their identifiers.
    pub(crate) identifiers: Vec<&'a str>,
    /// Their other names: paths, code names, dates.
    pub(crate) names: Vec<&'a str>,
}

/// The marker for a removed span: `messages` are its messages (in the state they were removed
/// from), `cleared` the names of the outputs cleared from them before, `input_tokens` each one's tokens in the input (`None`
/// for a message that was not in the input), `place` where the span lies relative to the
/// current request (which its header says). `None` in
/// [`MarkerMode::None`]; else the marker and how many of the span's requests, and of its files,
/// it does not name (left out for room, or all without a digest).
pub(crate) fn build(
    mode: MarkerMode,
    place: Place,
    (messages, cleared): (&[Message], &ClearedNames<'_>),
    input_tokens: &[Option<usize>],
    cap: DigestCap,
    counter: &dyn TokenCounter,
) -> Option<(String, [usize; 2])> {
    if mode == MarkerMode::None {
        return None;
    }
    let digest = extract(messages, cleared, input_tokens);
    let (body, unnamed) = match mode {
        MarkerMode::Digest => Renderer { counter, cap }.render_capped(&digest, true),
        _ => (
            String::new(),
            [
                digest.requests.len(),
                digest.files.iter().map(Vec::len).sum(),
            ],
        ),
    };
    let mut header = header(digest.messages, digest.tokens, !body.is_empty(), place);
    let mut body = body;
    let mut unnamed = unnamed;
    if mode == MarkerMode::Digest && unnamed[0] > 0 {
        // Too little room to name every removed request (or standing instruction): a shorter
        // frame — the tight header, no closing line of the sections left out — gives what it
        // saves to the digest, when that names more.
        let tight = tight_header(digest.messages, digest.tokens);
        let saved = counter
            .count_text(&header)
            .saturating_sub(counter.count_text(&tight));
        let roomier = DigestCap {
            total: cap.total + saved,
            rest: cap.rest,
        };
        let (tight_body, tight_unnamed) = Renderer {
            counter,
            cap: roomier,
        }
        .render_capped(&digest, false);
        if !tight_body.is_empty() && tight_unnamed[0] < unnamed[0] {
            (header, body, unnamed) = (tight, tight_body, tight_unnamed);
        }
    }
    let text = if body.is_empty() {
        header
    } else {
        format!("{header}\n{body}\n{DIGEST_END}")
    };
    Some((text, unnamed))
}

/// Walks a span once and extracts its digest.
fn extract<'a>(
    messages: &'a [Message],
    cleared: &ClearedNames<'_>,
    input_tokens: &[Option<usize>],
) -> Digest<'a> {
    let mut digest = Digest::default();
    // The identifiers and names of outputs cleared before, seen first: older than what the
    // span still holds, and in their own ranking (the last added ranks first).
    for &id in cleared.identifiers.iter().rev() {
        digest.ids.add(id, false);
    }
    for &name in cleared.names.iter().rev() {
        digest.names.add(name, false);
    }
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
                        digest.ids.add_text(rest, true);
                        let request = sub(&text, rest);
                        add_standing(&mut digest, &request);
                        digest.requests.push(request);
                    }
                    continue;
                }
                digest.messages += 1;
                digest.tokens += tokens;
                if classify::author_with_text(message, &text) == Some(Author::Request) {
                    digest.ids.add_text(&text, true);
                    add_standing(&mut digest, &text);
                    digest.requests.push(text);
                } else {
                    // Harness text (a hook's output, a reminder) is machine-written: read as a
                    // tool's output is.
                    add_output(&mut digest, &text, false);
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
                        digest.ids.add_arguments(arguments);
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
                add_output(&mut digest, &parts_text(content), *is_error);
            }
        }
    }
    if let Some(message) = last_state {
        digest.last_state = Some(Cow::Owned(clip(message.text().trim(), STATE_CHARS)));
    }
    keep_first(&mut digest.requests);
    keep_first(&mut digest.errors);
    digest.standing.reverse();
    keep_first(&mut digest.standing);
    // A request that is one standing instruction whole is written once, under that heading.
    let standing = &digest.standing;
    digest
        .requests
        .retain(|request| !standing.iter().any(|s| s.trim() == request.trim()));
    group_files(&mut digest);
    rank_identifiers(&mut digest);
    digest
}

/// Adds what a tool's output `text` (flagged an error when `is_error`) holds to the digest: its
/// identifiers, the paths and code names a later step may read off it, and its error line.
// A `Cow` by reference: an output borrowed from the span lends its error line the span's lifetime.
#[allow(clippy::ptr_arg)]
fn add_output<'a>(digest: &mut Digest<'a>, text: &Cow<'a, str>, is_error: bool) {
    // A placeholder's first line names the tool and the size, not a thing of the output; a
    // gist below it holds the output's own names.
    let named = if is_cleared_output(text) {
        text.split_once('\n').map_or("", |(_, gist)| gist)
    } else {
        text
    };
    digest.ids.add_text(named, false);
    gist::for_each_name(named, |name| {
        if !identifiers::is_identifier(name) {
            digest.names.add(name, false);
        }
    });
    if let Some(line) = error_line_in(text, is_error) {
        digest.errors.push(clip_cow(sub(text, line), LINE_CHARS));
    }
}

/// Adds the standing instructions of a removed request to the digest.
// A `Cow` by reference: a request borrowed from the span lends its sentences the span's lifetime.
#[allow(clippy::ptr_arg)]
fn add_standing<'a>(digest: &mut Digest<'a>, request: &Cow<'a, str>) {
    match request {
        Cow::Borrowed(text) => digest.standing.extend(standing::standing_in(text)),
        Cow::Owned(text) => digest.standing.extend(
            standing::standing_in(text)
                .into_iter()
                .map(|s| Cow::Owned(s.into_owned())),
        ),
    }
}

/// Ranks the identifiers and names found: those a person or a tool call wrote first (its
/// identifiers, then its names), then those only outputs hold (identifiers, then names),
/// leaving out those the files sections or a standing instruction name.
fn rank_identifiers(digest: &mut Digest<'_>) {
    let ids = std::mem::take(&mut digest.ids).ranked();
    // Looked up, never iterated.
    let files: HashSet<&str, FxBuild> = digest
        .files
        .iter()
        .flatten()
        .map(|(path, _)| path.as_ref())
        .collect();
    let names = std::mem::take(&mut digest.names).ranked();
    // Nor an identifier a standing instruction writes: those come first, verbatim, and when one
    // is left out for room, so is every identifier.
    let standing = &digest.standing;
    let mut kept: Vec<Counted> = ids
        .into_iter()
        .chain(names)
        .filter(|c| !files.contains(c.id.as_str()))
        .filter(|c| !standing.iter().any(|s| holds_word(s, &c.id)))
        .collect();
    // Written ones first, identifiers before names among them and among the rest.
    kept.sort_by_key(|c| !c.written);
    digest.identifiers = kept.into_iter().map(|c| Cow::Owned(c.id)).collect();
}

/// Whether `text` holds `word` whole: neither a letter, a digit nor `_` on either side of it.
fn holds_word(text: &str, word: &str) -> bool {
    let inside = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(inside)
            && !text[at + word.len()..].chars().next().is_some_and(inside)
    })
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
        if classify::is_user_turn(message) {
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
    let mut seen: HashSet<&str, FxBuild> = HashSet::default();
    let keep: Vec<bool> = texts.iter().map(|t| seen.insert(t.as_ref())).collect();
    let mut flags = keep.into_iter();
    texts.retain(|_| flags.next().unwrap_or(true));
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
    if command.is_none()
        && let Some(parsed) = &parsed
    {
        add_written_names(digest, parsed);
    }
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

/// Adds the code names a call's arguments write (the code an edit puts in, the symbol a search
/// looks for) to the digest's names, as written ones: what the agent wrote itself is what it
/// goes on to use. Not a command's: the commands section shows it whole.
fn add_written_names(digest: &mut Digest<'_>, parsed: &Args<'_>) {
    for line in parsed.texts().flat_map(str::lines) {
        for name in gist::names_in(line) {
            if !identifiers::is_identifier(name) {
                digest.names.add(name, true);
            }
        }
    }
}

/// Folds an earlier marker into the digest: its counts, and the items of its digest.
fn fold(digest: &mut Digest<'_>, text: &str) {
    if let Some((messages, tokens)) = parse_header(text) {
        digest.messages += messages;
        digest.tokens += tokens;
    }
    let mut section: Option<usize> = None;
    // The earlier marker lists its standing instructions newest first: each goes before the
    // ones read from it so far, so that the list stays in order, oldest first.
    let standing_at = digest.standing.len();
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
            } else if index == IDENTIFIERS {
                fold_identifiers(digest, rest);
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
            STANDING => {
                if let Some(sentence) = line.strip_prefix("» ") {
                    digest
                        .standing
                        .insert(standing_at, Cow::Owned(sentence.to_string()));
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

/// Adds a folded identifiers line (`a, b, +3 more`; a marker of an earlier version wrote counts,
/// `a ×2`, which are dropped) to the identifiers found, as seen where the earlier marker stands
/// and not as written ones (its line no longer says which were): where room is short, what the
/// span after it holds goes before them, as the next steps of a loop use its recent work most
/// (docs/decisions.md).
fn fold_identifiers(digest: &mut Digest<'_>, rest: &str) {
    // Last first: the tally ranks the most recently seen first, and the earlier digest's
    // first item is its first.
    for item in rest.rsplit(", ").filter(|i| !i.is_empty()) {
        if let Some(more) = item
            .strip_prefix('+')
            .and_then(|r| r.strip_suffix(" more"))
            .and_then(|n| n.parse::<usize>().ok())
        {
            digest.more[IDENTIFIERS] += more;
            continue;
        }
        let id = item.rsplit_once(" ×").map_or(item, |(id, _)| id);
        digest.ids.add(id, false);
    }
}

/// The index of the identifiers section among the folded sections (after errors, so that the
/// indices of the older sections stay as they were).
const IDENTIFIERS: usize = 7;

/// The title of the identifiers section.
const IDENTIFIERS_TITLE: &str = "Identifiers";

/// The index of the standing instructions' section among the folded sections (the last one
/// added, so that the indices of the older sections stay as they were).
const STANDING: usize = 8;

/// The title of the standing instructions' section.
const STANDING_TITLE: &str = "Standing instructions";

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
        IDENTIFIERS_TITLE,
        STANDING_TITLE,
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::parse_value;
    use crate::tokens::CharEstimate;
    use render::clip_request;

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
            Place::BeforeCurrent,
            (messages, &ClearedNames::default()),
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
    fn a_loops_digest_has_a_larger_share_of_its_budget_than_a_one_off() {
        for budget in [1_000, 10_000, 20_000, 100_000] {
            let (one_off, in_loop) = (
                DigestCap::default_for(budget, false),
                DigestCap::default_for(budget, true),
            );
            assert_eq!(one_off.rest, (budget / 10).min(2_000), "{budget}");
            assert_eq!(in_loop.rest, (budget * 3 / 10).min(4_000), "{budget}");
            // The whole digest, requests first, takes half the budget either way.
            assert_eq!(one_off.total, budget / 2, "{budget}");
            assert_eq!(in_loop.total, budget / 2, "{budget}");
        }
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

    /// A span of `n` requests of `chars` characters each, every one starting with its number.
    fn requests(n: usize, chars: usize) -> Vec<Message> {
        (0..n)
            .map(|i| {
                let head = format!("Request {i:02}: please change the ledger ");
                let text = format!("{head}{}", "x".repeat(chars - head.len()));
                Message::new_text(Role::User, text)
            })
            .collect()
    }

    /// The requests a digest names, as its `» ` lines.
    fn named(text: &str) -> Vec<&str> {
        text.lines().filter_map(|l| l.strip_prefix("» ")).collect()
    }

    #[test]
    fn requests_that_do_not_fit_verbatim_are_all_shortened_before_any_is_left_out() {
        let messages = requests(10, 300);
        let tokens = vec![Some(80); messages.len()];
        // Four characters a token: verbatim they take 770 tokens, by 200 characters 520, by 80
        // 220.
        let text = digest(&messages, &tokens, 300);
        let lines = named(&text);
        assert_eq!(lines.len(), 10, "{text}");
        let lengths: Vec<usize> = lines.iter().map(|l| l.chars().count()).collect();
        for (i, line) in lines.iter().enumerate() {
            assert!(line.starts_with(&format!("Request {i:02}: ")), "{line}");
            assert!(line.ends_with('…'), "{line}");
        }
        assert!(!text.contains(" more"), "{text}");
        // All fit by 80 characters (one or two of the newest by 200), or by 40 with the room
        // left giving the newest their first 200: the latter keeps more by 200, four.
        assert_eq!(
            lengths,
            [41, 41, 41, 41, 41, 41, 201, 201, 201, 201],
            "{text}"
        );
        // With room for 200 each: each keeps its first 200 characters, the newest more.
        let text = digest(&messages, &tokens, 600);
        let lengths: Vec<usize> = named(&text).iter().map(|l| l.chars().count()).collect();
        assert!(lengths.iter().all(|&n| n == 201 || n == 300), "{text}");
        assert!(lengths.is_sorted(), "{lengths:?}");
    }

    #[test]
    fn when_even_the_shortest_form_does_not_fit_the_most_recent_requests_are_named() {
        let messages = requests(30, 300);
        let tokens = vec![Some(80); messages.len()];
        // By 40 characters they take 390 tokens.
        let text = digest(&messages, &tokens, 200);
        let lines = named(&text);
        assert!(!lines.is_empty() && lines.len() < 30, "{text}");
        let left_out = 30 - lines.len();
        assert!(
            text.contains(&format!("Requests (30):\n+{left_out} more\n» ")),
            "{text}"
        );
        for (line, i) in lines.iter().zip(left_out..) {
            assert!(line.starts_with(&format!("Request {i:02}: ")), "{line}");
            assert_eq!(line.chars().count(), 41, "{line}");
        }
        let body = text.split_once('\n').map_or("", |(_, b)| b);
        assert!(CharEstimate.count_text(body.strip_suffix(DIGEST_END).unwrap()) <= 200);
        // Folded into a later marker, the count of those left out carries over.
        let again = digest(
            &[Message::new_text(Role::User, text.clone())],
            &[Some(9)],
            200,
        );
        assert!(again.contains("Requests (30):"), "{again}");
    }

    #[test]
    fn names_of_outputs_cleared_before_are_named_with_the_span_not_their_placeholders() {
        let placeholder = crate::note::cleared_output("search_direct_flight", 300, None);
        let messages = one_call("Book the flight for me please", "{}", &placeholder);
        let tokens = vec![Some(10); messages.len()];
        let cleared = ClearedNames {
            identifiers: vec!["noah_muller_9847", "ZFA04Y"],
            names: vec!["2024-05-17", "06:00:00"],
        };
        let (text, _) = build(
            MarkerMode::Digest,
            Place::BeforeCurrent,
            (&messages, &cleared),
            &tokens,
            DigestCap::fixed(400),
            &CharEstimate,
        )
        .unwrap();
        let at = |id: &str| text.find(id).unwrap_or_else(|| panic!("{id} in {text}"));
        // Identifiers before names; in each, the last cleared first.
        assert!(at("noah_muller_9847") < at("ZFA04Y"), "{text}");
        assert!(at("ZFA04Y") < at("2024-05-17"), "{text}");
        assert!(at("2024-05-17") < at("06:00:00"), "{text}");
        // The placeholder's own words (the tool's name) are not the output's names.
        assert!(!text.contains("search_direct_flight"), "{text}");
    }

    /// A request, one tool call with `arguments` and its `result`, and a closing answer.
    fn one_call(request: &str, arguments: &str, result: &str) -> Vec<Message> {
        parse_value(
            json!([
                {"role": "user", "content": request},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function",
                    "function": {"name": "lookup", "arguments": arguments}}]},
                {"role": "tool", "tool_call_id": "a", "content": result},
                {"role": "assistant", "content": "Done."}
            ]),
            None,
        )
        .unwrap()
        .messages
    }

    #[test]
    fn identifiers_of_requests_calls_and_results_are_named_once_latest_first() {
        let messages = one_call(
            "My user id is noah_muller_9847; cancel reservation ZFA04Y.",
            "{\"reservation_id\": \"ZFA04Y\"}",
            "{\"reservation_id\": \"ZFA04Y\", \"user_id\": \"noah_muller_9847\", \"flight\": \"HAT170\"}",
        );
        let tokens = vec![Some(10); messages.len()];
        let text = digest(&messages, &tokens, 500);
        assert!(
            text.contains("Identifiers (3): noah_muller_9847, ZFA04Y, HAT170\n"),
            "{text}"
        );
        // Folded into a later marker, they keep their order; an earlier version's counts go.
        let again = digest(&[Message::new_text(Role::User, text)], &[Some(9)], 500);
        assert!(
            again.contains("Identifiers (3): noah_muller_9847, ZFA04Y, HAT170\n"),
            "{again}"
        );
        let older = "[ctxcompact: 3 earlier messages (30 input tokens) removed here; digest below]\n\
                     Identifiers (3): noah_muller_9847 ×2, ZFA04Y ×3, HAT170\n\
                     [ctxcompact: end of digest]";
        let again = digest(&[Message::new_text(Role::User, older)], &[Some(9)], 500);
        assert!(
            again.contains("Identifiers (3): noah_muller_9847, ZFA04Y, HAT170\n"),
            "{again}"
        );
    }

    #[test]
    fn an_earlier_markers_identifiers_come_after_those_the_span_after_it_holds() {
        let older = "[ctxcompact: 3 earlier messages (30 input tokens) removed here; digest below]\n\
                     Identifiers (2): noah_muller_9847, ZFA04Y\n\
                     [ctxcompact: end of digest]";
        let mut messages = vec![Message::new_text(Role::User, older)];
        messages.extend(one_call(
            "Look the flight up.",
            "{\"query\": \"next flight\"}",
            "{\"flight\": \"HAT170\"}",
        ));
        let tokens = vec![Some(10); messages.len()];
        let text = digest(&messages, &tokens, 500);
        assert!(
            text.contains("Identifiers (3): HAT170, noah_muller_9847, ZFA04Y\n"),
            "{text}"
        );
    }

    // See: #33
    #[test]
    fn identifiers_a_person_or_a_call_wrote_come_before_those_of_results() {
        let messages = one_call(
            "Upgrade to django==4.1.2 for ticket PROJ-7.",
            "{\"commit\": \"9f3c2e1\"}",
            "at 0x40060d 0x40060d 0x40060d HAT170 HAT170",
        );
        let tokens = vec![Some(10); messages.len()];
        let text = digest(&messages, &tokens, 500);
        assert!(
            text.contains("Identifiers (5): 9f3c2e1, PROJ-7, 4.1.2, HAT170, 0x40060d\n"),
            "{text}"
        );
    }

    // See: #38
    #[test]
    fn harness_text_is_read_as_an_output_is() {
        let messages = parse_value(
            json!([
                {"role": "user", "content": "Show the session's transcript live."},
                {"role": "user", "content": "<system-reminder>\nPostToolUse:Edit hook additional \
                 context: [COMPILE ERROR]\nerror: undefined function reload_transcript/1 (expected \
                 SessionLive to define it)\n  lib/web/session_live.ex:148:18\n</system-reminder>"}
            ]),
            None,
        )
        .unwrap()
        .messages;
        let tokens = vec![Some(10); messages.len()];
        let text = digest(&messages, &tokens, 500);
        assert!(
            text.contains("Requests (1):\n» Show the session's transcript live.\n"),
            "{text}"
        );
        assert!(
            text.contains("\n! error: undefined function reload_transcript/1"),
            "{text}"
        );
        assert!(text.contains("lib/web/session_live.ex"), "{text}");
        assert!(!text.contains("Requests (2)"), "{text}");
    }

    // See: #38
    #[test]
    fn names_an_edit_writes_come_before_ids_only_an_output_holds_and_a_commands_do_not() {
        let messages = parse_value(
            json!([
                {"role": "user", "content": "Show each pane's status."},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "Read",
                     "arguments": "{\"file_path\": \"lib/live/panes.ex\"}"}},
                    {"id": "b", "type": "function", "function": {"name": "Edit",
                     "arguments": "{\"file_path\": \"lib/live/panes.ex\", \"old_string\": \"x\",                       \"new_string\": \"status = active_status_map[pane.session_id]\"}"}},
                    {"id": "c", "type": "function", "function": {"name": "Bash",
                     "arguments": "{\"command\": \"mix run check_panes.exs\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "a",
                 "content": "session 019c5287-57c0-77ff-95dc-d21df75a8bb5 of trace 7f3a9e21c4b8"},
                {"role": "tool", "tool_call_id": "b", "content": "edited"},
                {"role": "tool", "tool_call_id": "c", "content": "ok"}
            ]),
            None,
        )
        .unwrap()
        .messages;
        let tokens = vec![Some(10); messages.len()];
        let text = digest(&messages, &tokens, 500);
        let line = text
            .lines()
            .find(|l| l.starts_with("Identifiers"))
            .unwrap_or_else(|| panic!("{text}"));
        let at = |word: &str| line.find(word).unwrap_or_else(|| panic!("{word}: {line}"));
        assert!(at("active_status_map") < at("019c5287-57c0-77ff-95dc-d21df75a8bb5"));
        assert!(at("pane.session_id") < at("7f3a9e21c4b8"));
        // A command's names are in the commands section, not named again.
        assert!(!line.contains("check_panes"), "{line}");
    }

    // See: #33
    #[test]
    fn standing_instructions_come_first_verbatim_newest_first_and_fold_once() {
        let messages = vec![
            Message::new_text(Role::User, "Port the parser. Never touch the lexer."),
            Message::new_text(Role::Assistant, "On it."),
            Message::new_text(
                Role::User,
                "Make sure the tests pass. Never touch the lexer.",
            ),
            Message::new_text(Role::Assistant, "Done."),
        ];
        let tokens = vec![Some(10); messages.len()];
        let text = digest(&messages, &tokens, 500);
        let body = text.split_once('\n').map_or("", |(_, b)| b);
        assert!(
            body.starts_with(
                "Standing instructions (2):\n» Never touch the lexer.\n» Make sure the tests pass.\nRequests (2):\n"
            ),
            "{text}"
        );
        // Repeated, an instruction is as new as its last request; folded into a later marker with
        // a newer one, each is kept once, newest first.
        let again = digest(
            &[
                Message::new_text(Role::User, text),
                Message::new_text(Role::User, "Always run fmt."),
            ],
            &[Some(9), Some(5)],
            500,
        );
        assert!(
            again.contains(
                "Standing instructions (3):\n» Always run fmt.\n» Never touch the lexer.\n» Make sure the tests pass.\n"
            ),
            "{again}"
        );
        // With room for little, the instructions come first, in a tighter frame: its header has
        // no closing clause, and no line names the sections left out.
        let tight = digest(&messages, &tokens, 20);
        assert_eq!(
            tight,
            "[ctxcompact: 4 earlier messages (40 input tokens) removed here; digest below]\n\
             Standing instructions (2):\n» Never touch the lexer.\n» Make sure the tests pass.\n\
             [ctxcompact: end of digest]"
        );
    }

    // See: #38
    #[test]
    fn identifiers_a_standing_instruction_writes_are_not_named_again() {
        let messages = one_call(
            "I'm omar_rossi_1241. Make sure you never charge gift_card_8190333.",
            "{\"user_id\": \"omar_rossi_1241\"}",
            "reservations: FQ8APE, 5RJ7UH; payment: credit_card_7407366, gift_card_8190333",
        );
        let tokens = vec![Some(10); messages.len()];
        let text = digest(&messages, &tokens, 500);
        assert!(
            text.contains(
                "Identifiers (4): omar_rossi_1241, credit_card_7407366, 5RJ7UH, FQ8APE\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("» Make sure you never charge gift_card_8190333.\n"),
            "{text}"
        );
    }

    // See: #38
    #[test]
    fn a_request_that_is_a_standing_instruction_whole_is_written_once() {
        let messages = vec![
            Message::new_text(Role::User, "Never touch the lexer."),
            Message::new_text(Role::Assistant, "Understood."),
            Message::new_text(Role::User, "Port the parser. Make sure the tests pass."),
        ];
        let tokens = vec![Some(10); messages.len()];
        let text = digest(&messages, &tokens, 500);
        assert_eq!(text.matches("Never touch the lexer.").count(), 1, "{text}");
        assert!(
            text.contains(
                "Standing instructions (2):\n» Make sure the tests pass.\n» Never touch the lexer.\n\
                 Requests (1):\n» Port the parser. Make sure the tests pass.\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn long_requests_keep_their_head_and_tail() {
        let long = format!("{}{}", "a".repeat(350), "z".repeat(100));
        let clipped = clip_request(&long);
        assert_eq!(clipped.chars().count(), REQUEST_CHARS);
        assert!(clipped.starts_with(&"a".repeat(300)));
        assert!(clipped.ends_with(&"z".repeat(97)));
    }
}
