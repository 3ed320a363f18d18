//! The proxy's running totals, kept as atomic counters that each request's ledger line is
//! added to as it is written, and read two ways: as JSON (`GET /ctxcompact/stats`) and in
//! Prometheus's text exposition format, version 0.0.4 (`GET /metrics`).
//!
//! The line that goes to the ledger feeds both, so they never disagree with each other or with
//! the ledger: recording is a handful of relaxed atomic additions, never a lock. The label sets
//! are closed (actions, APIs, fail-open kinds, status classes), so every series exists from
//! the start, at 0. Names follow Prometheus's conventions: the `ctxcompact_` prefix, base units
//! (`_seconds`, `_tokens`), `_total` on counters.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::ledger::{Entry, Upstream};
use crate::format::Format;
use crate::request::{FailOpen, Handling};

/// The content type of the exposition.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The APIs a request is counted under: the formats the proxy reads, then `other` for a
/// request it does not read.
const APIS: [Option<Format>; 5] = [
    Some(Format::Anthropic),
    Some(Format::OpenAi),
    Some(Format::Responses),
    Some(Format::Gemini),
    None,
];

/// The upper bounds, in seconds, of the buckets of the time the proxy adds: from a tenth of a
/// millisecond (a body under the trigger, docs/proxy.md's figures: 0.2 ms at the median) to a
/// second (a compaction of a very long history).
const ADDED_BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// The totals since the proxy started, as `GET /ctxcompact/stats` returns them and a caller of
/// [`Running::totals`](super::Running::totals) reads them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RequestTotals {
    /// Requests recorded (every request but the proxy's own pages).
    pub requests: u64,
    /// Read and forwarded byte for byte.
    pub forwarded: u64,
    /// Read and sent compacted.
    pub compacted: u64,
    /// Not read: forwarded unchanged.
    pub passthrough: u64,
    /// Read but forwarded unchanged, as it could not be used.
    pub failed_open: u64,
    /// Compactions run.
    pub compactions: u64,
    /// Requests whose compactions' archive files could not be written (each went on without
    /// them; the ledger line says why).
    pub archive_errors: u64,
    /// Tokens of the read bodies as received.
    pub tokens_received: u64,
    /// Tokens of the read bodies as forwarded.
    pub tokens_forwarded: u64,
    /// Received less forwarded, over the compacted requests.
    pub tokens_saved: u64,
    /// Input tokens the provider reported (cached ones included).
    pub reported_input_tokens: u64,
    /// Output tokens the provider reported.
    pub reported_output_tokens: u64,
    /// US dollars for the reported usage, at `data/prices.json`'s prices.
    pub cost_usd: f64,
    /// Conversations whose replayed state is cached now.
    pub cached_conversations: usize,
}

/// The counters.
pub(crate) struct Metrics {
    /// Requests by action (`Handling::ALL`'s order) and API (`APIS`' order).
    requests: [[AtomicU64; APIS.len()]; Handling::ALL.len()],
    failed_open: [AtomicU64; FailOpen::ALL.len()],
    compactions: AtomicU64,
    archive_errors: AtomicU64,
    tokens_received: AtomicU64,
    tokens_forwarded: AtomicU64,
    tokens_saved: AtomicU64,
    reported_input: AtomicU64,
    reported_output: AtomicU64,
    /// The cost's `f64` bits.
    cost_usd: AtomicU64,
    /// Upstream answers by status class: 1xx to 5xx.
    upstream: [AtomicU64; 5],
    upstream_unreachable: AtomicU64,
    added: Histogram,
}

