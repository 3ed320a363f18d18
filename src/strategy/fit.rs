//! Fitting a round's outputs into the room the budget leaves: when clearing a round's outputs
//! whole would free more than the budget needs, they are capped instead — head and tail kept,
//! the cut named — at one cap, the largest that fits, so that the output uses its budget rather
//! than fall short of it. The round in progress is cut the same way, as the last resort before
//! a conversation cannot fit ([`Cutting::cut_in_progress`]). Also the one way an output is cut
//! to a cap ([`Cutting::cap_text`]): a JSON output to its gist, any other to its head and tail.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;

use serde_json::Value;

use crate::account::CutOutput;
use crate::archive::Archive;
use crate::conversation::{Layout, Message, Part, joined_text};
use crate::state::Applied;
use crate::tokens::TokenCounter;
use crate::{classify, evidence, gist, note};

use super::inputs::{LARGE_INPUT, is_short_path_value};

/// What cutting outputs reads, borrowed once: the counter, and the archive whose files the
/// cuts' notes name, when removed history is archived.
#[derive(Clone, Copy)]
pub(crate) struct Cutting<'a> {
    pub(crate) counter: &'a dyn TokenCounter,
    pub(crate) archive: Option<&'a Archive>,
}

impl Cutting<'_> {
    /// The reference to the archive file of the message at `index` of `state`, when archived.
    pub(super) fn reference(&self, state: &Applied, index: usize) -> Option<String> {
        let input = state.origin[index].input()?;
        let archive = self.archive?;
        Some(archive.reference(&archive.message_file(input), 1))
    }

    /// Cuts the outputs of the round in progress, the messages `round` at the end of `state`,
    /// so that they take at least `over` tokens fewer: head and tail kept at one cap, the
    /// largest that does it ([`Cutting::cap_outputs`]) and leaves `reserve` tokens more where a
    /// cap can, or, when no cap is that small, each cleared to its placeholder. With an archive, each note names the file holding its whole
    /// message. The gists of outputs cleared before go first (each leaves its bare
    /// placeholder); outputs already cut, or cleared to a bare placeholder, are left as they
    /// are. The last resort before a conversation cannot fit: these outputs are what the agent
    /// is working from.
    pub(crate) fn cut_in_progress(
        &self,
        mut state: Applied,
        round: Range<usize>,
        over: usize,
        reserve: usize,
    ) -> (Applied, Vec<CutOutput>) {
        let counter = self.counter;
        // Gists of outputs cleared before go first: each becomes its bare placeholder.
        let mut cut = Vec::new();
        let mut over = over;
        for index in round.clone() {
            if over == 0 {
                break;
            }
            let before = state.counts.messages[index];
            let input = state.origin[index].input();
            let message = &mut state.conversation.messages[index];
            for part in &mut message.parts {
                if let Part::ToolResult {
                    call_id, content, ..
                } = part
                    && let [Part::Text { text, .. }] = content.as_slice()
                    && let Some(bare) = note::without_gist(text)
                {
                    let tokens_before = counter.count_text(text);
                    let tokens_after = counter.count_text(&bare);
                    *content = vec![Part::text(bare)];
                    cut.push(CutOutput {
                        message: input,
                        call_id: call_id.clone(),
                        tokens_before,
                        tokens_after,
                    });
                }
            }
            let after = counter.count_message(message);
            if after < before {
                state.counts.messages[index] = after;
                state.origin[index] = state.origin[index].edited();
                over = over.saturating_sub(before - after);
            }
        }
        if over == 0 {
            return (state, cut);
        }
        let messages = &state.conversation.messages;
        let mut outputs = Vec::new();
        for index in round.clone() {
            for (part, content) in messages[index].parts.iter().enumerate() {
                if let Part::ToolResult { content, .. } = content
                    && let [Part::Text { text, .. }] = content.as_slice()
                    && !note::is_cleared_output(text)
                    && !text.lines().any(note::is_omitted)
                {
                    outputs.push((index, part));
                }
            }
        }
        let mut held: Vec<usize> = outputs.iter().map(|&(m, _)| m).collect();
        held.dedup();
        let before: usize = held.iter().map(|&m| state.counts.messages[m]).sum();
        let cap_within = |shortfall: usize| {
            before
                .checked_sub(shortfall)
                .and_then(|room| self.cap_outputs(&state, &outputs, room))
        };
        let capped = cap_within(over + reserve).or_else(|| cap_within(over));
        let texts: Vec<(usize, usize, String)> = match capped {
            Some(capped) => capped
                .into_iter()
                .flat_map(|(m, parts, _)| parts.into_iter().map(move |(p, text)| (m, p, text)))
                .collect(),
            None => outputs
                .iter()
                .filter_map(|&(m, p)| self.placeholder(&state, (m, p)).map(|t| (m, p, t)))
                .collect(),
        };
        for (index, part, text) in texts {
            let input = state.origin[index].input();
            let message = &mut state.conversation.messages[index];
            let Part::ToolResult {
                call_id,
                content,
                layout,
                ..
            } = &mut message.parts[part]
            else {
                continue;
            };
            let tokens_after = counter.count_text(&text);
            let old = std::mem::replace(content, vec![Part::text(text)]);
            let was = std::mem::replace(layout, Layout::Text);
            cut.push(CutOutput {
                message: input,
                call_id: call_id.clone(),
                tokens_before: counter.count_parts(&old),
                tokens_after,
            });
            state.discarded.output(input, (part, was), old);
            state.counts.messages[index] = counter.count_message(message);
            state.origin[index] = state.origin[index].edited();
        }
        (state, cut)
    }

    /// The placeholder of the output at `at` (message and part) of `state`, naming its tool, size
    /// and outcome, and its message's archive file; `None` when it would not be shorter.
    fn placeholder(&self, state: &Applied, (message, part): (usize, usize)) -> Option<String> {
        let counter = self.counter;
        let Part::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } = &state.conversation.messages[message].parts[part]
        else {
            return None;
        };
        let tool = state.conversation.messages[..message]
            .iter()
            .rev()
            .flat_map(|m| &m.parts)
            .find_map(|p| match p {
                Part::ToolCall { id, name, .. } if id == call_id => Some(name.as_str()),
                _ => None,
            })
            .unwrap_or("tool");
        let tokens = counter.count_parts(content);
        let text = joined_text(content);
        let mut placeholder =
            note::cleared_output(tool, tokens, evidence::outcome_in(&text, *is_error));
        if let Some(reference) = self.reference(state, message) {
            placeholder = note::with_reference(&placeholder, &reference);
        }
        (counter.count_text(&placeholder) < tokens).then_some(placeholder)
    }
}

