//! Property tests of the invariants over generated conversations (issue 5).
//!
//! The generators build *valid* conversations in both formats from a small abstract [`Spec`]:
//! system prompts (none, one, several), user and assistant text, tool rounds of 1–4 parallel
//! calls with their results in any order, error results, empty and whitespace content,
//! multi-byte text and emoji, very long messages, opaque blocks (images, thinking, refusals) and
//! unknown fields at the top level, on messages and on blocks. Every property then runs over
//! conversations × strategies (auto, middle, oldest, relevant) × tool modes (clear, drop, off) × budgets
//! from 1% to 120% of the total, mostly with the fast `chars` tokenizer and a share with o200k.
//!
//! Case counts keep the whole file to seconds in a debug build; the ignored test
//! `every_property_holds_with_fifty_times_the_cases` runs the same properties with [`DEEP`]
//! times as many (`cargo test --test integration properties -- --ignored`). Failing cases are
//! kept in `tests/properties/regressions.txt` and replayed first on every run.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ops::Range;
use std::process::Command;

use ctxcompact::format::Layout;
use ctxcompact::format::{self, Format};
use ctxcompact::report::{Action, Protection, Step};
use ctxcompact::{
    Budget, Compacted, Conversation, MarkerMode, Message, Options, Part, Report, Role,
    Strategy as Removal, Tokenizer, ToolMode, ToolOptions,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{FileFailurePersistence, TestCaseError};
use serde_json::{Map, Value, json};

/// Cases of the cheaper properties per run; the costlier ones take a fraction of it.
const CASES: u32 = 256;
/// How many times more cases the ignored deep run takes.
const DEEP: u32 = 50;
/// Where failing cases are kept (and replayed from), inside the tests' own folder.
const REGRESSIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/properties/regressions.txt"
);
/// Every note the engine writes starts with this.
const NOTE: &str = "[ctxcompact:";

thread_local! {
    /// Multiplies every property's case count (the deep run sets it on its own thread).
    static SCALE: Cell<u32> = const { Cell::new(1) };
}

/// The proptest settings of a property run with `cases` cases (times the deep run's scale).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: cases * SCALE.with(Cell::get),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(REGRESSIONS))),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

/// Pieces of generated text: ASCII, accents, combining marks, CJK, Hangul, emoji with ZWJ
/// sequences and flags, quotes and escapes. None starts with `[`, so no generated text can be
/// taken for one of the engine's notes.
const FRAGMENTS: &[&str] = &[
    "hello",
    " ",
    "world",
    "héllo",
    "wörld",
    "naïve",
    "e\u{301}",
    "日本語",
    "中文",
    "한국어",
    "🦀",
    "🎉",
    "👩\u{200d}💻",
    "👨\u{200d}👩\u{200d}👧",
    "🇫🇷",
    "Ω≈ç√",
    "\n",
    "\t",
    "0",
    "42",
    ".",
    ", ",
    "\"quoted\"",
    "back\\slash",
    "{\"json\": 1}",
    "\u{feff}",
];

/// Pieces repeated into very long messages.
const LONG_PIECES: &[&str] = &[
    "lorem ipsum dolor sit amet ",
    "日本語のテキスト、",
    "🦀🎉 ",
    "x",
];

/// Tool names; the tool-trimming property excludes some of them.
const TOOLS: &[&str] = &["read_file", "ls", "grep", "bash", "web_search"];

/// Call id prefixes; ids are made unique by a counter after the prefix.
const ID_PREFIXES: &[&str] = &["call_", "toolu_01", "c", "id-日本-"];

/// Text of a message or block: mostly short mixed text, sometimes empty, whitespace or very long.
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        8 => vec(select(FRAGMENTS), 1..24).prop_map(|pieces| pieces.concat()),
        1 => Just(String::new()),
        1 => select(&[" ", "  \n\t ", "\n\n"][..]).prop_map(String::from),
        1 => (select(LONG_PIECES), 200usize..2500).prop_map(|(piece, n)| piece.repeat(n)),
    ]
    .boxed()
}

/// Text and how it is written: a bare string or a text block, and whether the block carries an
/// unknown field.
#[derive(Debug, Clone)]
struct Body {
    text: String,
    blocks: bool,
    extra: bool,
}

fn body() -> impl Strategy<Value = Body> {
    (text(), prop::bool::weighted(0.3), prop::bool::weighted(0.3)).prop_map(
        |(text, blocks, extra)| Body {
            text,
            blocks,
            extra,
        },
    )
}

/// A JSON listing, as a lookup or a search returns: records of a code, a number and a text,
/// sometimes nested, which a cap cuts to its gist.
fn listing() -> impl Strategy<Value = Body> {
    let record = (
        0u32..1000,
        vec(select(FRAGMENTS), 0..4).prop_map(|pieces| pieces.concat()),
        any::<bool>(),
    )
        .prop_map(|(n, note, nested)| {
            let code = format!("HAT{n:03}");
            if nested {
                json!({"code": code, "detail": {"seats": n % 7, "note": note}})
            } else {
                json!({"code": code, "price": n, "note": note})
            }
        });
    (vec(record, 4..120), prop::bool::weighted(0.3)).prop_map(|(records, blocks)| Body {
        text: Value::Array(records).to_string(),
        blocks,
        extra: false,
    })
}

/// One tool call and its result.
#[derive(Debug, Clone)]
struct Call {
    tool: &'static str,
    argument: String,
    /// `None`: the result has no content field at all.
    result: Option<Body>,
    /// Anthropic `is_error`: `None` leaves the field out.
    is_error: Option<bool>,
    /// An image beside the result's text (Anthropic block content).
    image: bool,
}

fn call() -> impl Strategy<Value = Call> {
    (
        select(TOOLS),
        vec(select(FRAGMENTS), 0..6).prop_map(|pieces| pieces.concat()),
        prop::option::weighted(0.9, prop_oneof![9 => body(), 1 => listing()]),
        prop::option::of(any::<bool>()),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(tool, argument, result, is_error, image)| Call {
            tool,
            argument,
            result,
            is_error,
            image,
        })
}

/// One step of a conversation, before it is written in a format.
#[derive(Debug, Clone)]
enum Turn {
    /// A user message; `image` adds an opaque image block.
    User {
        body: Body,
        image: bool,
        extra: bool,
    },
    /// An assistant message; `opaque` adds a thinking block (Anthropic) or a refusal (OpenAI).
    Assistant {
        body: Body,
        opaque: bool,
        extra: bool,
    },
    /// A mid-conversation system message (OpenAI `developer`; Anthropic has none: skipped).
    System { body: Body },
    /// A tool round: calls, then their results in rotated order; in Anthropic the result
    /// carrier may also hold user text.
    Round {
        text: Option<Body>,
        thinking: bool,
        calls: Vec<Call>,
        rotate: usize,
        user_text: Option<Body>,
        extra: bool,
    },
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        3 => (body(), prop::bool::weighted(0.15), prop::bool::weighted(0.2))
            .prop_map(|(body, image, extra)| Turn::User { body, image, extra }),
        3 => (body(), prop::bool::weighted(0.2), prop::bool::weighted(0.2))
            .prop_map(|(body, opaque, extra)| Turn::Assistant { body, opaque, extra }),
        1 => body().prop_map(|body| Turn::System { body }),
        4 => (
            prop::option::weighted(0.4, body()),
            prop::bool::weighted(0.2),
            vec(call(), 1..=4),
            0usize..4,
            prop::option::weighted(0.3, body()),
            prop::bool::weighted(0.2),
        )
            .prop_map(|(text, thinking, calls, rotate, user_text, extra)| Turn::Round {
                text,
                thinking,
                calls,
                rotate,
                user_text,
                extra,
            }),
    ]
}

/// A whole conversation before it is written in a format.
#[derive(Debug, Clone)]
struct Spec {
    format: Format,
    /// System prompts at the head (OpenAI messages, or Anthropic's top-level `system`).
    system: Vec<Body>,
    /// 0: a bare array where possible; 1: `{"messages": …}`; 2: with unknown top-level fields.
    envelope: u8,
    turns: Vec<Turn>,
    id_prefix: &'static str,
}

fn spec(format: Format) -> impl Strategy<Value = Spec> {
    (
        vec(body(), 0..=3),
        0u8..3,
        vec(turn(), 0..14),
        select(ID_PREFIXES),
    )
        .prop_map(move |(system, envelope, turns, id_prefix)| Spec {
            format,
            system,
            envelope,
            turns,
            id_prefix,
        })
}

/// A generated conversation: its wire JSON and its format.
#[derive(Debug, Clone)]
struct Generated {
    format: Format,
    value: Value,
}

impl Generated {
    /// The conversation as the library reads it.
    fn parse(&self) -> Conversation {
        format::parse_value(self.value.clone(), Some(self.format))
            .unwrap_or_else(|err| panic!("a generated conversation must parse: {err}"))
    }
}

/// Long plain chats: many short user and assistant turns, no system prompt, no tools (the
/// conversations no selector rule matches, so both strategies are scored).
fn chat(format: Format) -> impl Strategy<Value = Spec> {
    let short = vec(select(FRAGMENTS), 1..12).prop_map(|pieces| Body {
        text: pieces.concat(),
        blocks: false,
        extra: false,
    });
    (vec(short, 16..48), 0u8..3).prop_map(move |(bodies, envelope)| Spec {
        format,
        system: Vec::new(),
        envelope,
        turns: bodies
            .into_iter()
            .enumerate()
            .map(|(i, body)| {
                let (image, opaque, extra) = (false, false, false);
                if i % 2 == 0 {
                    Turn::User { body, image, extra }
                } else {
                    Turn::Assistant {
                        body,
                        opaque,
                        extra,
                    }
                }
            })
            .collect(),
        id_prefix: "call_",
    })
}

/// Valid conversations in every wire format: OpenAI and Anthropic written directly, Responses
/// from the OpenAI shape, Gemini and Bedrock from the Anthropic shape.
fn conversation() -> impl Strategy<Value = Generated> {
    let direct = |spec: Spec| Generated {
        format: spec.format,
        value: build(&spec),
    };
    let to = |format: Format, convert: fn(Value) -> Value| {
        move |spec: Spec| Generated {
            format,
            value: convert(build(&spec)),
        }
    };
    prop_oneof![
        3 => spec(Format::OpenAi).prop_map(direct),
        3 => spec(Format::Anthropic).prop_map(direct),
        1 => chat(Format::OpenAi).prop_map(direct),
        1 => chat(Format::Anthropic).prop_map(direct),
        2 => spec(Format::OpenAi).prop_map(to(Format::Responses, as_responses)),
        1 => spec(Format::OpenAi).prop_map(to(Format::Responses, as_codex_code_mode)),
        2 => spec(Format::Anthropic).prop_map(to(Format::Gemini, as_gemini)),
        2 => spec(Format::Anthropic).prop_map(to(Format::Bedrock, as_bedrock)),
    ]
}

/// The messages of a built conversation and, for a body, the body without them.
fn split(value: Value) -> (Option<Map<String, Value>>, Vec<Value>) {
    match value {
        Value::Array(messages) => (None, messages),
        Value::Object(mut top) => {
            let messages = match top.get_mut("messages").map(Value::take) {
                Some(Value::Array(messages)) => messages,
                _ => Vec::new(),
            };
            (Some(top), messages)
        }
        _ => unreachable!("build writes an array or an object"),
    }
}

/// Puts converted messages back under `key`, keeping the body's other fields in order.
fn join(top: Option<Map<String, Value>>, key: &str, items: Vec<Value>) -> Value {
    let Some(top) = top else {
        return Value::Array(items);
    };
    let mut out = Map::new();
    for (name, value) in top {
        if name == "messages" {
            out.insert(key.into(), Value::Array(items.clone()));
        } else {
            out.insert(name, value);
        }
    }
    Value::Object(out)
}

/// An OpenAI content field as Responses content: text parts become `input_text` (or
/// `output_text` for the assistant), images `input_image`.
fn responses_content(content: &Value, assistant: bool) -> Value {
    let Value::Array(parts) = content else {
        return content.clone();
    };
    let parts = parts
        .iter()
        .map(|part| {
            let mut part = part.clone();
            match part["type"].as_str() {
                Some("text") => {
                    part["type"] = json!(if assistant {
                        "output_text"
                    } else {
                        "input_text"
                    });
                }
                Some("image_url") => {
                    part = json!({"type": "input_image", "image_url": part["image_url"]["url"]});
                }
                _ => {}
            }
            part
        })
        .collect();
    Value::Array(parts)
}

