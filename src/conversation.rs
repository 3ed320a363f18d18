//! The neutral conversation model that every stage reads.
//!
//! A [`Conversation`] is a list of [`Message`]s, each a [`Role`] and a list of [`Part`]s. The
//! model keeps every field the engine does not interpret: a message's and a part's `extra` map
//! is the wire object as it was read, except that the values of the fields the engine interprets
//! (content, text, arguments, input) were moved into the parts, leaving a `null` to hold their
//! place. Rendering writes `extra`'s fields with the interpreted ones back in their places
//! (without copying `extra`). So parse → render returns the same JSON value with the same key
//! order, and an untouched message leaves byte-for-byte as it came.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Lists every format: its variant, its name as the CLI and the report spell it, its name in
/// prose, its message list's key in a request body, and what it is. Adding a format is one line here and one in `format::reader`.
macro_rules! formats {
    ($($(#[doc = $doc:literal])+ $variant:ident = $name:literal ($title:literal) [$list:literal],)+) => {
        /// A format a conversation can be read from. The first six are API request bodies (or,
        /// for the AI SDK, an SDK's message list) and are also written; session logs are read
        /// into the API format they hold.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Format {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl Format {
            /// Every format, in the order the CLI lists them.
            pub const ALL: &'static [Format] = &[$(Format::$variant,)+];

            /// The format's name as the CLI and the report spell it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Format::$variant => $name,)+
                }
            }

            /// The format's name as prose spells it (`OpenAI`, `Claude Code`).
            pub fn title(self) -> &'static str {
                match self {
                    $(Format::$variant => $title,)+
                }
            }

            /// The request body's key that holds the message list (`messages`, `input`,
            /// `contents`): where [`render`](crate::format::render) puts the messages when the
            /// conversation has an envelope (for a session log, the key of the API format it is
            /// read as). Message `i` of a conversation read from a body is element `i` of this
            /// list.
            pub fn list_key(self) -> &'static str {
                match self {
                    $(Format::$variant => $list,)+
                }
            }
        }
    };
}

formats! {
    /// OpenAI Chat Completions (`messages` with `tool_calls` and `role: "tool"`).
    OpenAi = "openai" ("OpenAI") ["messages"],
    /// Anthropic Messages (top-level `system`, `tool_use` and `tool_result` blocks).
    Anthropic = "anthropic" ("Anthropic") ["messages"],
    /// OpenAI Responses API input items (`function_call` and `function_call_output`).
    Responses = "responses" ("OpenAI Responses") ["input"],
    /// Gemini API `contents` (`functionCall` and `functionResponse` parts).
    Gemini = "gemini" ("Gemini") ["contents"],
    /// AWS Bedrock Converse (`toolUse` and `toolResult` blocks).
    Bedrock = "bedrock" ("Bedrock") ["messages"],
    /// The Vercel AI SDK's `ModelMessage` list (`tool-call` and `tool-result` parts).
    AiSdk = "ai-sdk" ("AI SDK") ["messages"],
    /// Claude Code session JSONL, read as Anthropic Messages.
    ClaudeCode = "claude-code" ("Claude Code") ["messages"],
    /// Codex rollout JSONL, read as Responses input.
    Codex = "codex" ("Codex") ["input"],
    /// Gemini CLI session files, read as Gemini contents.
    GeminiCli = "gemini-cli" ("Gemini CLI") ["contents"],
    /// pi session JSONL, read as Anthropic Messages.
    Pi = "pi" ("pi") ["messages"],
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .copied()
            .find(|format| format.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|f| f.as_str()).collect();
                format!("unknown format `{name}` (expected {})", names.join(", "))
            })
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Who wrote a message. OpenAI's `developer` role reads as [`Role::System`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Instructions: `system` or `developer`, or Anthropic's top-level `system`.
    System,
    /// The user (in Anthropic format, also the carrier of tool results).
    User,
    /// The model.
    Assistant,
    /// A message of its own carrying one tool result (OpenAI `tool` messages, Responses
    /// `function_call_output` items).
    Tool,
}

impl Role {
    /// The role's canonical wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }
}

