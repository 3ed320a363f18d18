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
//! - **request**: a user message holding a person's words (not only harness text or tool results).
//! - **body**: a provider request — what a client sends a model's API: the messages, and outside
//!   them a system prompt, tool definitions and other fields. What `ctxcompact count`,
//!   [`Options::count_body`] and the [`request`] module (named for the provider request) read;
//!   one of its user messages may be a *request* above.
//! - **outside** (the messages): a body's tokens beyond its messages — its own system prompt and
//!   tool definitions, and the **unlogged** part the conversation does not hold (an agent's own
//!   prompt and tools: the `overhead` setting, or what an anchor measured); [`Counts::outside`],
//!   `"system"` in `count --json`.
//! - **harness text**: machine text an agent puts in a user turn (environment notes, command
//!   echoes, reminders, interruption notes, ctxcompact's own markers); told from requests by the
//!   patterns of `data/harness.json`.
//! - **task**: the first request; **current request**: the last one. Both are pinned.
//! - **unit**: the smallest group of messages that stays or goes together — a single message,
//!   or a whole **tool round**.
//! - **tool round**: an assistant message with tool calls plus every message carrying one of
//!   its results (parallel calls included).
//! - **instruction file**: the `AGENTS.md` / `CLAUDE.md` / `GEMINI.md` content an agent injects
//!   into a user turn, in a wrapper of its own (the patterns of `data/instructions.json`).
//! - **standing instruction**: an imperative sentence of a request (must, never, always, don't…):
//!   kept verbatim in the digest of the span that removes its request.
//! - **pinned**: never removed — system messages, instruction files, the task, the current
//!   request, the last unit.
//! - **budget**: the token count the output must not exceed; with a model's window, a
//!   **trigger** (compact past it) and a **target** (compact down to it).
//! - **plan**: the units a strategy removes; applying it is a separate step.
//! - **span**: a run of consecutive removed units; each leaves one **marker** at its place.
//! - **marker**: the note standing for a removed span: how many messages and input tokens it
//!   replaces, and its **digest** — the span's requests, files, commands, errors and last state.
//! - **placeholder**: the note a cleared tool output is replaced with (tool, size, outcome line).
//! - **rule**: one of the selector's conditions over the conversation's features.
//! - **profile**: a model's catalog entry — window, tokenizer, strategy preference, price
//!   family; every model name resolves to one through [`catalog::Catalog::resolve`].
//! - **calibrated estimate**: the text's o200k tokens × a model family's factor, plus a cost per
//!   tool call, fitted on the input sizes providers reported in recorded logs (`ctxcompact
//!   calibrate`); how Claude and Gemini are counted, their tokenizers not being public.
//! - **anchor**: an input size a provider reported for an earlier call; counts are then that
//!   figure plus the estimate of what was added since ([`Session::observe_usage`],
//!   [`Options::anchor`]).
//!
//! # Layers
//! Each module imports only from the modules listed before it (bottom to top; the order of
//! `docs/architecture.md`, which `tests/layers.rs` checks); the data flows up:
//! 0. `account` (every type of the report's JSON a run computes, in one place),
//!    `conversation` (the neutral model), `note` (the wording of every note), `parallel`
//!    (threads), `hash` (the one hasher);
//! 1. `error`, `classify` (who wrote a user message), `evidence` (paths, commands, outcomes),
//!    `identifiers` (the tokens things are named by: user names, order numbers, hashes, URLs),
//!    `instructions` (the instruction files agents inject);
//! 2. `tokens` (counting, calibrated estimates);
//! 3. `format` (one file per format), `budget`, `features`, `catalog` (model names), `gist`
//!    (what a cleared tool output keeps);
//! 4. `units` (the one grouping), `digest`, `validate`, `cost` (prices by catalog name, the
//!    cost model), `state` (the run's state: its input, the conversation as each step leaves
//!    it, where each message came from, what was taken out), `archive` (the removed history's
//!    files);
//! 5. `strategy` (plans, tool trimming, the one `apply`);
//! 6. `select` (profile, rules, scoring: the layers that read only the features decided once
//!    per run), `tuning` (its thresholds, public); 7. `options`, then `settings` (options by name, from the CLI, the proxy and
//!    Python); 8. `report` (built from the finished run); 9. `planner`, then `degrade` (the
//!    degrade order under a tight budget);
//! 10. `compact` (the pipeline, one stage a call); 11. `session` (agent loops); 12. `request`
//!     (a provider request body in, what to forward out: the proxy's compaction without the
//!     socket); 13. `proxy` (behind the `proxy` feature: the HTTP server around `request`;
//!     tokio and hyper live only here).
//!
//! Above the engine, behind the `lab` feature (which the `cli` feature turns on), `lab` holds the
//! measurements of the CLI's `bench`, `replay` and `calibrate`; it is not part of the stable
//! API. It reads the clock, as the proxy does for its ledger's times only; no decision does.
//! Public modules: [`mod@format`], [`report`] (every type a report holds), [`catalog`],
//! [`tuning`], [`request`], `proxy`.
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
//! The model profile first, then rules over the conversation's features, then —
//! when no rule is confident — both strategies are run and scored.

mod account;
mod archive;
#[cfg(feature = "binding")]
pub mod binding;
mod budget;
pub mod catalog;
mod classify;
mod compact;
mod conversation;
mod cost;
mod degrade;
mod digest;
mod error;
mod evidence;
mod features;
pub mod format;
mod gist;
mod hash;
mod identifiers;
mod instructions;
#[cfg(feature = "lab")]
#[doc(hidden)]
pub mod lab;
mod note;
mod options;
mod parallel;
mod planner;
mod profile;
#[cfg(feature = "proxy")]
pub mod proxy;
pub mod recall;
mod relevance;
pub mod report;
pub mod request;
mod select;
mod session;
mod settings;
mod state;
mod strategy;
mod tokens;
pub mod tuning;
mod units;
mod validate;

pub use account::MarkerMode;
pub use account::Strategy;
pub use budget::Budget;
pub use compact::{Compacted, analyze, compact, trim_tools};
pub use conversation::{Conversation, Message, Part, Role};
pub use error::{Error, Problem, Result};
pub use options::Options;
pub use report::Report;
pub use session::Session;
pub use settings::Settings;
pub use strategy::tools::{ToolMode, ToolOptions};
pub use tokens::{Counts, TokenCounter, Tokenizer, count_with};
pub use validate::check as validate;