/// An OpenAI Chat conversation as Responses input items.
fn as_responses(value: Value) -> Value {
    let (top, messages) = split(value);
    let mut items = Vec::new();
    for mut message in messages {
        let role = message["role"].as_str().unwrap_or_default().to_string();
        if role == "tool" {
            let output = message
                .get("content")
                .map_or_else(|| json!(""), |c| responses_content(c, false));
            items.push(json!({"type": "function_call_output", "call_id": message["tool_call_id"], "output": output}));
            continue;
        }
        let object = message.as_object_mut().unwrap();
        object.shift_remove("name");
        let calls = object.shift_remove("tool_calls");
        let content = object.get("content").cloned().unwrap_or(Value::Null);
        if !content.is_null() || calls.is_none() {
            let content = if content.is_null() {
                json!("")
            } else {
                content
            };
            object.insert(
                "content".into(),
                responses_content(&content, role == "assistant"),
            );
            items.push(message);
        }
        for call in calls.iter().flat_map(|c| c.as_array().unwrap()) {
            items.push(json!({"type": "function_call", "call_id": call["id"], "name": call["function"]["name"], "arguments": call["function"]["arguments"]}));
        }
    }
    join(top, "input", items)
}

/// An OpenAI Chat conversation as Codex 0.169 sends it by default (code mode): Responses items
/// with the tool definitions as an `additional_tools` item first, calls as freeform
/// `custom_tool_call`s with their outputs as `input_text` parts, and a `configuration_update`
/// after the first user message.
fn as_codex_code_mode(value: Value) -> Value {
    let (top, items) = split_input(as_responses(value));
    let tools = json!({"type": "additional_tools", "role": "developer", "tools": [
        {"type": "namespace", "name": "functions", "description": "", "tools": [
            {"type": "custom", "name": "exec", "description": "Run JavaScript calling nested tools",
             "format": {"type": "grammar", "syntax": "lark", "definition": "start: /[\\s\\S]+/"}}]}]});
    let mut out = vec![tools];
    let mut updated = false;
    for mut item in items {
        let kind = item["type"].as_str().unwrap_or_default().to_string();
        let object = item.as_object_mut().unwrap();
        if kind == "function_call" {
            object.insert("type".into(), json!("custom_tool_call"));
            let arguments = object.shift_remove("arguments").unwrap_or(json!(""));
            object.insert("input".into(), arguments);
        } else if kind == "function_call_output" {
            object.insert("type".into(), json!("custom_tool_call_output"));
            if let Some(Value::String(text)) = object.get("output").cloned() {
                object.insert(
                    "output".into(),
                    json!([{"type": "input_text", "text": text}]),
                );
            }
        }
        let user = object.get("role").and_then(Value::as_str) == Some("user");
        out.push(item);
        if user && !updated {
            out.push(json!({"type": "configuration_update", "reasoning": {"effort": "low"}}));
            updated = true;
        }
    }
    join_input(top, out)
}

/// A Responses body or item list as its envelope and items.
fn split_input(value: Value) -> (Option<Map<String, Value>>, Vec<Value>) {
    match value {
        Value::Array(items) => (None, items),
        Value::Object(mut top) => match top.get_mut("input").map(Value::take) {
            Some(Value::Array(items)) => (Some(top), items),
            _ => (Some(top), Vec::new()),
        },
        _ => unreachable!("as_responses writes an array or an object"),
    }
}

/// Puts items back under `input`, in the body's place for it.
fn join_input(top: Option<Map<String, Value>>, items: Vec<Value>) -> Value {
    match top {
        None => Value::Array(items),
        Some(mut top) => {
            top.insert("input".into(), Value::Array(items));
            Value::Object(top)
        }
    }
}

/// Anthropic content as Gemini parts; `names` maps call ids to tool names for the results.
fn gemini_parts(
    content: &Value,
    names: &mut BTreeMap<String, String>,
    with_ids: bool,
) -> Vec<Value> {
    let Value::Array(blocks) = content else {
        return vec![json!({"text": content})];
    };
    blocks
        .iter()
        .map(|block| match block["type"].as_str() {
            Some("thinking") => json!({"text": block["thinking"], "thought": true, "thoughtSignature": block["signature"]}),
            Some("image") => json!({"inlineData": {"mimeType": block["source"]["media_type"], "data": block["source"]["data"]}}),
            Some("tool_use") => {
                let id = block["id"].as_str().unwrap().to_string();
                names.insert(id.clone(), block["name"].as_str().unwrap().to_string());
                let mut call = json!({"name": block["name"], "args": block["input"]});
                if with_ids {
                    call["id"] = json!(id);
                }
                json!({"functionCall": call, "thoughtSignature": "c2ln"})
            }
            Some("tool_result") => {
                let id = block["tool_use_id"].as_str().unwrap();
                let text = match &block["content"] {
                    Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<String>(),
                    Value::String(text) => text.clone(),
                    _ => String::new(),
                };
                let key = if block["is_error"] == json!(true) { "error" } else { "output" };
                let mut response = json!({"name": names[id], "response": {key: text}});
                if with_ids {
                    response["id"] = json!(id);
                }
                json!({"functionResponse": response})
            }
            _ => {
                let mut part = block.clone();
                part.as_object_mut().unwrap().shift_remove("type");
                part
            }
        })
        .collect()
}

/// An Anthropic conversation as Gemini contents; calls carry ids in half the conversations.
fn as_gemini(value: Value) -> Value {
    let (top, messages) = split(value);
    let with_ids = messages.len() % 2 == 0;
    let mut names = BTreeMap::new();
    let contents = messages
        .iter()
        .map(|message| {
            let role = if message["role"] == json!("assistant") {
                "model"
            } else {
                "user"
            };
            json!({"role": role, "parts": gemini_parts(&message["content"], &mut names, with_ids)})
        })
        .collect();
    let mut out = join(top, "contents", contents);
    if let Some(system) = out.as_object_mut().and_then(|o| o.shift_remove("system")) {
        let parts = gemini_parts(&system, &mut names, with_ids);
        out["systemInstruction"] = json!({"parts": parts});
    }
    out
}

/// Anthropic content as Bedrock blocks.
fn bedrock_blocks(content: &Value) -> Vec<Value> {
    let Value::Array(blocks) = content else {
        return vec![json!({"text": content})];
    };
    blocks
        .iter()
        .map(|block| match block["type"].as_str() {
            Some("thinking") => json!({"reasoningContent": {"reasoningText": {"text": block["thinking"], "signature": block["signature"]}}}),
            Some("image") => json!({"image": {"format": "png", "source": {"bytes": block["source"]["data"]}}}),
            Some("tool_use") => json!({"toolUse": {"toolUseId": block["id"], "name": block["name"], "input": block["input"]}}),
            Some("tool_result") => {
                let mut result = json!({"toolUseId": block["tool_use_id"]});
                if let Some(content) = block.get("content") {
                    result["content"] = Value::Array(bedrock_blocks(content));
                }
                if block["is_error"] == json!(true) {
                    result["status"] = json!("error");
                }
                json!({"toolResult": result})
            }
            _ => {
                let mut part = block.clone();
                part.as_object_mut().unwrap().shift_remove("type");
                part
            }
        })
        .collect()
}

/// An Anthropic conversation as Bedrock Converse messages.
fn as_bedrock(value: Value) -> Value {
    let (top, messages) = split(value);
    let messages = messages
        .iter()
        .map(|message| json!({"role": message["role"], "content": bedrock_blocks(&message["content"])}))
        .collect();
    let mut out = join(top, "messages", messages);
    if let Some(system) = out.get("system").cloned() {
        out["system"] = Value::Array(bedrock_blocks(&system));
    }
    out
}

/// Writes a spec in its format.
fn build(spec: &Spec) -> Value {
    let mut ids = 0..;
    let mut next_id = || format!("{}{}", spec.id_prefix, ids.next().unwrap_or_default());
    let mut messages = Vec::new();
    let anthropic = spec.format == Format::Anthropic;
    if !anthropic {
        for (i, body) in spec.system.iter().enumerate() {
            let role = if i % 2 == 0 { "system" } else { "developer" };
            messages.push(json!({"role": role, "content": content(body, None)}));
        }
    }
    for (t, turn) in spec.turns.iter().enumerate() {
        match turn {
            Turn::User { body, image, extra } => {
                let opaque = image.then(|| image_block(spec.format));
                let mut message = json!({"role": "user", "content": content(body, opaque)});
                if *extra {
                    message["x_trace"] = json!({"span": t, "tags": ["a", "b"]});
                    if !anthropic {
                        message["name"] = json!("ann");
                    }
                }
                messages.push(message);
            }
            Turn::Assistant {
                body,
                opaque,
                extra,
            } => {
                let opaque = opaque.then(|| {
                    if anthropic {
                        json!({"type": "thinking", "thinking": "hmm, let me see", "signature": "c2ln"})
                    } else {
                        json!({"type": "refusal", "refusal": "I cannot help with that"})
                    }
                });
                let mut message = json!({"role": "assistant", "content": content(body, opaque)});
                if *extra {
                    message["x_trace"] = json!({"span": t});
                }
                messages.push(message);
            }
            Turn::System { body } if !anthropic => {
                messages.push(json!({"role": "developer", "content": content(body, None)}));
            }
            Turn::System { .. } => {}
            Turn::Round {
                text,
                thinking,
                calls,
                rotate,
                user_text,
                extra,
            } => {
                let ids: Vec<String> = calls.iter().map(|_| next_id()).collect();
                let mut order: Vec<usize> = (0..calls.len()).collect();
                order.rotate_left(rotate % calls.len());
                if anthropic {
                    anthropic_round(&mut messages, text.as_ref(), *thinking, calls, &ids, &order);
                    if let (Some(user_text), Some(carrier)) = (user_text, messages.last_mut()) {
                        let blocks = carrier["content"].as_array_mut().expect("blocks");
                        blocks.push(text_block(user_text));
                    }
                } else {
                    openai_round(&mut messages, text.as_ref(), calls, &ids, &order);
                    if let Some(user_text) = user_text {
                        messages.push(json!({"role": "user", "content": content(user_text, None)}));
                    }
                }
                if *extra {
                    let caller = messages.len() - 1 - if anthropic { 1 } else { calls.len() };
                    messages[caller]["x_trace"] = json!({"round": t});
                }
            }
        }
    }
    // Anthropic (and the formats made from it) must open with a user message.
    if anthropic && messages.first().is_some_and(|m| m["role"] != json!("user")) {
        messages.insert(0, json!({"role": "user", "content": "start"}));
    }
    envelope(spec, messages)
}

/// Wraps messages in the top-level shape the spec asks for.
fn envelope(spec: &Spec, messages: Vec<Value>) -> Value {
    let system = match spec.system.as_slice() {
        _ if spec.format == Format::OpenAi => None,
        [] => None,
        [only] if !only.blocks => Some(json!(only.text)),
        several => Some(Value::Array(several.iter().map(text_block).collect())),
    };
    match (spec.envelope, system) {
        (0, None) => Value::Array(messages),
        (0 | 1, system) => {
            let mut top = Map::new();
            if let Some(system) = system {
                top.insert("system".into(), system);
            }
            top.insert("messages".into(), Value::Array(messages));
            Value::Object(top)
        }
        (_, system) => {
            let mut top = Map::new();
            let model = if spec.format == Format::OpenAi {
                "gpt-4o"
            } else {
                "claude-sonnet-4"
            };
            top.insert("model".into(), json!(model));
            top.insert("max_tokens".into(), json!(1024));
            top.insert("messages".into(), Value::Array(messages));
            if let Some(system) = system {
                top.insert("system".into(), system);
            }
            top.insert("temperature".into(), json!(0.2));
            top.insert("x_vendor".into(), json!({"nested": [1, {"deep": null}]}));
            Value::Object(top)
        }
    }
}

/// A content field: a bare string when it can be, else text and opaque blocks.
fn content(body: &Body, opaque: Option<Value>) -> Value {
    if !body.blocks && opaque.is_none() {
        return json!(body.text);
    }
    let mut blocks = vec![text_block(body)];
    blocks.extend(opaque);
    Value::Array(blocks)
}