/// A histogram of durations over `ADDED_BUCKETS`: counts per bucket (not cumulative; the last
/// one past every bound), and the sum in nanoseconds.
struct Histogram {
    buckets: [AtomicU64; ADDED_BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Metrics {
    pub(crate) fn new() -> Self {
        Self {
            requests: Default::default(),
            failed_open: Default::default(),
            compactions: AtomicU64::new(0),
            archive_errors: AtomicU64::new(0),
            tokens_received: AtomicU64::new(0),
            tokens_forwarded: AtomicU64::new(0),
            tokens_saved: AtomicU64::new(0),
            reported_input: AtomicU64::new(0),
            reported_output: AtomicU64::new(0),
            cost_usd: AtomicU64::new(0.0_f64.to_bits()),
            upstream: Default::default(),
            upstream_unreachable: AtomicU64::new(0),
            added: Histogram {
                buckets: Default::default(),
                sum_nanos: AtomicU64::new(0),
            },
        }
    }

    /// Adds a request's line.
    pub(crate) fn record(&self, entry: &Entry) {
        let add = |counter: &AtomicU64, n: u64| counter.fetch_add(n, Ordering::Relaxed);
        let action = index(&Handling::ALL, &entry.verdict.action);
        add(&self.requests[action][index(&APIS, &entry.api)], 1);
        if let Some(why) = entry.verdict.fail_open {
            add(&self.failed_open[index(&FailOpen::ALL, &why)], 1);
        }
        add(&self.compactions, entry.verdict.compactions_run as u64);
        add(
            &self.archive_errors,
            u64::from(entry.compaction.archive_error.is_some()),
        );
        let received = entry.verdict.tokens_received.unwrap_or(0) as u64;
        let forwarded = entry.verdict.tokens_forwarded.unwrap_or(0) as u64;
        add(&self.tokens_received, received);
        add(&self.tokens_forwarded, forwarded);
        if entry.verdict.action == Handling::Compacted {
            add(&self.tokens_saved, received.saturating_sub(forwarded));
        }
        if let Some(usage) = &entry.usage {
            add(&self.reported_input, usage.total_input());
            add(&self.reported_output, usage.output_tokens);
        }
        if let Some(cost) = entry.cost_usd {
            let _ = self
                .cost_usd
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                    Some((f64::from_bits(bits) + cost).to_bits())
                });
        }
        match entry.upstream {
            Upstream::NotSent => return,
            Upstream::Unreachable => {
                add(&self.upstream_unreachable, 1);
            }
            Upstream::Answered => {
                let class = entry.status.map_or(0, |s| usize::from(s / 100));
                if let Some(counter) = class.checked_sub(1).and_then(|c| self.upstream.get(c)) {
                    add(counter, 1);
                }
            }
        }
        let seconds = entry.proxy_ms / 1000.0;
        let bucket = ADDED_BUCKETS
            .iter()
            .position(|&bound| seconds <= bound)
            .unwrap_or(ADDED_BUCKETS.len());
        add(&self.added.buckets[bucket], 1);
        // Whole nanoseconds: a sum of integers stays exact however many are added.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        add(&self.added.sum_nanos, (entry.proxy_ms * 1e6).round() as u64);
    }

    /// The totals, with the cache's size.
    pub(crate) fn totals(&self, cached: usize) -> RequestTotals {
        let by_action = |action: Handling| {
            self.requests[index(&Handling::ALL, &action)]
                .iter()
                .map(load)
                .sum()
        };
        let [forwarded, compacted, passthrough, failed_open] = Handling::ALL.map(by_action);
        RequestTotals {
            requests: forwarded + compacted + passthrough + failed_open,
            forwarded,
            compacted,
            passthrough,
            failed_open,
            compactions: load(&self.compactions),
            archive_errors: load(&self.archive_errors),
            tokens_received: load(&self.tokens_received),
            tokens_forwarded: load(&self.tokens_forwarded),
            tokens_saved: load(&self.tokens_saved),
            reported_input_tokens: load(&self.reported_input),
            reported_output_tokens: load(&self.reported_output),
            cost_usd: f64::from_bits(load(&self.cost_usd)),
            cached_conversations: cached,
        }
    }

    /// The exposition, with the cache's size.
    pub(crate) fn exposition(&self, cached: usize) -> String {
        let mut out = String::with_capacity(4096);
        self.write_requests(&mut out);
        self.write_counters(&mut out);
        self.write_added(&mut out);
        family(
            &mut out,
            "ctxcompact_cached_conversations",
            "gauge",
            "Conversations whose replayed state is cached.",
        );
        let _ = writeln!(out, "ctxcompact_cached_conversations {cached}");
        out
    }

    /// The requests by action and API, and those failed open by why.
    fn write_requests(&self, out: &mut String) {
        let name = "ctxcompact_requests_total";
        let help = "Requests, by what the proxy did with the body and the API it was read as (other: not read).";
        family(out, name, "counter", help);
        for (action, row) in Handling::ALL.iter().zip(&self.requests) {
            for (api, counter) in APIS.iter().zip(row) {
                let labels = format!(
                    "action=\"{}\",api=\"{}\"",
                    action.as_str(),
                    api.map_or("other", Format::as_str)
                );
                let _ = writeln!(out, "{name}{{{labels}}} {}", load(counter));
            }
        }
        let name = "ctxcompact_failed_open_total";
        family(
            out,
            name,
            "counter",
            "Requests read but forwarded unchanged, by why.",
        );
        for (why, counter) in FailOpen::ALL.iter().zip(&self.failed_open) {
            let reason = why.as_str();
            let _ = writeln!(out, "{name}{{reason=\"{reason}\"}} {}", load(counter));
        }
    }

