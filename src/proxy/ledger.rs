//! The ledger: one JSON line per request; the same lines feed the totals and metrics
//! (`super::metrics`).
//!
//! A line holds the time, the path (never the query, which may carry a key), the model, the
//! window used and where it came from (`flag`, `catalog`, `family`), the agent recognised and
//! by what, the trigger in tokens and why, the tokens received and forwarded, the action and
//! why (with the kind, when it failed open), the conversation's compactions so far and those
//! this request ran, the time the proxy added, and the usage the provider reported with its
//! cost at the price family of the model's catalog profile (`data/prices.json`). It never
//! holds message text or a header.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::relay::Ending;
use super::usage::Usage;
use crate::cost::Prices;
use crate::format::Format;
use crate::request::{CompactionFacts, Facts, Forward, Verdict};

/// One request's line.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Entry {
    /// RFC 3339, UTC, milliseconds.
    pub(crate) time: String,
    pub(crate) method: String,
    /// The path, without the query.
    pub(crate) path: String,
    pub(crate) model: Option<String>,
    /// The window and where it came from, the agent and what told it, the trigger and why.
    #[serde(flatten)]
    pub(crate) facts: Facts,
    pub(crate) status: Option<u16>,
    /// The tokens received and forwarded, the action and why, the compactions.
    #[serde(flatten)]
    pub(crate) verdict: Verdict,
    /// Milliseconds between the whole body's arrival and the request leaving for upstream.
    pub(crate) proxy_ms: f64,
    pub(crate) usage: Option<Usage>,
    /// US dollars for the reported usage, at `data/prices.json`'s prices for the model.
    pub(crate) cost_usd: Option<f64>,
    /// How the response ended.
    pub(crate) response: Option<Ending>,
    /// What the request's compactions left to account for: an archive that could not be
    /// written, the instruction files pinned, the budget, the depth.
    #[serde(flatten)]
    pub(crate) compaction: CompactionFacts,
    /// The API the body was read as (none: not read); the path says it in the line.
    #[serde(skip)]
    pub(crate) api: Option<Format>,
    /// How far the request got upstream; the status says it in the line.
    #[serde(skip)]
    pub(crate) upstream: Upstream,
}

/// How far a request got towards upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Upstream {
    /// Answered by the proxy itself (a refused upgrade, a body that broke off).
    NotSent,
    /// Sent, and no answer came (the client got a 502).
    Unreachable,
    /// Upstream answered with the line's status.
    Answered,
}

impl Entry {
    /// A request's line before anything is known of it but its time, method and path.
    pub(crate) fn new(time: SystemTime, method: String, path: String) -> Self {
        Self {
            time: rfc3339(time),
            method,
            path,
            model: None,
            facts: Facts::default(),
            status: None,
            verdict: Verdict::default(),
            proxy_ms: 0.0,
            usage: None,
            cost_usd: None,
            response: None,
            compaction: CompactionFacts::default(),
            api: None,
            upstream: Upstream::NotSent,
        }
    }

    /// Fills in what the request's compaction did and knew.
    pub(crate) fn decided(&mut self, forward: Forward) {
        self.model = forward.model;
        self.facts = forward.facts;
        self.verdict = forward.verdict;
        self.compaction = forward.compaction;
    }
}

/// Where entries go.
pub(crate) struct Ledger {
    file: Option<Mutex<File>>,
    prices: &'static Prices,
}

impl Ledger {
    /// A ledger appending to `path`, or writing nothing.
    pub(crate) fn open(path: Option<&Path>) -> std::io::Result<Self> {
        let file = match path {
            Some(path) => Some(Mutex::new(
                OpenOptions::new().create(true).append(true).open(path)?,
            )),
            None => None,
        };
        Ok(Self {
            file,
            prices: Prices::builtin(),
        })
    }

    /// The cost of `usage` at the price family `price` (the model's catalog profile's), when
    /// there is one.
    pub(crate) fn cost(&self, price: Option<&str>, usage: &Usage) -> Option<f64> {
        let family = self.prices.family(price?)?;
        Some(family.dollars(
            usage.input_tokens,
            usage.cache_read_input_tokens,
            usage.cache_creation_input_tokens,
            usage.output_tokens,
        ))
    }

    /// Writes an entry's line.
    pub(crate) fn record(&self, entry: &Entry) {
        if let Some(file) = &self.file {
            let mut line = serde_json::to_vec(entry).expect("an entry serializes");
            line.push(b'\n');
            let mut file = file
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // A ledger that cannot be written must not fail the request it accounts for.
            let _ = file.write_all(&line);
        }
    }
}

/// `time` as RFC 3339 in UTC with milliseconds (`2026-12-01T10:28:03.123Z`).
fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Days to a civil date (Howard Hinnant's algorithm, proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_line_keeps_its_keys_in_order_and_names_an_agent_only_when_one_was_recognised() {
        let mut entry = Entry::new(UNIX_EPOCH, "POST".into(), "/v1/messages".into());
        let line = serde_json::to_string(&entry).unwrap();
        assert_eq!(
            line,
            r#"{"time":"1970-01-01T00:00:00.000Z","method":"POST","path":"/v1/messages","model":null,"window":null,"window_source":null,"trigger":null,"trigger_reason":null,"status":null,"tokens_received":null,"tokens_forwarded":null,"action":"passthrough","reason":null,"compactions":null,"compactions_run":0,"proxy_ms":0.0,"usage":null,"cost_usd":null,"response":null}"#
        );
        entry.facts.client = Some(crate::request::Agent::Codex);
        entry.facts.client_by = Some("originator header");
        let line = serde_json::to_string(&entry).unwrap();
        assert!(
            line.contains(r#""window_source":null,"client":"codex","client_by":"originator header","trigger":null"#),
            "{line}"
        );
    }

    #[test]
    fn times_are_rfc3339_utc() {
        let time = UNIX_EPOCH + Duration::from_millis(1_764_584_883_123);
        assert_eq!(rfc3339(time), "2025-12-01T10:28:03.123Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }
}