/// A text block, with an unknown field when the body asks for one.
fn text_block(body: &Body) -> Value {
    let mut block = json!({"type": "text", "text": body.text});
    if body.extra {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    block
}

/// An image block in the format's own shape.
fn image_block(format: Format) -> Value {
    if format == Format::OpenAi {
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}})
    } else {
        json!({"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
    }
}

/// An OpenAI round: the assistant's `tool_calls`, then one `tool` message per call.
fn openai_round(
    messages: &mut Vec<Value>,
    text: Option<&Body>,
    calls: &[Call],
    ids: &[String],
    order: &[usize],
) {
    let tool_calls: Vec<Value> = calls
        .iter()
        .zip(ids)
        .map(|(call, id)| {
            let arguments = json!({"path": call.argument}).to_string();
            json!({"id": id, "type": "function", "function": {"name": call.tool, "arguments": arguments}})
        })
        .collect();
    let said = text.map_or(Value::Null, |body| content(body, None));
    messages.push(json!({"role": "assistant", "content": said, "tool_calls": tool_calls}));
    for &c in order {
        let mut message = json!({"role": "tool", "tool_call_id": ids[c]});
        if let Some(result) = &calls[c].result {
            message["content"] = content(result, None);
        }
        messages.push(message);
    }
}

/// An Anthropic round: `tool_use` blocks, then the next user message with the `tool_result`s.
fn anthropic_round(
    messages: &mut Vec<Value>,
    text: Option<&Body>,
    thinking: bool,
    calls: &[Call],
    ids: &[String],
    order: &[usize],
) {
    let mut blocks = Vec::new();
    if thinking {
        blocks.push(json!({"type": "thinking", "thinking": "plan the calls", "signature": "c2ln"}));
    }
    blocks.extend(text.map(text_block));
    for (call, id) in calls.iter().zip(ids) {
        blocks.push(json!({"type": "tool_use", "id": id, "name": call.tool, "input": {"path": call.argument}}));
    }
    messages.push(json!({"role": "assistant", "content": blocks}));
    let results: Vec<Value> = order
        .iter()
        .map(|&c| {
            let call = &calls[c];
            let mut block = json!({"type": "tool_result", "tool_use_id": ids[c]});
            if let Some(result) = &call.result {
                let image = call.image.then(|| image_block(Format::Anthropic));
                block["content"] = content(result, image);
            }
            if let Some(is_error) = call.is_error {
                block["is_error"] = json!(is_error);
            }
            block
        })
        .collect();
    messages.push(json!({"role": "user", "content": results}));
}

/// The settings one property run compacts with.
#[derive(Debug, Clone)]
struct Settings {
    strategy: Option<Removal>,
    mode: ToolMode,
    keep: usize,
    /// The budget as a percentage of the conversation's total.
    percent: usize,
    marker: bool,
    tokenizer: Tokenizer,
    /// `preserve_start` and `preserve_end`, when not the defaults.
    preserve: Option<(usize, usize)>,
    /// The per-result cap. At least 16 tokens: below the size of its own note, capping makes
    /// a result longer and trimming panics on the negative saving (see the issue 5 report).
    max_output: Option<usize>,
    clear_at_least: usize,
    clear_inputs: bool,
    exclude: Vec<&'static str>,
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        (
            select(vec![
                None,
                Some(Removal::Middle),
                Some(Removal::Oldest),
                Some(Removal::Relevant),
            ]),
            select(vec![ToolMode::Clear, ToolMode::Drop, ToolMode::Off]),
            prop_oneof![2 => Just(3usize), 1 => 0usize..=4],
            1usize..=120,
            prop::bool::weighted(0.8),
            prop_oneof![9 => Just(Tokenizer::Chars), 1 => Just(Tokenizer::O200k)],
        ),
        (
            prop::option::weighted(0.25, (0usize..4, 0usize..7)),
            prop::option::weighted(0.15, 1usize..400),
            prop_oneof![4 => Just(0usize), 1 => 1usize..300],
            prop::bool::weighted(0.2),
            prop_oneof![3 => Just(Vec::new()), 1 => proptest::sample::subsequence(TOOLS, 1..=2)],
        ),
    )
        .prop_map(
            |(
                (strategy, mode, keep, percent, marker, tokenizer),
                (preserve, max_output, clear_at_least, clear_inputs, exclude),
            )| Settings {
                strategy,
                mode,
                keep,
                percent,
                marker,
                tokenizer,
                preserve,
                max_output,
                clear_at_least,
                clear_inputs,
                exclude,
            },
        )
}