    /// The counters without labels, the cost, and the upstream answers by status class.
    fn write_counters(&self, out: &mut String) {
        let counters = [
            ("compactions", "Compactions run.", &self.compactions),
            (
                "archive_errors",
                "Requests whose removed history could not be archived (each went on without it).",
                &self.archive_errors,
            ),
            (
                "received_tokens",
                "Tokens of the read request bodies as received.",
                &self.tokens_received,
            ),
            (
                "forwarded_tokens",
                "Tokens of the read request bodies as forwarded.",
                &self.tokens_forwarded,
            ),
            (
                "saved_tokens",
                "Tokens received less tokens forwarded, over the requests sent compacted.",
                &self.tokens_saved,
            ),
            (
                "reported_input_tokens",
                "Input tokens the provider reported, cached ones included.",
                &self.reported_input,
            ),
            (
                "reported_output_tokens",
                "Output tokens the provider reported.",
                &self.reported_output,
            ),
            (
                "upstream_unreachable",
                "Requests sent upstream that got no answer (the client got a 502).",
                &self.upstream_unreachable,
            ),
        ];
        for (name, help, counter) in counters {
            let name = format!("ctxcompact_{name}_total");
            family(out, &name, "counter", help);
            let _ = writeln!(out, "{name} {}", load(counter));
        }
        let name = "ctxcompact_reported_cost_dollars_total";
        let help = "US dollars for the usage the provider reported, at the model's list prices.";
        family(out, name, "counter", help);
        let _ = writeln!(out, "{name} {}", f64::from_bits(load(&self.cost_usd)));
        let name = "ctxcompact_upstream_responses_total";
        family(out, name, "counter", "Upstream answers, by status class.");
        for (class, counter) in (1..).zip(&self.upstream) {
            let _ = writeln!(out, "{name}{{class=\"{class}xx\"}} {}", load(counter));
        }
    }

    /// The histogram of the time the proxy adds.
    fn write_added(&self, out: &mut String) {
        let name = "ctxcompact_proxy_added_seconds";
        let help = "Time from a request body's arrival to the request leaving for upstream.";
        family(out, name, "histogram", help);
        let mut cumulative = 0;
        for (i, counter) in self.added.buckets.iter().enumerate() {
            cumulative += load(counter);
            let bound = ADDED_BUCKETS
                .get(i)
                .map_or_else(|| "+Inf".to_string(), ToString::to_string);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        let sum = load(&self.added.sum_nanos) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum {sum}");
        let _ = writeln!(out, "{name}_count {cumulative}");
    }
}

/// A counter's value.
fn load(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// The position of `item` in `all` (every closed set here lists all of its values).
fn index<T: PartialEq>(all: &[T], item: &T) -> usize {
    all.iter()
        .position(|x| x == item)
        .expect("the closed set lists every value")
}

/// A metric family's `HELP` and `TYPE` lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    fn entry(action: Handling, api: Option<Format>, upstream: Upstream) -> Entry {
        let mut entry = Entry::new(UNIX_EPOCH, "POST".into(), "/v1/messages".into());
        entry.verdict.action = action;
        entry.api = api;
        entry.upstream = upstream;
        entry
    }

    #[test]
    fn one_record_feeds_the_totals_and_the_exposition() {
        let metrics = Metrics::new();
        let mut compacted = entry(
            Handling::Compacted,
            Some(Format::Anthropic),
            Upstream::Answered,
        );
        compacted.verdict.tokens_received = Some(1000);
        compacted.verdict.tokens_forwarded = Some(400);
        compacted.verdict.compactions_run = 1;
        compacted.status = Some(200);
        compacted.proxy_ms = 2.0;
        metrics.record(&compacted);
        let mut failed = entry(
            Handling::FailedOpen,
            Some(Format::OpenAi),
            Upstream::Answered,
        );
        failed.verdict.fail_open = Some(FailOpen::NotJson);
        failed.status = Some(400);
        failed.proxy_ms = 0.05;
        metrics.record(&failed);
        metrics.record(&entry(Handling::Passthrough, None, Upstream::NotSent));

        let totals = metrics.totals(3);
        assert_eq!(
            (totals.requests, totals.compacted, totals.failed_open),
            (3, 1, 1)
        );
        assert_eq!((totals.compactions, totals.tokens_saved), (1, 600));
        assert_eq!(totals.cached_conversations, 3);

        let text = metrics.exposition(3);
        for line in [
            "ctxcompact_requests_total{action=\"compacted\",api=\"anthropic\"} 1",
            "ctxcompact_requests_total{action=\"failed_open\",api=\"openai\"} 1",
            "ctxcompact_requests_total{action=\"passthrough\",api=\"other\"} 1",
            "ctxcompact_failed_open_total{reason=\"not_json\"} 1",
            "ctxcompact_saved_tokens_total 600",
            "ctxcompact_upstream_responses_total{class=\"2xx\"} 1",
            "ctxcompact_upstream_responses_total{class=\"4xx\"} 1",
            "ctxcompact_proxy_added_seconds_bucket{le=\"0.0001\"} 1",
            "ctxcompact_proxy_added_seconds_bucket{le=\"0.0025\"} 2",
            "ctxcompact_proxy_added_seconds_bucket{le=\"+Inf\"} 2",
            "ctxcompact_proxy_added_seconds_sum 0.00205",
            "ctxcompact_proxy_added_seconds_count 2",
            "ctxcompact_cached_conversations 3",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }
}
