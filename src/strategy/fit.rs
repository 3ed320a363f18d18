//! Fitting a round's outputs into the room the budget leaves: when clearing a round's outputs
//! whole would free more than the budget needs, they are capped instead — head and tail kept,
//! the cut named — at one cap, the largest that fits, so that the output uses its budget rather
//! than fall short of it. Also the one way an output is cut to a cap ([`cap_text`]).

use crate::conversation::{Layout, Part};
use crate::note;
use crate::tokens::TokenCounter;

use super::Applied;

/// A cap below this many tokens keeps too little of an output to be worth more than its
/// placeholder: the round is cleared instead.
const MIN_CAP: usize = 48;
/// Times the cap is corrected after an exact count shows it overshoots the room or leaves
/// some of it.
const ROUNDS: usize = 6;

/// One message of a fitted round: its index, the capped text of each of its outputs (by part),
/// and its exact count once they are in place.
pub(super) type Capped = (usize, Vec<(usize, String)>, usize);

/// Caps the outputs at `outputs` (message and part indices, ascending, each a result whose
/// content is a single text) so that the messages holding them take at most `room` tokens
/// together. `None` when no cap of at least [`MIN_CAP`] tokens fits, or an output cannot be
/// cut: the caller clears them instead.
pub(super) fn cap_outputs(
    state: &Applied,
    outputs: &[(usize, usize)],
    room: usize,
    counter: &dyn TokenCounter,
) -> Option<Vec<Capped>> {
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
    let mut held: Vec<usize> = outputs.iter().map(|&(m, _)| m).collect();
    held.dedup();
    let before: usize = held.iter().map(|&m| state.counts.messages[m]).sum();
    let base = before.saturating_sub(texts.iter().map(|(_, t)| t).sum::<usize>());
    let avail = room.checked_sub(base)?;
    // The largest cap whose estimate fits: each output over it costs the cap, its note
    // included ([`cap_text`]).
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
    let mut best: Option<(usize, Vec<Capped>)> = None;
    for _ in 0..ROUNDS {
        if cap < MIN_CAP {
            break;
        }
        let mut fitted: Vec<Capped> = Vec::with_capacity(held.len());
        let (mut capped, mut after) = (0, 0);
        for &message in &held {
            let mut copy = messages[message].clone();
            let mut parts = Vec::new();
            for (&(_, part), &(text, tokens)) in outputs
                .iter()
                .zip(&texts)
                .filter(|((m, _), _)| *m == message)
            {
                if tokens <= cap {
                    continue;
                }
                let short = cap_text(text, cap, counter)?;
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
        if after <= room && after < before {
            let slack = room - after;
            let better = best.as_ref().is_none_or(|(tokens, _)| after > *tokens);
            if better {
                best = Some((after, fitted));
            }
            // Within a token an output of the room: done; else try a larger cap.
            if slack <= capped || !better {
                break;
            }
            cap += slack / capped.max(1);
            continue;
        }
        if best.is_some() {
            break;
        }
        // Lower the cap by each capped output's share of the overshoot.
        let over = after.saturating_sub(room).max(1);
        cap = cap.saturating_sub(over.div_ceil(capped.max(1)) + 1);
    }
    best.map(|(_, fitted)| fitted)
}

/// Characters per piece when a capped output has too few lines to cut by line.
const CHUNK_CHARS: usize = 200;

/// Keeps the head and tail lines of `text` within about `cap` tokens, with a line saying how
/// many were omitted between them. An output of one or two long lines is cut the same way in
/// pieces of [`CHUNK_CHARS`] characters. `None` when there is nothing to cut.
pub(super) fn cap_text(text: &str, cap: usize, counter: &dyn TokenCounter) -> Option<String> {
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
    let costs: Vec<usize> = pieces
        .iter()
        .map(|piece| counter.count_text(piece))
        .collect();
    let note_cost = counter.count_text(&note::omitted(text.len(), text.len(), unit)) + 1;
    let mut room = cap.saturating_sub(note_cost);
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
    let kept_head = pieces[..head].concat();
    let kept_tail = pieces[pieces.len() - tail..].concat();
    let (omitted, total) = if unit == "lines" {
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
    out.push_str(&note::omitted(omitted, total, unit));
    out.push('\n');
    out.push_str(&kept_tail);
    Some(out)
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