/// How a content field was written on the wire, so rendering writes it back the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A bare string.
    Text,
    /// An array of typed blocks.
    Blocks,
    /// JSON `null`.
    Null,
    /// The field was absent.
    Absent,
}

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text the model reads.
    Text {
        /// The text.
        text: String,
        /// The wire block as read (empty when the content was a bare string).
        extra: Map<String, Value>,
    },
    /// A tool call made by the assistant.
    ToolCall {
        /// The call id that results refer to.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments: a JSON-encoded string (OpenAI) or a JSON object (Anthropic).
        arguments: Value,
        /// The wire object as read.
        extra: Map<String, Value>,
    },
    /// The result of a tool call.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// The result's content: text and opaque parts.
        content: Vec<Part>,
        /// How the result's content was written.
        layout: Layout,
        /// Whether the tool reported an error (Anthropic `is_error`).
        is_error: bool,
        /// The wire block as read (empty for OpenAI tool messages).
        extra: Map<String, Value>,
    },
    /// A block the engine does not interpret (image, document, thinking, …), kept as is.
    Opaque(Value),
}

impl Part {
    /// A plain text part with no wire block of its own.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            extra: Map::new(),
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its content, tool calls and tool results, in wire order.
    pub parts: Vec<Part>,
    /// How its `content` field was written.
    pub layout: Layout,
    /// The wire object as read (interpreted values moved into `parts`); fields the engine does
    /// not interpret pass through from here.
    pub extra: Map<String, Value>,
    /// Set by a session-log reader when the log's own metadata says the agent's harness wrote
    /// this user message, not a person: the agent and the metadata that says so (Claude Code
    /// `isMeta`, `isCompactSummary`, `toolUseResult`). The classifier reads it before any text
    /// pattern; it is never written to the wire.
    pub harness: Option<(&'static str, &'static str)>,
}

impl Message {
    /// A new message of plain text, with `role` as its only wire field so far.
    pub fn new_text(role: Role, text: impl Into<String>) -> Self {
        let mut extra = Map::new();
        extra.insert("role".into(), Value::String(role.as_str().into()));
        Self {
            role,
            parts: vec![Part::text(text)],
            layout: Layout::Text,
            extra,
            harness: None,
        }
    }

    /// The ids of the tool calls this message makes, in order.
    pub fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// The ids of the tool results this message carries, in order.
    pub fn result_ids(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
    }

    /// Whether the message makes at least one tool call.
    pub fn has_calls(&self) -> bool {
        self.call_ids().next().is_some()
    }

    /// Whether the message carries at least one tool result.
    pub fn has_results(&self) -> bool {
        self.result_ids().next().is_some()
    }

    /// The concatenated text of the message's text parts.
    pub fn text(&self) -> String {
        joined_text(&self.parts).into_owned()
    }
}

/// Messages [`Ahead`] warms at once: some tens of independent loads.
const WARM_MESSAGES: usize = 32;

/// Warms the messages of a pass that walks them in order, a batch of [`WARM_MESSAGES`]
/// ahead of where it is ([`warm`]).
pub(crate) struct Ahead<'a> {
    messages: &'a [Message],
    warmth: Warmth,
    /// Messages before this one are warmed.
    warmed: usize,
}

impl<'a> Ahead<'a> {
    /// A pass over `messages` that warms them as `warmth` says.
    pub(crate) fn new(messages: &'a [Message], warmth: Warmth) -> Self {
        Self {
            messages,
            warmth,
            warmed: 0,
        }
    }

    /// The pass is at message `index`: warms what lies within a batch after it.
    pub(crate) fn reach(&mut self, index: usize) {
        while self.warmed < self.messages.len() && index + WARM_MESSAGES >= self.warmed {
            let upto = (self.warmed + WARM_MESSAGES).min(self.messages.len());
            warm(&self.messages[self.warmed..upto], self.warmth);
            self.warmed = upto;
        }
    }
}

/// What [`warm`] reads of each message, each level adding to the one before.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Warmth {
    /// Its parts and their call and result ids: what the pairing check reads.
    Ids,
    /// Also its texts and tool names: what planning reads.
    Texts,
    /// Also its wire fields (keys and string values): what rendering reads.
    Whole,
}

/// Reads the first byte of what `messages` point to, as far as `warmth` says, so that a pass
/// over messages last read long ago (while counting) finds them in cache. These loads do not
/// depend on one another, so the processor fetches them together; the pass itself reaches
/// each only after the one before.
pub(crate) fn warm(messages: &[Message], warmth: Warmth) {
    let first = |text: &str| text.as_bytes().first().copied().unwrap_or(0);
    let text = |text: &str| {
        if warmth >= Warmth::Texts {
            first(text)
        } else {
            0
        }
    };
    let in_parts = |parts: &[Part]| -> u8 {
        parts.iter().fold(0, |seen, part| {
            seen ^ match part {
                Part::Text { text: words, .. } => text(words),
                Part::ToolCall { id, name, .. } => first(id) ^ text(name),
                Part::ToolResult {
                    call_id, content, ..
                } => {
                    let texts = content.iter().fold(0, |seen, part| match part {
                        Part::Text { text: words, .. } => seen ^ text(words),
                        _ => seen,
                    });
                    first(call_id) ^ texts
                }
                Part::Opaque(_) => 0,
            }
        })
    };
    let seen = messages.iter().fold(0, |seen, message| {
        let wire = match warmth {
            Warmth::Ids | Warmth::Texts => 0,
            Warmth::Whole => message.extra.iter().fold(0, |seen, (key, value)| {
                seen ^ first(key) ^ value.as_str().map_or(0, first)
            }),
        };
        seen ^ wire ^ in_parts(&message.parts)
    });
    std::hint::black_box(seen);
}