/// Settings with only the strategy, tool mode and marker chosen; the rest at their defaults.
fn plain(strategy: Option<Removal>, mode: ToolMode, keep: usize, marker: bool) -> Settings {
    Settings {
        strategy,
        mode,
        keep,
        percent: 100,
        marker,
        tokenizer: Tokenizer::Chars,
        preserve: None,
        max_output: None,
        clear_at_least: 0,
        clear_inputs: false,
        exclude: Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Running and reading results
// ---------------------------------------------------------------------------------------------

/// One compaction of a generated conversation.
struct Run {
    input: Conversation,
    options: Options,
    budget: usize,
    total: usize,
    result: ctxcompact::Result<Compacted>,
}

impl Settings {
    fn options(&self, budget: usize) -> Options {
        let defaults = Options::with_budget(Budget::Tokens(budget));
        let (preserve_start, preserve_end) = self
            .preserve
            .unwrap_or((defaults.preserve_start, defaults.preserve_end));
        Options {
            budget: Budget::Tokens(budget),
            strategy: self.strategy,
            marker: if self.marker {
                MarkerMode::Digest
            } else {
                MarkerMode::None
            },
            preserve_start,
            preserve_end,
            tokenizer: self.tokenizer,
            tools: ToolOptions {
                mode: self.mode,
                keep: self.keep,
                max_output: self.max_output,
                clear_at_least: self.clear_at_least,
                clear_inputs: self.clear_inputs,
                exclude: self.exclude.iter().map(ToString::to_string).collect(),
            },
            ..defaults
        }
    }
}

/// Compacts `generated` to `settings.percent` of its total.
fn run(generated: &Generated, settings: &Settings) -> Run {
    let input = generated.parse();
    let total = total(&input, settings.tokenizer);
    let budget = (total * settings.percent / 100).max(1);
    let options = settings.options(budget);
    let result = ctxcompact::compact(input.clone(), &options);
    Run {
        input,
        options,
        budget,
        total,
        result,
    }
}

fn total(conversation: &Conversation, tokenizer: Tokenizer) -> usize {
    ctxcompact::count_with(conversation, tokenizer.counter()).total()
}

/// A unit of the input, grouped here independently of the engine: a tool round (the caller
/// and its result window) or a single message.
#[derive(Debug)]
struct Unit {
    messages: Range<usize>,
    pinned: bool,
}

/// Whether a message is a user turn: a user message with something besides tool results.
fn is_user_turn(message: &Message) -> bool {
    message.role == Role::User
        && (message.parts.is_empty()
            || message
                .parts
                .iter()
                .any(|p| !matches!(p, Part::ToolResult { .. })))
}

/// Whether a message is a request (a person's words): a user message with non-blank text, or
/// with an opaque block (an image) and no tool results. Generated text holds no harness text.
fn is_request(message: &Message) -> bool {
    let opaque = message.parts.iter().any(|p| matches!(p, Part::Opaque(_)));
    message.role == Role::User
        && (!message.text().trim().is_empty() || (opaque && !message.has_results()))
}

/// The input's units with their pinning: system messages, the units holding the task (the
/// first request) and the current request (the last request, else the last user turn), the
/// last unit.
fn units(conversation: &Conversation) -> Vec<Unit> {
    let messages = &conversation.messages;
    let task = messages.iter().position(is_request);
    let current = messages
        .iter()
        .rposition(is_request)
        .or_else(|| messages.iter().rposition(is_user_turn));
    // Formats that must open with a user message pin the first one too.
    let opening = conversation
        .must_open_with_user()
        .then(|| messages.iter().position(is_user_turn))
        .flatten();
    let mut units: Vec<Unit> = Vec::new();
    let mut start = 0;
    while start < messages.len() {
        let end = conversation.result_window(start).end.max(start + 1);
        let holds = |i: Option<usize>| i.is_some_and(|i| (start..end).contains(&i));
        units.push(Unit {
            messages: start..end,
            pinned: messages[start].role == Role::System
                || holds(task)
                || holds(current)
                || holds(opening),
        });
        start = end;
    }
    if let Some(last) = units.last_mut() {
        last.pinned = true;
    }
    units
}

/// Tokens no compaction can remove: pinned units, the Anthropic system prompt, the reply
/// priming.
fn pinned_minimum(conversation: &Conversation, tokenizer: Tokenizer) -> usize {
    let counts = ctxcompact::count_with(conversation, tokenizer.counter());
    let pinned: usize = units(conversation)
        .iter()
        .filter(|u| u.pinned)
        .map(|u| counts.messages[u.messages.clone()].iter().sum::<usize>())
        .sum();
    counts.total() - counts.messages.iter().sum::<usize>() + pinned
}

/// `generated` with the outputs of its last unit, when it is a tool round, made `lines` lines
/// long, and the pinned minimum once they are cut to nothing (each output stands for
/// [`CUT_FLOOR`] characters: a placeholder is shorter).
fn with_large_round(generated: &Generated, lines: usize) -> Option<(Conversation, usize)> {
    let mut input = generated.parse();
    let last = units(&input).pop()?.messages;
    if !input.messages[last.clone()]
        .iter()
        .any(Message::has_results)
    {
        return None;
    }
    let output: String = (0..lines)
        .map(|i| ["line ", &i.to_string(), " of the output\n"].concat())
        .collect();
    let mut floor = input.clone();
    for (conversation, text) in [(&mut input, output), (&mut floor, "x".repeat(CUT_FLOOR))] {
        for message in &mut conversation.messages[last.clone()] {
            for part in &mut message.parts {
                if let Part::ToolResult {
                    content, layout, ..
                } = part
                {
                    *content = vec![Part::text(text.clone())];
                    *layout = Layout::Text;
                }
            }
        }
    }
    Some((input, pinned_minimum(&floor, Tokenizer::Chars)))
}

/// Characters an output of the round in progress is taken to need at least once cut.
const CUT_FLOOR: usize = 120;

/// Input messages in tool rounds that drop-mode trimming may remove (rounds older than the last
/// `keep`): the removal strategies' protections do not cover what trimming removed first.
/// The messages that start a tool round: those whose window holds calls, except those inside
/// an earlier round's window (Responses has one item per call, and reasoning before them).
fn callers(conversation: &Conversation) -> Vec<usize> {
    let mut callers: Vec<usize> = Vec::new();
    let mut end = 0;
    for i in 0..conversation.messages.len() {
        let window = conversation.result_window(i).end.max(i + 1);
        if i >= end
            && conversation.messages[i..window]
                .iter()
                .any(Message::has_calls)
        {
            callers.push(i);
            end = window;
        }
    }
    callers
}

fn trimmable(conversation: &Conversation, mode: ToolMode, keep: usize) -> Vec<bool> {
    let mut exposed = vec![false; conversation.messages.len()];
    if mode != ToolMode::Drop {
        return exposed;
    }
    let callers = callers(conversation);
    for &caller in &callers[..callers.len().saturating_sub(keep)] {
        let end = conversation.result_window(caller).end;
        for flag in &mut exposed[caller..end] {
            *flag = true;
        }
    }
    exposed
}

/// The input indices that `report.removed` leaves, after checking its ranges are ascending,
/// disjoint, merged and within the input.
fn kept_indices(report: &Report, n: usize) -> Result<Vec<usize>, TestCaseError> {
    let mut present = vec![true; n];
    let mut previous_end: Option<usize> = None;
    for &[start, end] in &report.removed {
        prop_assert!(
            start < end && end <= n,
            "bad range {:?} of {}",
            [start, end],
            n
        );
        if let Some(previous) = previous_end {
            prop_assert!(
                start > previous,
                "ranges not ascending and merged: {:?}",
                report.removed
            );
        }
        for flag in &mut present[start..end] {
            *flag = false;
        }
        previous_end = Some(end);
    }
    Ok((0..n).filter(|&i| present[i]).collect())
}

/// Whether a message is a standalone removal marker.
fn is_marker(message: &Message) -> bool {
    message.role == Role::User
        && matches!(message.parts.as_slice(),
            [Part::Text { text, .. }] if text.starts_with(NOTE) && text.contains(" removed here"))
}

/// `output` without a removal marker merged into its front (Anthropic merges the marker into
/// the next user turn), and whether there was one.
fn strip_marker(input: &Message, output: &Message) -> (Message, bool) {
    let starts_with_note = |m: &Message| matches!(m.parts.first(), Some(Part::Text { text, .. }) if text.starts_with(NOTE));
    if output.role != Role::User || !starts_with_note(output) || starts_with_note(input) {
        return (output.clone(), false);
    }
    let mut stripped = output.clone();
    match (stripped.layout, stripped.parts.as_mut_slice()) {
        (Layout::Text, [Part::Text { text, .. }]) => {
            // The marker is its first line, or runs through its digest's closing line; the
            // message it was merged into follows after a blank line.
            let end = if text
                .lines()
                .next()
                .is_some_and(|l| l.contains("; digest below"))
            {
                text.find("[ctxcompact: end of digest]")
                    .map(|at| at + "[ctxcompact: end of digest]".len())
            } else {
                text.find('\n')
            };
            if let Some(rest) = end.and_then(|end| text[end..].strip_prefix("\n\n")) {
                *text = rest.to_string();
            }
        }
        _ => {
            stripped.parts.remove(0);
        }
    }
    (stripped, true)
}

/// Why `output` may stand for input message `input` under `settings`, or what is wrong.
fn explain(input: &Message, output: &Message, settings: &Settings) -> Result<(), String> {
    if input == output {
        return Ok(());
    }
    if input.role != output.role || input.extra != output.extra {
        return Err("role or wire fields changed".into());
    }
    if settings.mode == ToolMode::Drop && remnant(input, output).is_ok() {
        return Ok(());
    }
    rewritten(input, output, settings)
}

/// `output` is `input` with some tool results' content cleared to a placeholder (clear mode,
/// and then calls' arguments emptied too when asked) or capped to `max_output` tokens with a
/// note where lines or characters were omitted.
fn rewritten(input: &Message, output: &Message, settings: &Settings) -> Result<(), String> {
    if input.parts.len() != output.parts.len() || input.layout != output.layout {
        return Err(format!("parts or layout changed: {output:?}"));
    }
    for (a, b) in input.parts.iter().zip(&output.parts) {
        if a == b {
            continue;
        }
        if let (
            Part::ToolCall {
                id, name, extra, ..
            },
            Part::ToolCall {
                id: same_id,
                name: same_name,
                arguments,
                extra: same_extra,
            },
        ) = (a, b)
        {
            let emptied = is_reduced(a, arguments);
            // Drop mode clears the rounds it may not remove (pinned ones) instead.
            // A fixed budget clears large inputs before units go, asked or not (#34).
            let allowed = settings.mode != ToolMode::Off;
            if id != same_id || name != same_name || extra != same_extra || !emptied || !allowed {
                return Err(format!("call changed beyond emptied arguments: {b:?}"));
            }
            continue;
        }
        let (
            Part::ToolResult {
                call_id,
                is_error,
                extra,
                content: original,
                ..
            },
            Part::ToolResult {
                call_id: id,
                content,
                is_error: error,
                extra: wire,
                ..
            },
        ) = (a, b)
        else {
            return Err(format!("a part other than a result changed: {b:?}"));
        };
        if call_id != id || is_error != error || extra != wire {
            return Err(format!("result changed beyond its content: {b:?}"));
        }
        let [Part::Text { text, .. }] = content.as_slice() else {
            return Err(format!("result content is not a single text: {b:?}"));
        };
        let placeholder = text.starts_with("[ctxcompact: output of ");
        let capped = settings.max_output.filter(|_| text.contains(" omitted …]"));
        match (placeholder, capped) {
            (true, _) if settings.mode != ToolMode::Off => {}
            // Capped to fit the budget instead of cleared: the original's head and tail
            // around the note naming the cut.
            _ if settings.mode != ToolMode::Off && keeps_head_and_tail(original, text) => {}
            // A JSON output capped to its gist.
            _ if settings.mode != ToolMode::Off && is_json_gist(original, text) => {}
            (false, Some(cap)) => {
                let tokens = settings.tokenizer.counter().count_text(text);
                // Under a cap smaller than the omission note, only the note is left.
                let only_note =
                    text.trim().starts_with("[… ") && text.trim().ends_with(" omitted …]");
                if tokens > cap && !only_note {
                    return Err(format!("a result capped at {cap} tokens has {tokens}"));
                }
            }
            _ => return Err(format!("result content rewritten: {text:?}")),
        }
    }
    Ok(())
}

/// Whether `text` is `original` (a single text) cut to its head and tail around a line naming
/// the cut, the gist of the middle after that line: lines of the original (clipped, a repeat's
/// count after them), `…` gaps, and a `names:` line of its words.
fn keeps_head_and_tail(original: &[Part], text: &str) -> bool {
    let [Part::Text { text: original, .. }] = original else {
        return false;
    };
    let Some((head, rest)) = text.split_once("[… ") else {
        return false;
    };
    let Some((_, after)) = rest.split_once(" omitted …]\n") else {
        return false;
    };
    // A head cut inside a line gets a line break of its own before the note.
    let head = if original.starts_with(head) {
        head
    } else {
        head.strip_suffix('\n').unwrap_or(head)
    };
    if !original.starts_with(head) {
        return false;
    }
    // The tail starts at a line boundary of what follows the note; every line before it is
    // the middle's gist.
    let starts = std::iter::once(0).chain(after.match_indices('\n').map(|(at, _)| at + 1));
    let starts: Vec<usize> = starts.collect();
    starts.iter().any(|&at| {
        let (gist, tail) = after.split_at(at);
        original.ends_with(tail)
            && head.len() + tail.len() < original.len()
            && gist.lines().all(|line| is_gist_line(original, line))
    })
}

/// Appends every scalar value of `value` to `out`, strings as they read, each on a line.
fn scalars(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => map.values().for_each(|v| scalars(v, out)),
        Value::Array(items) => items.iter().for_each(|v| scalars(v, out)),
        Value::String(s) => out.push_str(s),
        other => out.push_str(&other.to_string()),
    }
    out.push('\n');
}

/// Whether `text` is `original` (a single text of JSON) capped to its gist: a note naming how
/// many values it left out, then `path: value` lines of the original's values (a string's
/// later lines on their own, a long array's length), `…` gaps, and a `names:` line of its
/// values' words; a repeated line once, with its count.
fn is_json_gist(original: &[Part], text: &str) -> bool {
    let [Part::Text { text: original, .. }] = original else {
        return false;
    };
    let Ok(value) = serde_json::from_str::<Value>(original.trim_start()) else {
        return false;
    };
    let mut values = String::new();
    scalars(&value, &mut values);
    let mut lines = text.lines();
    let noted = lines.next().is_some_and(|note| {
        note.starts_with("[… ")
            && (note.ends_with(" values omitted …]")
                || note.contains(" values omitted …; archived in "))
    });
    noted
        && lines.all(|line| {
            // A repeated line is written once, with its count.
            let line = match line.rfind(" (×") {
                Some(at) if line.ends_with(')') => &line[..at],
                _ => line,
            };
            let value = line.split_once(": ").map_or(line, |(_, v)| v);
            let value = value.strip_suffix('…').unwrap_or(value);
            line == "…"
                || line
                    .strip_prefix("names: ")
                    .is_some_and(|names| names.split(' ').all(|name| values.contains(name)))
                || value.ends_with(" items")
                || values.contains(value.trim())
        })
}

/// Whether `line` is a line a gist of `original` may hold.
fn is_gist_line(original: &str, line: &str) -> bool {
    if line == "…" {
        return true;
    }
    if let Some(names) = line.strip_prefix("names: ") {
        return names.split(' ').all(|name| original.contains(name));
    }
    let line = match line.rfind(" (×") {
        Some(at) if line.ends_with(')') => &line[..at],
        _ => line,
    };
    let line = line.strip_suffix('…').unwrap_or(line);
    original.contains(line)
}

/// `output` with its shortened text part restored from `input`, when that part keeps the
/// original's head and tail around a note naming the cut; `None` when no part is so shortened.
fn unshorten(input: &Message, output: &Message) -> Option<Message> {
    // Tool trimming may have dropped parts of the same message (a dropped round's result
    // carrier keeps only its text), so a shortened part is matched to the input's texts in
    // order rather than by position.
    let mut texts = input.parts.iter().filter_map(|part| match part {
        Part::Text { text, .. } => Some(text),
        _ => None,
    });
    let mut restored = output.clone();
    let mut found = false;
    for part in &mut restored.parts {
        let Part::Text { text: after, .. } = part else {
            continue;
        };
        let Some((head, rest)) = after.split_once("\n[… ctxcompact shortened the task") else {
            continue;
        };
        let tail = rest.split_once(" cut here …]\n").map_or("", |(_, t)| t);
        let shortened = |before: &&String| {
            before.starts_with(head) && before.ends_with(tail) && after.len() < before.len()
        };
        if let Some(before) = texts.by_ref().find(shortened) {
            after.clone_from(before);
            found = true;
        }
    }
    found.then_some(restored)
}

/// Whether `arguments` are the arguments of `call` reduced to some of their entries, unchanged
/// (cleared inputs keep their path-like arguments), in the same shape.
fn is_reduced(call: &Part, arguments: &Value) -> bool {
    let Part::ToolCall {
        arguments: before, ..
    } = call
    else {
        return false;
    };
    let object = |v: &Value| match v {
        Value::String(s) => serde_json::from_str::<Value>(s).ok(),
        other => Some(other.clone()),
    };
    let same_shape = before.is_string() == arguments.is_string();
    let subset = match (object(before), object(arguments)) {
        (Some(Value::Object(before)), Some(Value::Object(after))) => {
            after.iter().all(|(k, v)| before.get(k) == Some(v))
        }
        (_, Some(Value::Object(after))) => after.is_empty(),
        _ => false,
    };
    same_shape && subset
}

/// `output` is what drop mode keeps of a dropped round's message: its non-blank text parts.
fn remnant(input: &Message, output: &Message) -> Result<(), String> {
    let texts: Vec<&Part> = input
        .parts
        .iter()
        .filter(|p| matches!(p, Part::Text { text, .. } if !text.trim().is_empty()))
        .collect();
    let kept: Vec<&Part> = output.parts.iter().collect();
    if !(input.has_calls() || input.has_results()) || kept.is_empty() || kept != texts {
        return Err(format!(
            "not the text remnant of a dropped round: {output:?}"
        ));
    }
    Ok(())
}

/// How the output's messages trace back to the input: an input index for each, `None` for a
/// standalone marker; and how many markers there are (standalone or merged).
struct Trace {
    origin: Vec<Option<usize>>,
    markers: usize,
}

/// Traces the output back to the input: every message not in `report.removed` appears, in
/// order, unchanged or changed only as the tool mode allows; nothing else appears but a marker.
fn trace(
    input: &Conversation,
    output: &Conversation,
    report: &Report,
    settings: &Settings,
) -> Result<Trace, TestCaseError> {
    let kept = kept_indices(report, input.messages.len())?;
    let mut next = kept.iter().peekable();
    let mut trace = Trace {
        origin: Vec::with_capacity(output.messages.len()),
        markers: 0,
    };
    for (o, message) in output.messages.iter().enumerate() {
        // A marker merged into the next kept message (Anthropic) looks like a standalone one.
        let shortened_task = report.task_shortened.as_ref().and_then(|s| s.message);
        let merged = next.peek().is_some_and(|&&i| {
            let (stripped, merged) = strip_marker(&input.messages[i], message);
            let stripped = if shortened_task == Some(i) {
                unshorten(&input.messages[i], &stripped).unwrap_or(stripped)
            } else {
                stripped
            };
            merged && explain(&input.messages[i], &stripped, settings).is_ok()
        });
        if is_marker(message) && !merged {
            trace.markers += 1;
            trace.origin.push(None);
            continue;
        }
        let Some(&i) = next.next() else {
            return Err(TestCaseError::fail(format!(
                "output message {o} has no input message left to come from"
            )));
        };
        let (stripped, merged) = strip_marker(&input.messages[i], message);
        trace.markers += usize::from(merged);
        let shortened = report.task_shortened.as_ref().and_then(|s| s.message) == Some(i);
        let stripped = if shortened {
            unshorten(&input.messages[i], &stripped)
                .ok_or_else(|| TestCaseError::fail(format!("task {i} badly shortened")))?
        } else {
            stripped
        };
        if let Err(why) = explain(&input.messages[i], &stripped, settings) {
            return Err(TestCaseError::fail(format!(
                "output message {o} does not stand for input message {i}: {why}"
            )));
        }
        trace.origin.push(Some(i));
    }
    prop_assert!(
        next.next().is_none(),
        "an input message outside `removed` is missing from the output"
    );
    Ok(trace)
}

/// The compacted output, when compaction did not refuse (properties 4 and 4b check refusals).
fn compacted(run: &Run) -> Option<&Compacted> {
    run.result.as_ref().ok()
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(CASES))]

    /// 1. The output passes `check`, in memory and after a trip through its bytes.
    #[test]
    fn compacted_output_passes_validation(generated in conversation(), settings in settings()) {
        let run = run(&generated, &settings);
        if let Some(out) = compacted(&run) {
            let problems = ctxcompact::validate(&out.conversation);
            prop_assert!(problems.is_empty(), "{:?}", problems);
            let bytes = crate::rendered(&out.conversation);
            let reread = format::parse(&bytes, Some(generated.format))
                .map_err(|err| TestCaseError::fail(format!("output does not parse: {err}")))?;
            prop_assert!(ctxcompact::validate(&reread).is_empty());
            prop_assert_eq!(reread.format, generated.format);
        }
    }

    /// 2. Apart from the marker and cleared or trimmed contents, the output is the input with
    /// the `removed` ranges taken out, in input order.
    #[test]
    fn compaction_preserves_order_and_changes_only_what_it_may(
        generated in conversation(),
        settings in settings(),
    ) {
        let run = run(&generated, &settings);
        if let Some(out) = compacted(&run) {
            let trace = trace(&run.input, &out.conversation, &out.report, &settings)?;
            // One marker per removed span at most (drop-mode trimming removes spans without).
            prop_assert!(trace.markers <= out.report.removed.len(), "{} markers", trace.markers);
            if trace.markers >= 1 {
                prop_assert!(settings.marker, "a marker although markers are off");
                prop_assert!(!out.report.removed.is_empty(), "a marker but nothing removed");
            }
            prop_assert_eq!(&out.conversation.system, &run.input.system);
            prop_assert_eq!(&out.conversation.envelope, &run.input.envelope);
        }
    }

    /// 3. Pinned units are always kept; the protected tail (of middle and oldest removal) is
    /// kept unless the report says it was relaxed (rounds that drop-mode trimming may remove first are not the strategies' to
    /// protect), or that rounds cleared bare were folded into a digest (they hold no request).
    #[test]
    fn pinned_units_survive_and_the_tail_survives_unless_relaxed(
        generated in conversation(),
        settings in settings(),
    ) {
        let run = run(&generated, &settings);
        if let Some(out) = compacted(&run) {
            let kept = kept_indices(&out.report, run.input.messages.len())?;
            let units = units(&run.input);
            // Drop-mode trimming runs first and may remove rounds older than the last `keep`,
            // pinned or not: an Anthropic round whose result carrier holds the last user turn
            // keeps only that turn's text.
            let exposed = trimmable(&run.input, settings.mode, settings.keep);
            for unit in units.iter().filter(|u| u.pinned) {
                for i in unit.messages.clone() {
                    prop_assert!(
                        exposed[i] || kept.binary_search(&i).is_ok(),
                        "pinned message {} was removed (unit {:?})", i, unit.messages
                    );
                }
            }
            // The task's and the current request's words survive even that: trimming keeps a
            // round's text.
            let requests: Vec<usize> = (0..run.input.messages.len())
                .filter(|&i| is_request(&run.input.messages[i]))
                .collect();
            let worded = |i: &&usize| !run.input.messages[**i].text().trim().is_empty();
            for i in [requests.first(), requests.last()].into_iter().flatten().filter(worded) {
                prop_assert!(kept.binary_search(i).is_ok(), "request {} was removed", i);
            }
            let folded = out.report.steps.contains(&Step::FoldBareRounds);
            // Relevant removal protects no tail: what it keeps is what the request names.
            let relevant = out
                .report
                .decision
                .as_ref()
                .is_some_and(|d| d.strategy == Removal::Relevant);
            if !out.report.relaxed.contains(&Protection::Tail) && !relevant {
                // The engine protects the last units of the conversation after tool trimming,
                // where a dropped round leaves each of its messages that has text as a unit of
                // its own: an input unit is surely in that tail when, counted from the end with
                // a droppable round counted as all its messages, it is within the tail's length.
                let mut counted = 0;
                let tail = units
                    .iter()
                    .rev()
                    .take_while(|unit| {
                        counted += if exposed[unit.messages.start] {
                            unit.messages.len()
                        } else {
                            1
                        };
                        counted <= run.options.preserve_end
                    })
                    .count();
                for unit in &units[units.len() - tail..] {
                    for i in unit.messages.clone() {
                        let folds = folded && !is_request(&run.input.messages[i]);
                        prop_assert!(
                            exposed[i] || folds || kept.binary_search(&i).is_ok(),
                            "protected message {} removed without relaxing the tail", i
                        );
                    }
                }
            }
            prop_assert_eq!(&out.conversation.system, &run.input.system);
        }
    }

    /// 4. Compacted output fits the budget and never grows; only a budget below the pinned
    /// minimum is refused, and then as "cannot fit".
    #[test]
    fn output_fits_the_budget_or_compaction_says_it_cannot(
        generated in conversation(),
        settings in settings(),
    ) {
        let run = run(&generated, &settings);
        match &run.result {
            Ok(out) => {
                let report = &out.report;
                prop_assert!(report.tokens_after <= report.tokens_before);
                prop_assert_eq!(report.budget, run.budget);
                match report.action {
                    Action::Compacted => {
                        prop_assert!(run.total > run.budget);
                        prop_assert!(report.tokens_after <= run.budget,
                            "{} tokens over the budget of {}", report.tokens_after, run.budget);
                    }
                    Action::WithinBudget => {
                        // An empty conversation has nothing to remove: within any budget.
                        prop_assert!(run.total <= run.budget || run.input.messages.is_empty());
                        prop_assert_eq!(&out.conversation, &run.input);
                    }
                    Action::CannotFit => prop_assert!(false, "cannot_fit returned as output"),
                }
            }
            Err(err) => {
                prop_assert!(err.is_cannot_fit(), "a valid input was refused: {}", err);
                let pinned = pinned_minimum(&run.input, settings.tokenizer);
                prop_assert!(pinned > run.budget,
                    "cannot fit although the pinned minimum is {} of a budget of {}",
                    pinned, run.budget);
                let report = ctxcompact::analyze(run.input.clone(), &run.options)
                    .map_err(|err| TestCaseError::fail(err.to_string()))?;
                prop_assert_eq!(report.action, Action::CannotFit);
                prop_assert!(report.pinned_tokens > run.budget);
            }
        }
    }

    /// 4b. With no marker and no tool trimming, the pinned minimum is exactly the smallest
    /// budget that fits: one token less cannot fit.
    #[test]
    fn the_pinned_minimum_is_exactly_the_smallest_budget_that_fits(
        generated in conversation(),
        strategy in select(vec![None, Some(Removal::Middle), Some(Removal::Oldest), Some(Removal::Relevant)]),
    ) {
        let input = generated.parse();
        let pinned = pinned_minimum(&input, Tokenizer::Chars);
        let options = |budget| plain(strategy, ToolMode::Off, 0, false).options(budget);
        let fits = ctxcompact::compact(input.clone(), &options(pinned))
            .map_err(|err| TestCaseError::fail(format!("budget {pinned}: {err}")))?;
        prop_assert!(fits.report.tokens_after <= pinned);
        // An empty conversation is within any budget (see: #9).
        if pinned > 1 && !input.messages.is_empty() {
            // One token less fits only by shortening the task, and says so.
            match ctxcompact::compact(input.clone(), &options(pinned - 1)) {
                Ok(out) => prop_assert!(out.report.task_shortened.is_some(),
                    "budget {} fits without shortening the task", pinned - 1),
                Err(err) => prop_assert!(err.is_cannot_fit(), "{}", err),
            }
        }
    }

    /// 4c. Outputs go before units (issue 26): when clearing every tool output but those of
    /// the round in progress meets the budget, compaction removes no message, but for tool
    /// rounds whose outputs the budget left no gists, folded into a digest (never a request).
    #[test]
    fn no_message_is_removed_when_clearing_outputs_would_fit(
        generated in conversation(),
        keep in 0_usize..4,
        marker: bool,
        percent in 40_usize..100,
    ) {
        let settings = Settings { percent, ..plain(None, ToolMode::Clear, keep, marker) };
        let run = run(&generated, &settings);
        let in_progress = run
            .input
            .messages
            .last()
            .is_some_and(|m| m.has_results() || m.has_calls());
        let mut everything = run.options.clone();
        everything.tools.keep = usize::from(in_progress);
        let cleared = ctxcompact::trim_tools(run.input.clone(), &everything)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        if run.total <= run.budget || cleared.report.tokens_after > run.budget {
            return Ok(());
        }
        let out = run.result.as_ref().map_err(|err| TestCaseError::fail(err.to_string()))?;
        if out.report.steps.contains(&Step::FoldBareRounds) {
            for &[start, end] in &out.report.removed {
                for i in start..end {
                    prop_assert!(!is_request(&run.input.messages[i]), "request {} folded", i);
                }
            }
        } else {
            prop_assert!(
                out.report.removed.is_empty(),
                "removed {:?} where clearing outputs leaves {} tokens of a budget of {}",
                out.report.removed, cleared.report.tokens_after, run.budget
            );
        }
        prop_assert!(out.report.tokens_after <= run.budget);
    }

    /// 4d. No cannot-fit when a fitting output exists (issue 31, item 5): when the pinned
    /// minimum is over the budget only because of the round in progress's outputs, they are
    /// cut to fit, and only then; the output fits and keeps its pairing.
    #[test]
    fn the_round_in_progress_is_cut_to_fit_only_when_needed(
        generated in conversation(),
        lines in 20_usize..200,
        share in 0_usize..=100,
        keep in 0_usize..4,
        marker: bool,
    ) {
        let Some((input, floor)) = with_large_round(&generated, lines) else {
            return Ok(());
        };
        let pinned = pinned_minimum(&input, Tokenizer::Chars);
        let budget = floor + (pinned.saturating_sub(floor) + 20) * share / 100;
        let options = plain(None, ToolMode::Clear, keep, marker).options(budget);
        let out = ctxcompact::compact(input.clone(), &options).map_err(|err| {
            TestCaseError::fail(format!("floor {floor}, pinned {pinned}, budget {budget}: {err}"))
        })?;
        prop_assert!(out.report.tokens_after <= budget);
        prop_assert!(ctxcompact::validate(&out.conversation).is_empty());
        let last = units(&input).pop().expect("a round").messages;
        for cut in &out.report.outputs_cut {
            prop_assert!(cut.message.is_some_and(|m| last.contains(&m)), "{:?}", cut);
            prop_assert!(cut.tokens_after < cut.tokens_before);
        }
        if pinned <= budget {
            prop_assert!(out.report.outputs_cut.is_empty(),
                "outputs cut although the pinned minimum {} fits the budget {}", pinned, budget);
        }
    }

    /// 4e. Large inputs go before their units (issue 34, item 3): when clearing every tool
    /// output but those of the round in progress, and one large input (a file written whole)
    /// to its path, meets a fixed budget, the message holding that input is kept, unless the
    /// output fills 60% of the budget without clearing it.
    #[test]
    fn a_large_input_is_cleared_before_its_message_goes(
        generated in conversation(),
        keep in 0_usize..4,
        marker: bool,
        percent in 20_usize..100,
        lines in 80_usize..400,
    ) {
        let mut input = generated.parse();
        let last = units(&input).pop().map_or(0, |u| u.messages.start);
        let Some(at) = input.messages[..last].iter().position(Message::has_calls) else {
            return Ok(());
        };
        let content: String = (0..lines)
            .map(|i| ["line ", &i.to_string(), " of a file\n"].concat())
            .collect();
        let mut small = input.clone();
        for (conversation, value) in [
            (&mut input, json!({"path": "src/a.rs", "content": content})),
            (&mut small, json!({"path": "src/a.rs"})),
        ] {
            let call = conversation.messages[at].parts.iter_mut()
                .find(|p| matches!(p, Part::ToolCall { .. }));
            if let Some(Part::ToolCall { arguments, .. }) = call {
                *arguments = match arguments {
                    Value::String(_) => Value::String(value.to_string()),
                    _ => value,
                };
            }
        }
        let settings = plain(None, ToolMode::Clear, keep, marker);
        let total = total(&input, Tokenizer::Chars);
        let budget = (total * percent / 100).max(1);
        let options = settings.options(budget);
        let mut everything = options.clone();
        everything.tools.keep = usize::from(input.messages.last().is_some_and(|m| m.has_results() || m.has_calls()));
        let cleared = ctxcompact::trim_tools(small, &everything)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        if total <= budget || cleared.report.tokens_after > budget {
            return Ok(());
        }
        let n = input.messages.len();
        let out = ctxcompact::compact(input, &options).map_err(|err| TestCaseError::fail(err.to_string()))?;
        let kept = kept_indices(&out.report, n)?;
        // Inputs are cleared only where removal alone leaves the output under 60% of the budget.
        // That is decided on the plan's figure, which the settled marker can undercut by a few
        // tokens (182 planned, 178 written, of 297: the seed in regressions.txt), so the
        // output is held to 60% less 2% of the budget.
        prop_assert!(
            kept.binary_search(&at).is_ok() || out.report.tokens_after * 100 >= budget * 58,
            "the message holding the large input went ({:?}) where clearing outputs and it leaves {} tokens of a budget of {}",
            out.report.removed, cleared.report.tokens_after, budget
        );
        prop_assert!(out.report.tokens_after <= budget);
    }

    /// 4f. Rounds whose outputs the budget leaves no gists fold into a digest (issue 38): with
    /// a large round in progress and a budget between the pinned minimum and what every older
    /// output cleared with its gist leaves, the output fits, keeps its pairing, never grows, is
    /// the same every time, and folds no request.
    #[test]
    fn bare_rounds_fold_into_a_digest_within_the_budget(
        generated in conversation(),
        lines in 20_usize..200,
        share in 0_usize..=100,
        keep in 0_usize..4,
    ) {
        let Some((input, _)) = with_large_round(&generated, lines) else {
            return Ok(());
        };
        let options = plain(None, ToolMode::Clear, keep, true).options(usize::MAX);
        let mut everything = options.clone();
        everything.tools.keep = 1;
        // Between the pinned minimum and every older output cleared with its gist.
        let gisted = ctxcompact::trim_tools(input.clone(), &everything)
            .map_err(|err| TestCaseError::fail(err.to_string()))?
            .report
            .tokens_after;
        let pinned = pinned_minimum(&input, Tokenizer::Chars);
        let total = total(&input, Tokenizer::Chars);
        let budget = pinned + gisted.saturating_sub(pinned) * share / 100;
        let options = Options { budget: Budget::Tokens(budget), ..options };
        let compact = || ctxcompact::compact(input.clone(), &options);
        let (Ok(out), Ok(again)) = (compact(), compact()) else {
            return Ok(());
        };
        prop_assert!(out.report.tokens_after <= budget);
        prop_assert!(out.report.tokens_after <= total);
        prop_assert!(ctxcompact::validate(&out.conversation).is_empty());
        prop_assert_eq!(crate::rendered(&out.conversation), crate::rendered(&again.conversation));
        if out.report.steps.contains(&Step::FoldBareRounds) {
            prop_assert!(!out.report.removed.is_empty() && !out.report.markers.is_empty());
            for &[start, end] in &out.report.removed {
                for i in start..end {
                    prop_assert!(!is_request(&input.messages[i]), "request {} folded", i);
                }
            }
        }
    }

    /// 5. Same input and settings give byte-identical output and an identical report.
    #[test]
    fn compaction_is_deterministic(generated in conversation(), settings in settings()) {
        let first = run(&generated, &settings);
        let second = run(&generated, &settings);
        match (&first.result, &second.result) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(crate::rendered(&a.conversation), crate::rendered(&b.conversation));
                prop_assert_eq!(serde_json::to_string(&a.report).unwrap(), serde_json::to_string(&b.report).unwrap());
            }
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            (a, b) => prop_assert!(false, "{:?} then {:?}", a.as_ref().err(), b.as_ref().err()),
        }
    }

    /// 6. Compacting the output again, read back from its bytes, with the same budget changes
    /// nothing.
    #[test]
    fn compaction_is_idempotent(generated in conversation(), settings in settings()) {
        let run = run(&generated, &settings);
        if let Some(out) = compacted(&run) {
            let bytes = crate::rendered(&out.conversation);
            let reread = format::parse(&bytes, Some(generated.format))
                .map_err(|err| TestCaseError::fail(err.to_string()))?;
            let again = ctxcompact::compact(reread.clone(), &run.options)
                .map_err(|err| TestCaseError::fail(format!("second run: {err}")))?;
            prop_assert_eq!(again.report.action, Action::WithinBudget);
            prop_assert_eq!(again.report.tokens_after, out.report.tokens_after);
            prop_assert_eq!(crate::rendered(&again.conversation), bytes);
        }
    }

    /// 7. The report agrees with the output: message and token counts recounted, and the
    /// `removed` ranges are exactly the input messages absent from it.
    #[test]
    fn the_report_agrees_with_the_output(generated in conversation(), settings in settings()) {
        let run = run(&generated, &settings);
        if let Some(out) = compacted(&run) {
            let report = &out.report;
            prop_assert_eq!(report.format, generated.format);
            prop_assert_eq!(report.tokenizer, settings.tokenizer);
            prop_assert_eq!(report.messages_before, run.input.messages.len());
            prop_assert_eq!(report.messages_after, out.conversation.messages.len());
            prop_assert_eq!(report.tokens_before, run.total);
            prop_assert_eq!(report.tokens_after, total(&out.conversation, settings.tokenizer));
            let trace = trace(&run.input, &out.conversation, report, &settings)?;
            let kept = kept_indices(report, run.input.messages.len())?;
            let traced: Vec<usize> = trace.origin.iter().flatten().copied().collect();
            prop_assert_eq!(&traced, &kept);
            let removed: usize = report.removed.iter().map(|[start, end]| end - start).sum();
            let standalone = trace.origin.iter().filter(|o| o.is_none()).count();
            prop_assert_eq!(report.messages_after, report.messages_before - removed + standalone);
            // A message said to be unchanged is its input message exactly, the one the trace
            // finds for it.
            prop_assert_eq!(out.unchanged.len(), out.conversation.messages.len());
            let messages = out.conversation.messages.iter().zip(&out.unchanged);
            for ((message, said), traced) in messages.zip(&trace.origin) {
                if let Some(index) = said {
                    prop_assert_eq!(message, &run.input.messages[*index]);
                    prop_assert_eq!(traced, &Some(*index));
                }
            }
            if report.action == Action::WithinBudget {
                prop_assert!(report.removed.is_empty());
                prop_assert_eq!(report.tokens_after, report.tokens_before);
                let every: Vec<Option<usize>> = (0..run.input.messages.len()).map(Some).collect();
                prop_assert_eq!(&out.unchanged, &every);
            }
        }
    }
}

