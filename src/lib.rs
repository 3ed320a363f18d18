//! Deterministic compaction of LLM conversation histories: no model calls, the same input and
//! settings always give the same output.
//!
//! When a conversation outgrows its budget, ctxcompact first trims old tool outputs, then
//! removes whole units of history — never splitting a tool call from its results — and reports
//! what it removed and why. It reads and writes the OpenAI Chat Completions, Anthropic Messages,
//! OpenAI Responses, Gemini and Bedrock Converse request formats, keeping every field it does not
//! interpret, and reads Claude Code, Codex, Gemini CLI and pi session logs into the API format
//! they hold (see [`mod@format`]).
//!
//! # Glossary
//! - **unit**: the smallest group of messages that stays or goes together — a single message,
//!   or a whole **tool round**.
//! - **tool round**: an assistant message with tool calls plus every message carrying one of
//!   its results (parallel calls included).
//! - **pinned**: never removed — system messages, the last user message, the last unit.
//! - **budget**: the token count the output must not exceed.
//! - **plan**: the units a strategy removes; applying it is a separate step.
//! - **rule**: one of the selector's conditions over the conversation's features.
//! - **profile**: a model's catalog entry — window, tokenizer, strategy preference.
//! - **calibrated estimate**: the text's o200k tokens × a model family's factor, plus a cost per
//!   tool call, fitted on the input sizes providers reported in recorded logs ([`calibrate`]);
//!   how Claude and Gemini are counted, their tokenizers not being public.
//! - **anchor**: an input size a provider reported for an earlier call; counts are then that
//!   figure plus the estimate of what was added since ([`Session::observe_usage`],
//!   [`Options::anchor`]).
//!
//! # Example
//! ```
//! use ctxcompact::{Budget, Options, compact, format};
//!
//! let input = br#"{"model": "gpt-4o", "messages": [
//!   {"role": "system", "content": "You are terse."},
//!   {"role": "user", "content": "Summarise the plot of Hamlet in detail, act by act."},
//!   {"role": "assistant", "content": "Act one: a ghost appears and demands revenge. Act two: Hamlet feigns madness. Act three: the play within the play. Act four: Ophelia drowns. Act five: everyone dies."},
//!   {"role": "user", "content": "And Macbeth?"}
//! ]}"#;
//! let conversation = format::parse(input, None)?;
//! let options = Options::with_budget(Budget::Tokens(60));
//! let compacted = compact(conversation, &options)?;
//! assert!(compacted.report.tokens_after <= 60);
//! // The system prompt and the last user message are pinned.
//! let kept = &compacted.conversation.messages;
//! assert_eq!(kept.first().unwrap().text(), "You are terse.");
//! assert_eq!(kept.last().unwrap().text(), "And Macbeth?");
//! # Ok::<(), ctxcompact::Error>(())
//! ```
//!
//! # How a strategy is chosen
//! See [`select`]: the model profile first, then rules over the conversation's features, then —
//! when no rule is confident — both strategies are run and scored.

mod budget;
mod catalog;
mod classify;
mod compact;
mod conversation;
pub mod cost;
mod digest;
mod error;
mod evidence;
mod features;
pub mod format;
mod hash;
#[cfg(feature = "lab")]
#[doc(hidden)]
pub mod lab;
mod note;
mod options;
mod parallel;
mod planner;
mod report;
pub mod select;
mod session;
mod strategy;
mod tokens;
mod units;
mod validate;

pub use budget::Budget;
pub use catalog::{Catalog, Preference, Profile};
pub use compact::{Compacted, analyze, compact, trim_tools};
pub use conversation::{Conversation, Layout, Message, Part, Role};
pub use digest::MarkerMode;
pub use error::{Error, Location, Result};
pub use error::{Problem, ProblemKind};
pub use features::{Features, Severity, Thresholds};
pub use format::Format;
pub use options::Options;
pub use report::{Action, Report};
pub use session::{Compaction, Session, Turn};
pub use strategy::tools::{ToolMode, ToolOptions, ToolTrim};
pub use strategy::{Protection, Strategy};
pub use tokens::{Counts, Factor, TokenCounter, Tokenizer, count};
pub use validate::check as validate;