/// A cap below this many tokens keeps too little of an output to be worth more than its
/// placeholder: the round is cleared instead.
const MIN_CAP: usize = 48;
/// Times the cap is corrected after an exact count shows it overshoots the room or leaves
/// some of it.
const ROUNDS: usize = 8;

/// One message of a fitted round: its index, the capped text of each of its outputs (by part),
/// and its exact count once they are in place.
pub(crate) type CappedMessage = (usize, Vec<(usize, String)>, usize);

impl Cutting<'_> {
    /// Caps the outputs at `outputs` (message and part indices, ascending, each a result whose
    /// content is a single text) so that the messages holding them take at most `room` tokens
    /// together; each cut's note names its message's archive file, if any.
    /// `None` when no cap of at least [`MIN_CAP`] tokens fits, or an output cannot be cut: the
    /// caller clears them instead.
    pub(crate) fn cap_outputs(
        &self,
        state: &Applied,
        outputs: &[(usize, usize)],
        room: usize,
    ) -> Option<Vec<CappedMessage>> {
        let counter = self.counter;
        let messages = &state.conversation.messages;
        let mut texts = Vec::with_capacity(outputs.len());
        for &(message, part) in outputs {
            let Part::ToolResult { content, .. } = &messages[message].parts[part] else {
                return None;
            };
            let [Part::Text { text, .. }] = content.as_slice() else {
                return None;
            };
            texts.push((text.as_str(), counter.count_text(text)));
        }
        let measured: Vec<Measured<'_>> = texts.iter().map(|_| Measured::default()).collect();
        let mut held: Vec<usize> = outputs.iter().map(|&(m, _)| m).collect();
        held.dedup();
        let before: usize = held.iter().map(|&m| state.counts.messages[m]).sum();
        let base = before.saturating_sub(texts.iter().map(|(_, t)| t).sum::<usize>());
        let avail = room.checked_sub(base)?;
        // The largest cap whose estimate fits: each output over it costs the cap, its note
        // included ([`Cutting::cap_text`]).
        let estimate = |cap: usize| -> usize { texts.iter().map(|&(_, t)| t.min(cap)).sum() };
        let (mut low, mut high) = (0, texts.iter().map(|(_, t)| *t).max().unwrap_or(0));
        while low < high {
            let mid = (low + high).div_ceil(2);
            if estimate(mid) <= avail {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        let mut cap = low;
        let mut best: Option<(usize, Vec<CappedMessage>)> = None;
        // The largest cap known to fit and the smallest known to overshoot: a cap's output grows
        // with it only roughly (whole lines, a names line), so the caps between are searched.
        let (mut fits_at, mut over_at) = (0, usize::MAX);
        for _ in 0..ROUNDS {
            if cap < MIN_CAP {
                break;
            }
            let mut fitted: Vec<CappedMessage> = Vec::with_capacity(held.len());
            let (mut capped, mut after) = (0, 0);
            for &message in &held {
                let mut copy = messages[message].clone();
                let mut parts = Vec::new();
                let reference = self.reference(state, message);
                for ((&(_, part), &(text, tokens)), measured) in outputs
                    .iter()
                    .zip(&texts)
                    .zip(&measured)
                    .filter(|(((m, _), _), _)| *m == message)
                {
                    if tokens <= cap {
                        continue;
                    }
                    let short = self.cap_measured(text, cap, reference.as_deref(), measured)?;
                    if let Part::ToolResult {
                        content, layout, ..
                    } = &mut copy.parts[part]
                    {
                        *content = vec![Part::text(short.clone())];
                        *layout = Layout::Text;
                    }
                    parts.push((part, short));
                    capped += 1;
                }
                if parts.is_empty() {
                    after += state.counts.messages[message];
                    continue;
                }
                let tokens = counter.count_message(&copy);
                after += tokens;
                fitted.push((message, parts, tokens));
            }
            let next = if after <= room && after < before {
                let slack = room - after;
                if best.as_ref().is_none_or(|(tokens, _)| after > *tokens) {
                    best = Some((after, fitted));
                }
                fits_at = fits_at.max(cap);
                // Within a token an output of the room: done; else try a larger cap.
                if slack <= capped {
                    break;
                }
                cap + (slack / capped.max(1)).max(1)
            } else {
                over_at = over_at.min(cap);
                if best.is_some() {
                    fits_at + (over_at - fits_at) / 2
                } else {
                    // Lower the cap by each capped output's share of the overshoot.
                    let over = after.saturating_sub(room).max(1);
                    cap.saturating_sub(over.div_ceil(capped.max(1)) + 1)
                }
            };
            let next = next.min(over_at.saturating_sub(1));
            if next == cap || (best.is_some() && next <= fits_at) {
                break;
            }
            cap = next;
        }
        best.map(|(_, fitted)| fitted)
    }
}

/// Share of a cap, in percent, that the names of a capped output's middle may take
/// ([`gist::names_line`]): its head and tail take the rest. A file read whole and then
/// reported on holds more of what the next steps write in its middle's names than in its ends.
const NAMES_PCT: usize = 70;

/// The fewest tokens worth keeping of a piece cut inside ([`Cutting::start_within`]) …
const MIN_START: usize = 8;
/// … and the counts tried to fit it.
const START_TRIES: usize = 3;

/// Characters per piece when a capped output has too few lines to cut by line.
const CHUNK_CHARS: usize = 200;

/// What the note of a capped JSON output counts: its scalar values (a gist's `path: value`
/// lines).
const VALUES: &str = "values";

/// A JSON output of fewer scalar values than this (a wrapper around one text, as Gemini's
/// `{"output": …}`) is capped as text: its head and tail say more than a gist of few values.
const MIN_VALUES: usize = 8;

/// The line standing for what a cap left out of an output: how many `unit`s of `total`, and,
/// with a `reference`, which archive file holds them.
fn omitted_note(omitted: usize, total: usize, unit: &str, reference: Option<&str>) -> String {
    let line = note::omitted(omitted, total, unit);
    match reference {
        Some(reference) => note::with_reference(&line, reference),
        None => line,
    }
}

impl Cutting<'_> {
    /// `text` within about `cap` tokens. A JSON output keeps its gist ([`Self::cap_json`]);
    /// any other, or one whose gist does not fit, its head and tail lines, with a line saying
    /// how many were omitted between them (and, with a `reference`, which archive file holds
    /// them) followed by the names the middle holds (paths, identifiers, code names), as room
    /// allows. An output of one or two long lines is cut the same way in pieces of
    /// [`CHUNK_CHARS`] characters. `None` when there is nothing to cut.
    pub(super) fn cap_text(
        &self,
        text: &str,
        cap: usize,
        reference: Option<&str>,
    ) -> Option<String> {
        self.cap_measured(text, cap, reference, &Measured::default())
    }

    /// [`Self::cap_text`] with what it reads of `text` at any cap kept in `measured`: the caps
    /// [`Self::cap_outputs`] tries on one output read its tags, lines and names once.
    fn cap_measured<'t>(
        &self,
        text: &'t str,
        cap: usize,
        reference: Option<&str>,
        measured: &Measured<'t>,
    ) -> Option<String> {
        if let Some(gist) = self.cap_json(text, cap, reference) {
            return Some(gist);
        }
        let text = &**measured
            .untagged
            .get_or_init(|| classify::without_tags(text));
        let counter = self.counter;
        let mut pieces: Vec<&str> = text.split_inclusive('\n').collect();
        let mut unit = "lines";
        if pieces.len() < 3 {
            // Pieces small enough that a head and a tail fit a small cap (about four characters
            // a token), and no larger than CHUNK_CHARS.
            pieces = chunks(text, cap.saturating_mul(2).clamp(16, CHUNK_CHARS));
            unit = "characters";
        }
        if pieces.len() < 3 {
            return None;
        }
        let count_pieces = || -> Vec<usize> {
            pieces
                .iter()
                .map(|piece| counter.count_text(piece))
                .collect()
        };
        // Lines are the same pieces at every cap; characters are cut by the cap.
        let chunk_costs;
        let costs: &[usize] = if unit == "lines" {
            measured.line_costs.get_or_init(count_pieces)
        } else {
            chunk_costs = count_pieces();
            &chunk_costs
        };
        let omitted = |omitted: usize, total: usize| omitted_note(omitted, total, unit, reference);
        let note_cost = counter.count_text(&omitted(text.len(), text.len())) + 1;
        let whole_room = cap.saturating_sub(note_cost);
        let by_line = unit == "lines";
        // The names of the middle take up to a share of the room; the ends what they leave.
        let names_cost = measured.names_cost(text, by_line);
        let names_room = names_cost.min(whole_room * NAMES_PCT / 100);
        let mut room = whole_room - names_room;
        let (mut head, mut tail) = (0, 0);
        // Alternate head and tail pieces while they fit: both ends of an output usually matter.
        loop {
            let take_head = head <= tail;
            let next = if take_head {
                head
            } else {
                pieces.len() - 1 - tail
            };
            if head + tail >= pieces.len() - 1 || costs[next] > room {
                break;
            }
            room -= costs[next];
            if take_head {
                head += 1;
            } else {
                tail += 1;
            }
        }
        // The head's first piece whenever the whole room holds it: it says what the output is.
        if head == 0 && tail + 1 < pieces.len() && costs[0] <= whole_room {
            head = 1;
        }
        let ends = costs[..head]
            .iter()
            .chain(&costs[pieces.len() - tail..])
            .sum::<usize>();
        let middle = head..pieces.len() - tail;
        let names = measured.names_line(
            text,
            &pieces,
            middle,
            by_line,
            whole_room.saturating_sub(ends + 1),
            counter,
        );
        // Its line break included.
        let names_tokens = names.as_ref().map_or(0, |(_, tokens)| tokens + 1);
        let mut kept_head = pieces[..head].concat();
        let kept_tail = pieces[pieces.len() - tail..].concat();
        // What the ends and the names leave (the names' room is estimated) takes the start of
        // the next piece: an output of a few long lines would otherwise fall far short of its
        // cap.
        if head + tail + 1 < pieces.len() {
            // Its line break included.
            let left = whole_room.saturating_sub(ends + names_tokens + 1);
            kept_head.push_str(self.start_within(pieces[head], left));
        }
        let (omitted_count, total) = if unit == "lines" {
            (pieces.len() - head - tail, pieces.len())
        } else {
            let total = text.chars().count();
            (
                total - kept_head.chars().count() - kept_tail.chars().count(),
                total,
            )
        };
        let mut out = kept_head;
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&omitted(omitted_count, total));
        out.push('\n');
        if let Some((names, _)) = names {
            out.push_str(&names);
            out.push('\n');
        }
        out.push_str(&kept_tail);
        Some(out)
    }

    /// The longest start of `piece` (cut at a character) within `room` tokens found in a few
    /// counts, when it is at least [`MIN_START`] tokens; else nothing.
    fn start_within<'t>(&self, piece: &'t str, room: usize) -> &'t str {
        if room < MIN_START {
            return "";
        }
        let (mut best, mut best_tokens) = ("", 0);
        // About three characters a token at first, then scaled by the count.
        let mut chars = room.saturating_mul(3);
        for _ in 0..START_TRIES {
            let end = piece
                .char_indices()
                .nth(chars)
                .map_or(piece.len(), |(at, _)| at);
            let tokens = self.counter.count_text(&piece[..end]);
            if tokens <= room {
                if tokens > best_tokens {
                    (best, best_tokens) = (&piece[..end], tokens);
                }
                if end == piece.len() || tokens == room {
                    break;
                }
            }
            let next = chars * room / tokens.max(1);
            let next = if tokens > room {
                next.min(chars - 1)
            } else {
                next
            };
            if next == chars || next == 0 {
                break;
            }
            chars = next;
        }
        if best_tokens >= MIN_START { best } else { "" }
    }

    /// A JSON output within about `cap` tokens as its gist ([`gist::gist`]): a line saying how
    /// many of its values were left out, then the names its values hold and the `path: value`
    /// lines that fit. A head of JSON is mostly its keys, and a listing's later items (the
    /// second flight of a search, a user's other cards) are what its names line keeps: on
    /// tau-bench, `next %` at 0.5 rose from 47.8% to 52.2%. `None` when `text` is not JSON
    /// of [`MIN_VALUES`] values or more, or no gist fits.
    fn cap_json(&self, text: &str, cap: usize, reference: Option<&str>) -> Option<String> {
        let leaves = gist::json_leaves(text, MIN_VALUES)?;
        // The note's numbers are at most the text's length.
        let longest = omitted_note(text.len(), text.len(), VALUES, reference);
        let room = cap.checked_sub(self.counter.count_text(&longest) + 1)?;
        let gist = leaves.gist(room, self.counter)?;
        let note = omitted_note(gist.lines - gist.lines_kept, gist.lines, VALUES, reference);
        Some(format!("{note}\n{}", gist.text))
    }
}

