//! The HTTP reverse proxy between an agent and its provider (feature `proxy`): what `ctxcompact
//! proxy` runs, callable from Rust.
//!
//! One concept per file: `config` (the settings a proxy is given), `route` (which requests are
//! read), `ledger` (one line per request), `metrics` (the totals the lines add up to, as JSON
//! and in Prometheus's text format), `usage` (what a response reports), `relay` (streaming to
//! and from upstream) and `serve` (accepting connections and running each request through
//! them, until the process stops or the caller stops it). What a read body becomes is [`crate::request`]'s [`Compactor`]: the
//! server adds sockets, streaming, the ledger and fail-open, never a choice of its own, so its
//! upstream bytes are those the compactor gives for the same body.
//!
//! Fail-open: a body the proxy cannot read, validate or fit goes upstream unchanged, and
//! whatever upstream answers (errors included) reaches the client unchanged. Credentials in
//! headers are forwarded untouched and never written anywhere. The server prints nothing: what
//! it has to say (where it listens, a failed accept, a model it cannot size) reaches the caller
//! as an [`Event`]. It reads the clock for the ledger's times only.
//!
//! # Example
//! ```no_run
//! use ctxcompact::proxy::{Config, Event};
//! use ctxcompact::request::Compactor;
//! use ctxcompact::Settings;
//!
//! // Past 70% of each model's window, compact to 50%; cache 1,024 replayed conversations.
//! let compactor = Compactor::new(&Settings::default(), None, 1024)?;
//! let config = Config {
//!     ledger: Some("ctxcompact.jsonl".into()),
//!     ..Config::new(compactor)
//! };
//! // Serves on 127.0.0.1:8787 until the process stops.
//! config.serve(|event: Event| eprintln!("ctxcompact proxy: {event}"))?;
//! # Ok::<(), ctxcompact::Error>(())
//! ```
//!
//! [`Compactor`]: crate::request::Compactor

mod config;
mod ledger;
mod metrics;
mod relay;
mod route;
mod serve;
mod usage;

pub use config::{Config, Provider};
pub use metrics::RequestTotals;
pub use serve::{Event, Running};
