//! A conversation back into bytes: the request object in its own format, its messages rendered
//! on every core for long conversations and written in order.

use std::ops::Range;

use serde_json::Value;

use super::{Pretty, to_value, wire};
use crate::conversation::{Conversation, Layout, Message, Part, Warmth};
use crate::parallel;

/// Writes a conversation back as a JSON value in its own format.
pub fn render(conversation: &Conversation) -> Value {
    let wire = wire(conversation.format);
    let messages: Vec<Value> = conversation
        .messages
        .iter()
        .map(|m| to_value(|out| wire.write_message(m, out)))
        .collect();
    let Some(envelope) = &conversation.envelope else {
        return Value::Array(messages);
    };
    let mut envelope = envelope.clone();
    let list_key = conversation.format.list_key();
    if !is_text_input(conversation, envelope.get(list_key)) {
        envelope.insert(list_key.into(), Value::Array(messages));
    }
    if let Some(system) = &conversation.system {
        envelope.insert(
            wire.system_key().into(),
            to_value(|out| wire.write_system(system, out)),
        );
    }
    Value::Object(envelope)
}

/// Writes a conversation as pretty-printed JSON, ending in a newline, to `writer`: the bytes of
/// `serde_json::to_writer_pretty` of [`render`]'s value, produced without building that value
/// whole. Runs of messages are rendered on every core when there are enough of them, and
/// written in order as each is done; every message's bytes depend on that message alone, so
/// the output does not depend on the thread count.
///
/// # Errors
/// Whatever `writer` returns.
pub fn write(conversation: &Conversation, mut writer: impl std::io::Write) -> std::io::Result<()> {
    let mut out = Pretty::default();
    let Some(envelope) = &conversation.envelope else {
        write_messages(conversation, 0, &mut out, &mut writer)?;
        out.bytes.push(b'\n');
        return writer.write_all(&out.bytes);
    };
    let wire = wire(conversation.format);
    let (list_key, system_key) = (conversation.format.list_key(), wire.system_key());
    let system = conversation.system.as_ref();
    // The envelope's fields in order, the messages and the system prompt at their places, and
    // appended when the envelope lacks them.
    let mut fields: Vec<(&str, Field)> = envelope
        .iter()
        .map(|(key, value)| match system {
            _ if key == list_key && is_text_input(conversation, Some(value)) => {
                (key.as_str(), Field::Value(value))
            }
            _ if key == list_key => (key.as_str(), Field::Messages),
            Some(system) if key == system_key => (key.as_str(), Field::System(system)),
            _ => (key.as_str(), Field::Value(value)),
        })
        .collect();
    if !envelope.contains_key(list_key) {
        fields.push((list_key, Field::Messages));
    }
    if let Some(system) = system.filter(|_| !envelope.contains_key(system_key)) {
        fields.push((system_key, Field::System(system)));
    }
    if fields.is_empty() {
        out.bytes.extend_from_slice(b"{}\n");
        return writer.write_all(&out.bytes);
    }
    out.bytes.push(b'{');
    for (i, (key, field)) in fields.into_iter().enumerate() {
        out.bytes
            .extend_from_slice(if i == 0 { b"\n  " } else { b",\n  " });
        out.key_string(key);
        match field {
            Field::Messages => write_messages(conversation, 1, &mut out, &mut writer)?,
            Field::System(system) => {
                out.depth = 1;
                wire.write_system(system, &mut out);
            }
            Field::Value(value) => out.json(value, 1),
        }
    }
    out.bytes.extend_from_slice(b"\n}\n");
    writer.write_all(&out.bytes)
}

/// Whether the request's list field, as read, is a string (a Responses `input` of text) that
/// the conversation still is, whole: one user message of that text. It is then written back
/// as the string.
fn is_text_input(conversation: &Conversation, list: Option<&Value>) -> bool {
    let Some(Value::String(text)) = list else {
        return false;
    };
    match conversation.messages.as_slice() {
        [message] => {
            message.role == crate::conversation::Role::User
                && message.layout == Layout::Text
                && matches!(message.parts.as_slice(), [Part::Text { text: t, .. }] if t == text)
        }
        _ => false,
    }
}

/// A field of the request object as [`write`] writes it.
pub(super) enum Field<'a> {
    /// The message list, rendered message by message.
    Messages,
    /// The top-level system prompt, rendered.
    System(&'a Message),
    /// A field passed through as read.
    Value(&'a Value),
}

/// What rendering a message costs beyond its text, in bytes of text that cost as much (about
/// 2 µs: its wire object is walked and its keys written). A message's render weight is its text plus
/// this, so that a run of many short messages (cleared tool rounds) is cut like long ones.
pub(super) const RENDER_MESSAGE_BYTES: usize = 1 << 10;
/// Render weight of one rendering job: large enough that handing it out costs little, small
/// enough that the threads finish together.
pub(super) const RENDER_JOB_BYTES: usize = 64 << 10;
/// Rendered jobs that may wait to be written: they bound the output held in memory at once (a
/// few megabytes, against the whole output).
pub(super) const RENDER_JOBS_AHEAD: usize = 32;
/// Messages from which rendering is shared between threads whatever their text: fewer are
/// weighed first, and shared when they weigh more than a few jobs.
pub(super) const PARALLEL_RENDER_MESSAGES: usize = 256;
/// Most threads rendering uses.
pub(super) const RENDER_THREADS: usize = 8;

/// Writes the message list as it appears at nesting `depth`. Runs of messages of about
/// [`RENDER_JOB_BYTES`] are rendered on every core and written in order as they are done.
pub(super) fn write_messages(
    conversation: &Conversation,
    depth: usize,
    out: &mut Pretty,
    writer: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let messages = &conversation.messages;
    if messages.is_empty() {
        out.bytes.extend_from_slice(b"[]");
        return Ok(());
    }
    out.bytes.push(b'[');
    writer.write_all(&out.bytes)?;
    out.bytes.clear();
    let weight = |message: &Message| crate::tokens::text_bytes(message) + RENDER_MESSAGE_BYTES;
    let shared = messages.len() >= PARALLEL_RENDER_MESSAGES
        || messages.iter().map(weight).sum::<usize>() >= 4 * RENDER_JOB_BYTES;
    let threads = if shared {
        parallel::cores().min(RENDER_THREADS)
    } else {
        1
    };
    // Each job is a run of messages and its render weight, weighed as it is taken.
    let mut next = 0;
    let take = || {
        let start = next;
        let mut bytes = 0;
        while next < messages.len() && (next == start || bytes < RENDER_JOB_BYTES) {
            bytes += weight(&messages[next]);
            next += 1;
        }
        (next > start).then_some((start..next, bytes))
    };
    let format = conversation.format;
    let render = |(range, bytes): (Range<usize>, usize)| {
        let wire = wire(format);
        // The render weight is about the rendered bytes or more: the part seldom grows.
        let mut part = Pretty::default();
        part.bytes.reserve(bytes);
        part.depth = depth + 1;
        crate::conversation::warm(&messages[range.clone()], Warmth::Whole);
        for index in range {
            part.line(index == 0, depth + 1);
            wire.write_message(&messages[index], &mut part);
        }
        part.bytes
    };
    parallel::in_order(threads, RENDER_JOBS_AHEAD, take, render, |part| {
        writer.write_all(&part)
    })?;
    out.close(false, depth, b']');
    Ok(())
}