/// What [`Cutting::cap_text`] reads of an output whatever the cap, once read: its text without
/// the harness's tags, the tokens of each of its lines, the names of each line, and the
/// tokens of all its names ([`gist::names_cost`]).
#[derive(Default)]
struct Measured<'t> {
    untagged: OnceCell<Cow<'t, str>>,
    line_costs: OnceCell<Vec<usize>>,
    line_names: OnceCell<gist::LineNames>,
    names_cost: OnceCell<usize>,
}

impl Measured<'_> {
    /// The names line of `pieces[middle]` of `text` within `room` ([`gist::names_line`]): of
    /// lines, from their names read once (`by_line`); of characters, read at each cap.
    fn names_line(
        &self,
        text: &str,
        pieces: &[&str],
        middle: Range<usize>,
        by_line: bool,
        room: usize,
        counter: &dyn TokenCounter,
    ) -> Option<(String, usize)> {
        if by_line {
            self.line_names(text)
                .names_line(text, middle, room, counter)
        } else {
            gist::names_line(&pieces[middle].concat(), room, counter)
        }
    }

    /// The tokens of all the names of `text` ([`gist::names_cost`]), from the names of its lines
    /// when it is cut `by_line`.
    fn names_cost(&self, text: &str, by_line: bool) -> usize {
        *self.names_cost.get_or_init(|| {
            if by_line {
                self.line_names(text).cost(text)
            } else {
                gist::names_cost(text)
            }
        })
    }

    /// The names of each line of `text`.
    fn line_names(&self, text: &str) -> &gist::LineNames {
        self.line_names.get_or_init(|| gist::LineNames::of(text))
    }
}

