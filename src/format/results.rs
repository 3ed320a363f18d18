//! Where an API format puts the results of a message's calls, and so which messages after a
//! calling message belong with it: each wire names its placement, and each placement's window
//! is found here once.

use std::ops::Range;

use crate::conversation::{Message, Role};

/// Where a format puts the results of the calls a message makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// In the run of `tool` messages right after it (OpenAI Chat, the AI SDK).
    ToolMessages,
    /// In the next message, a user turn (Anthropic, Bedrock Converse, Gemini).
    NextUserTurn,
    /// In output items answering its call items by id, which may come after notes in between
    /// (the Responses API).
    OutputItems,
}

/// The messages after `index` that carry the results of its calls, as `placement` places
/// them. Empty when message `index` makes none.
pub(crate) fn window(placement: Placement, messages: &[Message], index: usize) -> Range<usize> {
    let start = index + 1;
    match placement {
        Placement::OutputItems => super::responses::output_items_window(messages, index),
        _ if !messages.get(index).is_some_and(Message::has_calls) => start..start,
        Placement::ToolMessages => {
            let run = messages[start..]
                .iter()
                .take_while(|m| m.role == Role::Tool)
                .count();
            start..start + run
        }
        Placement::NextUserTurn => match messages.get(start) {
            Some(next) if next.role == Role::User => start..start + 1,
            _ => start..start,
        },
    }
}