/// The concatenated text of the text parts among `parts`: borrowed when there is one.
pub(crate) fn joined_text(parts: &[Part]) -> Cow<'_, str> {
    let mut texts = parts.iter().filter_map(|part| match part {
        Part::Text { text, .. } => Some(text.as_str()),
        _ => None,
    });
    let Some(first) = texts.next() else {
        return Cow::Borrowed("");
    };
    match texts.next() {
        None => Cow::Borrowed(first),
        Some(second) => {
            let mut out = format!("{first}{second}");
            texts.for_each(|text| out.push_str(text));
            Cow::Owned(out)
        }
    }
}

/// A whole conversation in the neutral model, with what it needs to be rendered back.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The wire format it is written in: the format it was read from, or for a session log
    /// the API format the log holds.
    pub format: Format,
    /// A system prompt that sits outside the messages (Anthropic and Bedrock `system`, Gemini
    /// `systemInstruction`); `None` in formats whose system messages sit in the list.
    pub system: Option<Message>,
    /// The messages, in wire order: index `i` here is index `i` of the input's `messages`.
    pub messages: Vec<Message>,
    /// The top-level request object as read (`None` for a bare array of messages).
    pub envelope: Option<Map<String, Value>>,
    /// For a conversation read from a session log, the log line each message came from (so
    /// that problems name it); empty otherwise, and after anything removed messages.
    pub lines: Vec<usize>,
    /// For a conversation read from a session log, what its reader repaired so that it reads
    /// as the agent sent it, in log order; empty otherwise.
    pub repairs: Vec<Repair>,
}

impl Conversation {
    /// The same request (format, system prompt, envelope) holding `messages` instead; what was
    /// read of a log (its lines, its repairs) does not carry over.
    pub(crate) fn with_messages(&self, messages: Vec<Message>) -> Conversation {
        Conversation {
            format: self.format,
            system: self.system.clone(),
            messages,
            envelope: self.envelope.clone(),
            lines: Vec::new(),
            repairs: Vec::new(),
        }
    }

    /// The model the request body names (its `model` field), if any: what the proxy and the
    /// CLI count and compact it for when no model is given.
    #[must_use]
    pub fn model(&self) -> Option<&str> {
        self.envelope.as_ref().and_then(named_model)
    }
}

/// The model a request body's top-level object names: its `model` string.
pub(crate) fn named_model(body: &Map<String, Value>) -> Option<&str> {
    body.get("model").and_then(Value::as_str)
}

/// A change a session-log reader made so that the log reads as the agent would have sent it,
/// or a call it left as it is because it is still in progress (`kind` `call_in_progress`).
///
/// Kinds: `interrupted_call` (a call whose result was never logged gets the agent's own
/// interruption result), `duplicate_result` (a result logged again, identical, read once),
/// `differing_duplicate_result` (a second, different result of a call: the first is kept, this
/// one dropped), `result_without_call` (a leading result whose call is in an earlier file of the
/// session, dropped), `null_arguments` (a call's `null` arguments read as `{}`) and
/// `call_in_progress` (a call unanswered at the very end of the log: it stays, pinned in the
/// last unit; reading it with `strict` is no error) and `missing_first_request` (a log that
/// opens with the model's message, its prompt not logged: read as it is, and, in a format whose
/// first message must be a user message, given the one the agent sends in its place).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Repair {
    /// The log line of the record repaired (for an added result, the line of its call).
    pub line: usize,
    /// What was repaired (see above).
    pub kind: &'static str,
    /// The tool call it concerns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl Repair {
    /// The kind of a call left in progress: named, but no repair of the log.
    pub const IN_PROGRESS: &'static str = "call_in_progress";
    /// The kind of a log that opens with the model's message, its first request missing.
    pub const MISSING_FIRST_REQUEST: &'static str = "missing_first_request";

    /// Whether this changed what was read (every kind but the call in progress).
    pub fn changed(&self) -> bool {
        self.kind != Self::IN_PROGRESS
    }
}