/// `text` in pieces of at most `size` characters.
fn chunks(text: &str, size: usize) -> Vec<&str> {
    let mut pieces = Vec::with_capacity(text.len() / size + 1);
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest
            .char_indices()
            .nth(size)
            .map_or(rest.len(), |(at, _)| at);
        let (piece, tail) = rest.split_at(cut);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// Whether an output is one [`Cutting::cap_text`] wrote: a line of its own is the omission
/// note.
pub(super) fn is_capped(text: &str) -> bool {
    text.lines().any(note::is_omitted)
}

impl Cutting<'_> {
    /// `original` with the large inputs of its calls ([`LARGE_INPUT`] tokens or more) capped
    /// rather than cleared: each long text among their arguments (file contents, a patch; not
    /// a path) keeps its head and tail lines ([`Cutting::cap_text`]) at the largest cap, of at
    /// least [`MIN_CAP`] tokens and found in [`ROUNDS`] tries, that keeps the message within
    /// `room` tokens; with its count. `None` when it has no large input or no such cap fits.
    pub(crate) fn cap_inputs(&self, original: &Message, room: usize) -> Option<(Message, usize)> {
        let counter = self.counter;
        let large: Vec<usize> = (0..original.parts.len())
            .filter(|&part| {
                matches!(&original.parts[part], Part::ToolCall { arguments, .. }
                    if counter.count_text(&arguments.to_string()) >= LARGE_INPUT)
            })
            .collect();
        let (mut low, mut high) = (MIN_CAP, counter.count_message(original));
        let mut best = None;
        for _ in 0..ROUNDS {
            if large.is_empty() || low > high {
                break;
            }
            let cap = usize::midpoint(low, high);
            let mut message = original.clone();
            for &part in &large {
                if let Part::ToolCall { arguments, .. } = &mut message.parts[part] {
                    *arguments = self.capped_arguments(arguments, cap);
                }
            }
            let tokens = counter.count_message(&message);
            if tokens <= room {
                best = Some((message, tokens));
                low = cap + 1;
            } else {
                high = cap - 1;
            }
        }
        best
    }

    /// `arguments` with each long text (not a path) capped at about `cap` tokens, in the same
    /// shape: a JSON-encoded string stays a string, an object stays an object.
    fn capped_arguments(&self, arguments: &Value, cap: usize) -> Value {
        let parsed = match arguments {
            Value::String(text) => serde_json::from_str::<Value>(text).ok(),
            other => Some(other.clone()),
        };
        let Some(Value::Object(mut map)) = parsed else {
            return arguments.clone();
        };
        for value in map.values_mut() {
            if is_short_path_value(value) {
                continue;
            }
            if let Value::String(text) = value {
                if let Some(short) = self.cap_text(text, cap, None) {
                    *text = short;
                }
            }
        }
        match arguments {
            Value::String(_) => Value::String(Value::Object(map).to_string()),
            _ => Value::Object(map),
        }
    }

    /// Caps every oversize result in place; returns how many were capped.
    pub(super) fn cap_all(&self, state: &mut Applied, cap: usize) -> usize {
        let counter = self.counter;
        let mut truncated = 0;
        let messages = state.conversation.messages.iter_mut();
        let with_counts = messages.zip(&mut state.counts.messages);
        for ((message, tokens), origin) in with_counts.zip(&mut state.origin) {
            // A message's count bounds each of its results': most need no look.
            if *tokens <= cap || !message.has_results() {
                continue;
            }
            // Capping shortens a result's text but may rewrite its wire shape (a Gemini JSON
            // response becomes `{"output": …}`): a message it would not make smaller is kept.
            let before = message.clone();
            let capped = self.cap_results(message, cap);
            if capped > 0 {
                let after = counter.count_message(message);
                if after >= *tokens {
                    *message = before;
                    continue;
                }
                truncated += capped;
                *tokens = after;
                *origin = origin.edited();
            }
        }
        truncated
    }

    /// Caps, in place, every result of a message longer than `cap` tokens; returns how many were
    /// capped.
    pub(super) fn cap_results(&self, message: &mut Message, cap: usize) -> usize {
        let counter = self.counter;
        let mut capped = 0;
        for part in &mut message.parts {
            let Part::ToolResult {
                content, layout, ..
            } = part
            else {
                continue;
            };
            let [Part::Text { text, .. }] = content.as_slice() else {
                continue;
            };
            let tokens = counter.count_text(text);
            // An output capped or cleared before is not cut again: its note (or placeholder) may
            // alone exceed a small cap.
            if tokens <= cap || is_capped(text) || note::is_cleared_output(text) {
                continue;
            }
            // A cap below the size of the omission note itself would lengthen the output.
            if let Some(short) = self
                .cap_text(text, cap, None)
                .filter(|s| counter.count_text(s) < tokens)
            {
                *content = vec![Part::text(short)];
                *layout = Layout::Text;
                capped += 1;
            }
        }
        capped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Tokenizer;

    proptest::proptest! {
        /// An output capped at caps in turn, with what was read of it at one cap kept for the
        /// next, is cut as it is at each cap alone: of lines or of one long line (cut in pieces
        /// by the cap), with tags the harness appended, with or without an archive reference.
        #[test]
        fn caps_tried_in_turn_cut_as_each_cap_alone(
            text in proptest::prop_oneof![
                "(src/[a-z]{1,6}\\.rs:[0-9]{1,3}|fn [a-z_]{1,8}\\(\\)|[a-z ]{0,30}|\n|<system-reminder>x</system-reminder>){1,40}",
                "([a-z]{1,9}_[0-9] |src/[a-z]{1,6}\\.rs ){10,80}\n?",
            ],
            caps in proptest::collection::vec(0_usize..400, 1..6),
            reference in proptest::option::of("archived in /a/b\\.jsonl, line [0-9]"),
        ) {
            let cutting = Cutting {
                counter: Tokenizer::O200k.counter(),
                archive: None,
            };
            let measured = Measured::default();
            for cap in caps {
                proptest::prop_assert_eq!(
                    cutting.cap_measured(&text, cap, reference.as_deref(), &measured),
                    cutting.cap_text(&text, cap, reference.as_deref()),
                    "cap {}", cap
                );
            }
        }
    }
}