/// The digest of every marker in a conversation: the lines between a marker's first line and
/// its closing line (empty for a one-line marker).
fn digests(conversation: &Conversation) -> Vec<String> {
    marker_texts(conversation)
        .map(|t| match t.split_once("; digest below") {
            Some((_, rest)) => {
                let body = rest.split_once('\n').map_or("", |(_, b)| b);
                let end = body
                    .find("[ctxcompact: end of digest]")
                    .unwrap_or(body.len());
                body[..end].trim_end().to_string()
            }
            None => String::new(),
        })
        .collect()
}

/// The items of a Responses body that configure the model (Codex's tools and reasoning
/// updates), in order.
fn setting_items(value: &Value) -> Vec<Value> {
    value["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| {
            matches!(
                item["type"].as_str(),
                Some("additional_tools" | "configuration_update")
            )
        })
        .cloned()
        .collect()
}

proptest! {
    #![proptest_config(config(CASES))]

    /// 12. Codex's tool definitions and configuration updates (code mode) survive every
    /// compaction, whole and in order, and its custom calls keep their outputs. See: #31
    #[test]
    fn codex_tools_and_settings_survive_every_compaction(
        spec in spec(Format::OpenAi),
        settings in settings(),
    ) {
        let generated = Generated {
            format: Format::Responses,
            value: as_codex_code_mode(build(&spec)),
        };
        let run = run(&generated, &settings);
        if let Some(out) = compacted(&run) {
            let rendered = format::render(&out.conversation);
            prop_assert_eq!(setting_items(&rendered), setting_items(&generated.value));
            prop_assert!(ctxcompact::validate(&out.conversation).is_empty());
        }
    }
}

/// The text of every marker in a conversation, in order.
fn marker_texts(conversation: &Conversation) -> impl Iterator<Item = String> + '_ {
    conversation
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(Message::text)
        .filter(|t| t.starts_with(NOTE) && t.contains(" removed here"))
}

/// The first line of every marker in a conversation, in the order of [`digests`].
fn markers_first_lines(conversation: &Conversation) -> Vec<String> {
    marker_texts(conversation)
        .map(|t| t.lines().next().unwrap_or("").to_string())
        .collect()
}

proptest! {
    #![proptest_config(config(CASES))]

    /// 11. Every marker's digest is within its cap, and markers are deterministic. See: #10
    #[test]
    fn every_digest_is_within_its_cap_and_markers_are_deterministic(
        generated in conversation(),
        percent in 5usize..90,
        cap in prop_oneof![Just(None), (0usize..300).prop_map(Some)],
    ) {
        let input = generated.parse();
        let total = total(&input, Tokenizer::Chars);
        let options = Options {
            digest_tokens: cap,
            tokenizer: Tokenizer::Chars,
            ..Options::with_budget(Budget::Tokens((total * percent / 100).max(1)))
        };
        let first = ctxcompact::compact(input.clone(), &options);
        let second = ctxcompact::compact(input, &options);
        if let (Ok(a), Ok(b)) = (first, second) {
            let found = digests(&a.conversation);
            prop_assert_eq!(found.len(), a.report.markers.len());
            let counter = Tokenizer::Chars.counter();
            // By default the whole digest, the removed requests first, takes at most half the
            // budget (the sections after the requests share the smaller of 2,000 tokens and 10%),
            // or past that what the rest of the output leaves of the budget (a plan leaving room
            // no unit fits gives it to its digests); an asked cap holds whatever the room.
            let digests_total: usize = found.iter().map(|d| counter.count_text(d)).sum();
            let rest = a.report.tokens_after.saturating_sub(digests_total);
            let budget = a.report.budget;
            let limit = cap.unwrap_or((budget / 2).max(budget.saturating_sub(rest)));
            // A marker in its tight frame (issue 33: its header without the closing clause)
            // lends its digest the tokens that clause would take.
            let clause = counter.count_text("[ctxcompact: 1 earlier message (1 input tokens) \
                removed here; digest below; the current request is the last user message]")
                - counter.count_text("[ctxcompact: 1 earlier message (1 input tokens) removed \
                here; digest below]");
            let headers = markers_first_lines(&a.conversation);
            for (digest, header) in found.iter().zip(&headers) {
                let tokens = counter.count_text(digest);
                let tight = !header.contains("; the current request is");
                let limit = limit + if tight { clause + 2 } else { 0 };
                prop_assert!(tokens <= limit, "{} tokens over a cap of {}: {}", tokens, limit, digest);
            }
            prop_assert_eq!(found, digests(&b.conversation));
        }
    }
}

proptest! {
    #![proptest_config(config(CASES * 2))]

    /// 8. Parse → render is the identity on every generated conversation, key order included,
    /// and so is render → parse.
    #[test]
    fn parse_then_render_is_the_identity(generated in conversation()) {
        let conversation = generated.parse();
        let rendered = format::render(&conversation);
        prop_assert_eq!(&rendered, &generated.value);
        prop_assert_eq!(serde_json::to_string(&rendered).unwrap(), serde_json::to_string(&generated.value).unwrap());
        let reread = format::parse(&crate::rendered(&conversation), Some(generated.format))
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(reread, conversation);
    }

    /// 9. Tool trimming leaves the last `keep` rounds and every excluded tool's calls and
    /// results untouched, and everything outside tool rounds too.
    #[test]
    fn tool_trimming_spares_the_latest_rounds_and_excluded_tools(
        generated in conversation(),
        mode in select(vec![ToolMode::Clear, ToolMode::Drop, ToolMode::Off]),
        keep in 0usize..=4,
        exclude in proptest::sample::subsequence(TOOLS, 0..=2),
        clear_inputs in any::<bool>(),
    ) {
        let input = generated.parse();
        let options = Options {
            tokenizer: Tokenizer::Chars,
            tools: ToolOptions {
                mode,
                keep,
                exclude: exclude.iter().map(ToString::to_string).collect(),
                clear_inputs,
                ..ToolOptions::default()
            },
            ..Options::with_budget(Budget::Ratio(1.0))
        };
        let out = ctxcompact::trim_tools(input.clone(), &options)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert!(ctxcompact::validate(&out.conversation).is_empty());
        prop_assert!(out.report.tokens_after <= out.report.tokens_before);
        let kept = kept_indices(&out.report, input.messages.len())?;
        prop_assert_eq!(kept.len(), out.conversation.messages.len());
        let output_of = |i: usize| kept.binary_search(&i).ok().map(|o| &out.conversation.messages[o]);
        let callers = callers(&input);
        let latest = callers.len().saturating_sub(keep);
        let mut in_round = vec![false; input.messages.len()];
        for (r, &caller) in callers.iter().enumerate() {
            let round = caller..input.result_window(caller).end;
            for flag in &mut in_round[round.clone()] {
                *flag = true;
            }
            let calls: Vec<(&str, &str)> = input.messages[round.clone()].iter().flat_map(|m| &m.parts).filter_map(|p| match p {
                Part::ToolCall { id, name, .. } => Some((id.as_str(), name.as_str())),
                _ => None,
            }).collect();
            let excluded: Vec<&str> = calls.iter()
                .filter(|(_, name)| exclude.contains(name))
                .map(|(id, _)| *id)
                .collect();
            let whole = r >= latest || mode == ToolMode::Off
                || (mode == ToolMode::Drop && !excluded.is_empty())
                || (excluded.len() == calls.len());
            for i in round {
                let before = &input.messages[i];
                let after = output_of(i);
                if whole {
                    prop_assert_eq!(after, Some(before), "round {} message {} was touched", r, i);
                    continue;
                }
                // A partly excluded round is cleared around its excluded calls and results.
                for part in &before.parts {
                    let spared = match part {
                        Part::ToolCall { id, .. } | Part::ToolResult { call_id: id, .. } => {
                            excluded.contains(&id.as_str())
                        }
                        _ => false,
                    };
                    if spared {
                        let after = after.ok_or_else(|| TestCaseError::fail(
                            format!("message {i} with an excluded tool's part was removed")))?;
                        prop_assert!(after.parts.contains(part),
                            "excluded part {:?} of message {} changed", part, i);
                    }
                }
            }
        }
        for (i, message) in input.messages.iter().enumerate() {
            if !in_round[i] {
                prop_assert_eq!(output_of(i), Some(message), "message {} outside rounds changed", i);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 10. No input makes the library panic
// ---------------------------------------------------------------------------------------------

/// Strings that steer arbitrary JSON towards the shapes the parsers look at.
const WORDS: &[&str] = &[
    "user",
    "assistant",
    "system",
    "developer",
    "tool",
    "function",
    "text",
    "tool_use",
    "tool_result",
    "image",
    "image_url",
    "thinking",
    "refusal",
    "a",
    "b",
    "{}",
    "{\"x\": 1}",
    "",
    "[ctxcompact: output of f cleared (9 tokens)]",
];

/// Keys the parsers read, and a few they do not.
const KEYS: &[&str] = &[
    "role",
    "content",
    "messages",
    "system",
    "tool_calls",
    "tool_call_id",
    "type",
    "id",
    "name",
    "function",
    "arguments",
    "input",
    "tool_use_id",
    "is_error",
    "text",
    "function_call",
    "model",
    "zz",
];

/// Arbitrary JSON values, biased towards the keys and strings of both formats.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        select(WORDS).prop_map(|s| Value::String(s.into())),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..8).prop_map(Value::Array),
            vec(
                (
                    prop_oneof![4 => select(KEYS).prop_map(String::from), 1 => ".{0,6}"],
                    inner
                ),
                0..8
            )
            .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Message-shaped JSON with clashing ids, wrong types and misplaced blocks: deep into the
/// parsers, the validator and the pipeline.
fn message_like() -> impl Strategy<Value = Value> {
    let id = || select(&["a", "b", "c"][..]).prop_map(Value::from);
    let block = (
        select(&["text", "tool_use", "tool_result", "image", "thinking", "x"][..]),
        id(),
        prop::option::of(any_json()),
        prop::option::of(select(vec![json!("t"), json!(["t"]), json!({}), json!(true)])),
    )
        .prop_map(|(kind, id, content, extra)| {
            let mut block = json!({"type": kind, "id": id, "tool_use_id": id, "name": "f", "input": {}, "text": "t"});
            if let Some(content) = content {
                block["content"] = content;
            }
            if let Some(extra) = extra {
                block["is_error"] = extra;
            }
            block
        });
    let call = id().prop_map(
        |id| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}),
    );
    (
        select(WORDS),
        prop_oneof![
            2 => ".{0,8}".prop_map(Value::String),
            3 => vec(block, 0..4).prop_map(Value::Array),
            1 => any_json(),
        ],
        prop::option::of(vec(call, 0..3)),
        prop::option::of(id()),
    )
        .prop_map(|(role, content, calls, call_id)| {
            let mut message = json!({"role": role, "content": content});
            if let Some(calls) = calls {
                message["tool_calls"] = Value::Array(calls);
            }
            if let Some(call_id) = call_id {
                message["tool_call_id"] = call_id;
            }
            message
        })
}

/// A valid conversation broken by one edit: a message removed, duplicated, moved or retyped.
fn mutated() -> impl Strategy<Value = Value> {
    (
        conversation(),
        0usize..4,
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        any_json(),
    )
        .prop_map(|(generated, edit, a, b, junk)| {
            let mut value = generated.value;
            let messages = match &mut value {
                Value::Array(messages) => messages,
                Value::Object(top) => match top.get_mut("messages") {
                    Some(Value::Array(messages)) => messages,
                    _ => return value,
                },
                _ => return value,
            };
            if messages.is_empty() {
                return value;
            }
            let (i, j) = (a.index(messages.len()), b.index(messages.len()));
            match edit {
                0 => {
                    messages.remove(i);
                }
                1 => {
                    let copy = messages[i].clone();
                    messages.insert(j, copy);
                }
                2 => messages.swap(i, j),
                _ => {
                    if let Some(object) = messages[i].as_object_mut() {
                        let key = KEYS[j % KEYS.len()];
                        object.insert(key.into(), junk);
                    }
                }
            }
            value
        })
}

/// Runs every entry point on a value; only panics fail. Whatever compacts must be valid.
fn exercise(value: &Value) -> Result<(), TestCaseError> {
    for format in std::iter::once(None).chain(Format::ALL.iter().copied().map(Some)) {
        let Ok(conversation) = format::parse_value(value.clone(), format) else {
            continue;
        };
        let problems = ctxcompact::validate(&conversation);
        let _ = crate::rendered(&conversation);
        let counts = ctxcompact::count_with(&conversation, Tokenizer::Chars.counter());
        let total = counts.total();
        for (budget, mode, strategy) in [
            (1, ToolMode::Clear, None),
            (total / 2, ToolMode::Drop, Some(Removal::Middle)),
            (
                total.saturating_sub(1),
                ToolMode::Off,
                Some(Removal::Oldest),
            ),
            (total + 1, ToolMode::Clear, None),
        ] {
            let options = plain(strategy, mode, 1, true).options(budget);
            let _ = ctxcompact::analyze(conversation.clone(), &options);
            let _ = ctxcompact::trim_tools(conversation.clone(), &options);
            match ctxcompact::compact(conversation.clone(), &options) {
                Ok(out) => {
                    prop_assert!(
                        problems.is_empty(),
                        "an invalid input compacted: {:?}",
                        problems
                    );
                    prop_assert!(ctxcompact::validate(&out.conversation).is_empty());
                }
                Err(err) => {
                    prop_assert!(
                        !problems.is_empty() || budget == 0 || err.is_cannot_fit(),
                        "a valid input refused: {}",
                        err
                    );
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(CASES * 2))]

    /// 10a. Arbitrary JSON never makes parsing or compaction panic.
    #[test]
    fn arbitrary_json_never_panics(value in any_json()) {
        exercise(&value)?;
        exercise(&json!({"messages": value}))?;
    }

    /// 10b. Message-shaped nonsense and broken valid conversations never panic either.
    #[test]
    fn malformed_conversations_never_panic(
        messages in vec(message_like(), 0..8),
        system in any_json(),
        broken in mutated(),
    ) {
        exercise(&Value::Array(messages.clone()))?;
        exercise(&json!({"system": system, "messages": messages}))?;
        exercise(&broken)?;
    }

    /// 10c. Arbitrary bytes, and valid JSON cut short or with a byte flipped, never panic.
    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in vec(any::<u8>(), 0..256),
        generated in conversation(),
        cut in any::<prop::sample::Index>(),
        flip in any::<u8>(),
    ) {
        for format in std::iter::once(None).chain(Format::ALL.iter().copied().map(Some)) {
            let _ = format::parse(&bytes, format);
        }
        let mut text = serde_json::to_vec(&generated.value).unwrap();
        let at = cut.index(text.len());
        let mut flipped = text.clone();
        flipped[at] ^= flip;
        text.truncate(at);
        for broken in [text, flipped] {
            if let Ok(value) = serde_json::from_slice::<Value>(&broken) {
                exercise(&value)?;
            } else {
                prop_assert!(format::parse(&broken, None).is_err());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Round trips, trimming twice, and counts of outputs (issue 27)
// ---------------------------------------------------------------------------------------------

/// The pretty bytes the CLI writes for `value` (and that a user may have written).
fn pretty(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap();
    bytes.push(b'\n');
    bytes
}

/// `value` with the wire fields a writer may leave out left out, and numbers spelled as
/// `serde_json` does not write them: Gemini contents without `role` (the API's default is
/// `user`), a string where a Bedrock or Gemini call's input object belongs, and a top-level
/// field of numbers spelled with `E` and unsigned exponents. As pretty bytes.
fn unusual(generated: &Generated, which: u8) -> Vec<u8> {
    let mut value = generated.value.clone();
    let list = match &mut value {
        Value::Array(items) => Some(items),
        Value::Object(body) => ["messages", "contents", "input"]
            .iter()
            .find_map(|key| body.get(*key).filter(|v| v.is_array()).map(|_| *key))
            .and_then(|key| body.get_mut(key))
            .and_then(Value::as_array_mut),
        _ => None,
    };
    for (index, item) in list.into_iter().flatten().enumerate() {
        let Some(object) = item.as_object_mut() else {
            continue;
        };
        if generated.format == Format::Gemini
            && which & 1 == 1
            && index % 2 == 0
            && object.get("role").and_then(Value::as_str) == Some("user")
        {
            object.shift_remove("role");
        }
        if which & 2 == 2 {
            for key in ["parts", "content"] {
                let Some(Value::Array(parts)) = object.get_mut(key) else {
                    continue;
                };
                for part in parts {
                    for (call, input) in [("functionCall", "args"), ("toolUse", "input")] {
                        if let Some(call) = part.get_mut(call).and_then(Value::as_object_mut) {
                            call.insert(input.into(), Value::String("not an object".into()));
                        }
                    }
                }
            }
        }
    }
    let mut bytes = pretty(&value);
    if which & 4 == 4 && bytes.first() == Some(&b'{') {
        bytes.splice(
            1..1,
            b"\n  \"spelled\": [\n    1E5,\n    1e400,\n    2E-7,\n    1.50,\n    -0\n  ],"
                .iter()
                .copied(),
        );
    }
    bytes
}

proptest! {
    #![proptest_config(config(CASES / 4))]

    /// 11. Within budget, every format comes back byte for byte: fields the input left out
    /// stay out, inputs stay as written, numbers keep their spelling.
    #[test]
    fn within_budget_every_format_round_trips_byte_for_byte(
        generated in conversation(),
        which in 0u8..8,
    ) {
        let bytes = unusual(&generated, which);
        let input = format::parse(&bytes, Some(generated.format))
            .map_err(|err| TestCaseError::fail(format!("input does not parse: {err}")))?;
        let options = Options {
            tokenizer: Tokenizer::Chars,
            ..Options::with_budget(Budget::Ratio(1.0))
        };
        let out = ctxcompact::compact(input, &options)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(out.report.action, Action::WithinBudget);
        let written = crate::rendered(&out.conversation);
        prop_assert_eq!(String::from_utf8_lossy(&written), String::from_utf8_lossy(&bytes));
    }

    /// 12. Tool trimming is idempotent (it knows its own placeholders and caps, whatever the
    /// cap) and never adds tokens; its report names the step whenever it changed anything.
    #[test]
    fn trim_tools_is_idempotent_and_never_adds_tokens(
        generated in conversation(),
        mode in select(vec![ToolMode::Clear, ToolMode::Drop, ToolMode::Off]),
        keep in 0usize..=4,
        max_output in prop::option::weighted(0.7, 1usize..80),
        clear_inputs in any::<bool>(),
    ) {
        let options = Options {
            tokenizer: Tokenizer::Chars,
            tools: ToolOptions {
                mode,
                keep,
                max_output,
                clear_inputs,
                ..ToolOptions::default()
            },
            ..Options::with_budget(Budget::Ratio(1.0))
        };
        let once = ctxcompact::trim_tools(generated.parse(), &options)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert!(once.report.tokens_after <= once.report.tokens_before);
        let trimmed = once.report.action == Action::Compacted;
        prop_assert_eq!(once.report.steps.contains(&Step::ClearOldOutputs), trimmed);
        let bytes = crate::rendered(&once.conversation);
        let reread = format::parse(&bytes, Some(generated.format))
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        let twice = ctxcompact::trim_tools(reread, &options)
            .map_err(|err| TestCaseError::fail(format!("second run: {err}")))?;
        prop_assert_eq!(twice.report.tokens_after, once.report.tokens_after);
        let again = crate::rendered(&twice.conversation);
        prop_assert_eq!(String::from_utf8_lossy(&again), String::from_utf8_lossy(&bytes));
    }

    /// 13. Counting an output, read back from its bytes, with the same options (the report's
    /// overhead) gives the report's `tokens_after`, and no more than the budget when compacted.
    #[test]
    fn count_of_an_output_is_its_reports_tokens_after(
        generated in conversation(),
        settings in settings(),
        overhead in prop_oneof![3 => Just(0usize), 1 => 1usize..500],
    ) {
        let input = generated.parse();
        let options = Options { overhead, ..settings.options(1) };
        let budget = (options.count_body(&input).total() * settings.percent / 100).max(1);
        let options = Options { budget: Budget::Tokens(budget), ..options };
        if let Ok(out) = ctxcompact::compact(input, &options) {
            let bytes = crate::rendered(&out.conversation);
            let reread = format::parse(&bytes, Some(generated.format))
                .map_err(|err| TestCaseError::fail(err.to_string()))?;
            prop_assert_eq!(out.report.overhead, overhead);
            prop_assert_eq!(options.count_body(&reread).total(), out.report.tokens_after);
            if out.report.action == Action::Compacted {
                prop_assert!(out.report.tokens_after <= budget);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Cannot fit through the CLI
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(CASES / 8))]

    /// 4c. Through the CLI, a budget one token under the pinned minimum fits only by shortening
    /// the task; a budget of one token exits 3, writes no output and leaves the input as it
    /// was; the pinned minimum itself fits.
    #[test]
    fn the_cli_exits_3_and_writes_nothing_when_the_budget_cannot_fit(generated in conversation()) {
        let input = generated.parse();
        let pinned = pinned_minimum(&input, Tokenizer::Chars);
        let dir = std::env::temp_dir().join(format!(
            "ctxcompact-properties-cli-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("in.json");
        let out = dir.join("out.json");
        let bytes = serde_json::to_vec(&generated.value).unwrap();
        std::fs::write(&file, &bytes).unwrap();
        let compact = |budget: usize| {
            Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
                .arg("compact")
                .arg(&file)
                .args(["--format", generated.format.as_str(), "--tokenizer", "chars"])
                .args(["--tool-mode", "off", "--no-marker", "--target", &budget.to_string()])
                .arg("-o")
                .arg(&out)
                .output()
                .unwrap()
        };
        let result = (|| {
            if pinned > 1 && !input.messages.is_empty() {
                // One token under the minimum fits only by shortening the task, and says so.
                let under = compact(pinned - 1);
                let stderr = String::from_utf8_lossy(&under.stderr);
                if under.status.code() == Some(0) {
                    prop_assert!(stderr.contains("task shortened"), "{}", stderr);
                    std::fs::remove_file(&out).unwrap();
                }
                let refused = compact(1);
                let stderr = String::from_utf8_lossy(&refused.stderr);
                prop_assert_eq!(refused.status.code(), Some(3), "{}", stderr);
                prop_assert!(stderr.contains("cannot fit"), "{}", stderr);
                prop_assert!(refused.stdout.is_empty());
                prop_assert!(!out.exists(), "an output file was written");
                let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
                prop_assert_eq!(left.len(), 1, "a temporary file was left behind");
            }
            let fits = compact(pinned);
            prop_assert_eq!(fits.status.code(), Some(0), "{}", String::from_utf8_lossy(&fits.stderr));
            prop_assert!(out.exists());
            prop_assert_eq!(std::fs::read(&file).unwrap(), bytes.clone(), "the input changed");
            Ok(())
        })();
        let _ = std::fs::remove_dir_all(&dir);
        result?;
    }
}

// ---------------------------------------------------------------------------------------------
// Tool-heavy sessions fill their budget
// ---------------------------------------------------------------------------------------------

/// Lines of a file an agent read: numbered as a file reader numbers them, each with a few
/// names.
fn file_lines(file: usize, lines: usize) -> String {
    (1..=lines)
        .map(|i| {
            format!(
                "{i:6}\u{2192} def handle_{file}_{i}(request, config_{}): return route_{}(request.path, {i})",
                i % 7,
                (i * file) % 11
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A subagent's session: the task, a read round per file of `reads` lines (mixed sizes), and one
/// `Write` call of `written` lines after the read at `at`, then the agent's answer.
fn tool_heavy(reads: &[usize], written: usize, at: usize) -> Conversation {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a subagent: explore, then report."}),
        json!({"role": "user", "content": "Find how requests are routed and write docs/routes.md."}),
    ];
    let mut round = |id: usize, name: &str, arguments: Value, output: String, text: &str| {
        let call = format!("call_{id}");
        messages.push(
            json!({"role": "assistant", "content": text, "tool_calls": [{"id": call,
            "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]}),
        );
        messages.push(json!({"role": "tool", "tool_call_id": call, "content": output}));
    };
    for (file, &lines) in reads.iter().enumerate() {
        let path = format!("lib/app/router_{file}.py");
        round(
            file,
            "Read",
            json!({"file_path": path}),
            file_lines(file, lines),
            "",
        );
        if file == at {
            let content = file_lines(99, written);
            let arguments = json!({"file_path": "docs/routes.md", "content": content});
            let done = "File created successfully at: docs/routes.md".to_string();
            round(1000, "Write", arguments, done, "Writing the summary.");
        }
    }
    messages.push(json!({"role": "assistant", "content": "Requests are routed by the router; see docs/routes.md."}));
    format::parse_value(json!({"messages": messages}), Some(Format::OpenAi)).unwrap()
}

proptest! {
    #![proptest_config(config(CASES / 16))]

    /// 13. A tool-heavy session (many reads of mixed sizes, one very large call input) at a
    /// half and a quarter of its tokens: what is cleared stops where the budget is met — the
    /// output uses at least 90% of it (the outputs cleared before the input are given back, and
    /// the input is capped where they leave room; outputs cleared before units went are given
    /// back in the room the removal left), or the report says why it cannot: the room left is
    /// smaller than any removed unit that could be kept without splitting a span.
    /// See: #54
    #[test]
    fn a_tool_heavy_session_fills_its_budget_or_says_why(
        reads in vec(select(vec![2usize, 5, 10, 20, 40, 80, 150, 260]), 3..14),
        written in select(vec![150usize, 300, 470, 700]),
        at in 0usize..13,
        quarter in any::<bool>(),
    ) {
        let at = at % reads.len();
        let input = tool_heavy(&reads, written, at);
        let ratio = if quarter { 0.25 } else { 0.5 };
        let options = Options {
            tokenizer: Tokenizer::Chars,
            ..Options::with_budget(Budget::Ratio(ratio))
        };
        let out = ctxcompact::compact(input, &options).unwrap();
        let report = &out.report;
        prop_assert_eq!(report.action, Action::Compacted);
        let room = report.budget - report.tokens_after;
        prop_assert!(
            report.tokens_after * 10 >= report.budget * 9
                || report.smallest_span_end.is_some_and(|unit| unit > room),
            "{} of {} tokens: {:?}, {:?}, smallest span end {:?}",
            report.tokens_after,
            report.budget,
            report.steps,
            report.tool_trim,
            report.smallest_span_end
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The deep run
// ---------------------------------------------------------------------------------------------

/// Runs every property above with [`DEEP`] times its cases.
#[test]
#[ignore = "slow: the properties with 50 times the cases; run with --ignored"]
fn every_property_holds_with_fifty_times_the_cases() {
    SCALE.with(|scale| scale.set(DEEP));
    compacted_output_passes_validation();
    compaction_preserves_order_and_changes_only_what_it_may();
    pinned_units_survive_and_the_tail_survives_unless_relaxed();
    output_fits_the_budget_or_compaction_says_it_cannot();
    the_pinned_minimum_is_exactly_the_smallest_budget_that_fits();
    compaction_is_deterministic();
    compaction_is_idempotent();
    the_report_agrees_with_the_output();
    parse_then_render_is_the_identity();
    tool_trimming_spares_the_latest_rounds_and_excluded_tools();
    every_digest_is_within_its_cap_and_markers_are_deterministic();
    arbitrary_json_never_panics();
    malformed_conversations_never_panic();
    arbitrary_bytes_never_panic();
    the_cli_exits_3_and_writes_nothing_when_the_budget_cannot_fit();
    within_budget_every_format_round_trips_byte_for_byte();
    trim_tools_is_idempotent_and_never_adds_tokens();
    count_of_an_output_is_its_reports_tokens_after();
    a_tool_heavy_session_fills_its_budget_or_says_why();
}

proptest! {
    #![proptest_config(config(CASES / 4))]

    /// 12. With an archive, a compaction keeps its budget, and its output and archive files
    /// give back the input, message for message, in every format. See: #26
    #[test]
    fn output_and_archive_give_back_the_input(generated in conversation(), percent in 5usize..90) {
        let input = generated.parse();
        let total = total(&input, Tokenizer::Chars);
        let budget = (total * percent / 100).max(1);
        let options = Options {
            tokenizer: Tokenizer::Chars,
            archive: Some(std::env::temp_dir().join("ctxcompact-property-archive")),
            ..Options::with_budget(Budget::Tokens(budget))
        };
        if let Ok(out) = ctxcompact::compact(input.clone(), &options) {
            if out.report.action == Action::Compacted {
                prop_assert!(out.report.tokens_after <= budget);
            }
            crate::archive::reassembles(&input, &out).map_err(TestCaseError::fail)?;
        }
    }

    /// 12b. Handles without an archive folder: the notes name handles alone, the files come
    /// back in memory under them, never written, and give back the input all the same. See: #53
    #[test]
    fn output_and_handles_give_back_the_input(generated in conversation(), percent in 5usize..90) {
        let input = generated.parse();
        let total = total(&input, Tokenizer::Chars);
        let budget = (total * percent / 100).max(1);
        let options = Options {
            tokenizer: Tokenizer::Chars,
            handles: true,
            ..Options::with_budget(Budget::Tokens(budget))
        };
        if let Ok(out) = ctxcompact::compact(input.clone(), &options) {
            prop_assert!(out.archive.iter().all(|(handle, _)| std::path::Path::new(handle).extension().is_none()));
            prop_assert!(out.write_archive().unwrap().is_empty());
            crate::archive::reassembles(&input, &out).map_err(TestCaseError::fail)?;
        }
    }
}
