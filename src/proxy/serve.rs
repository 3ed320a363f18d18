//! Serving: accepting connections and running each request through routing, the request's
//! compaction and the relay, on a runtime of the proxy's own, until the process stops
//! ([`Config::serve`]) or the caller stops it ([`Config::start`], [`Running`]); what the
//! server has to say goes to the caller as an [`Event`].
//!
//! Fail-open: a body the proxy cannot read, validate or fit goes upstream unchanged, and
//! whatever upstream answers (errors included) reaches the client unchanged. Credentials in
//! headers are forwarded untouched and never written anywhere.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderValue, UPGRADE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::config::{Config, Provider, Upstreams};
use super::ledger::{Entry, Ledger, Upstream};
use super::metrics::{self, Metrics, RequestTotals};
use super::relay::{self, Body, Client, Ending, Prefixed, Relay};
use super::route::{self, Route};
use super::usage::Usage;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::request::{Agent, FailOpen, Forward};

/// Why a WebSocket upgrade is refused. Relaying the frames would leave the proxy incremental
/// turns (`previous_response_id` and only the new items) it cannot compact; refused with 426,
/// Codex falls back to HTTPS at once, without the retries a dropped upgrade costs it, and every
/// turn is then a full POST body the engine reads (docs/proxy.md).
const UPGRADE_REFUSED: &str =
    "WebSocket upgrade refused: ctxcompact proxy relays HTTP only; send the request as a POST";

/// How long the server waits after a failed accept (out of file descriptors and the like)
/// rather than spin.
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// How long stopping waits for compactions under way; past it they are abandoned (their
/// clients are gone with the server).
const STOP_WAIT: Duration = Duration::from_secs(1);

/// What a running proxy has to tell its caller (the command line prints each on standard
/// error, after `ctxcompact proxy: `); its `Display` is that line.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// The proxy listens on this address (the port chosen when `listen` asked for port 0).
    Listening(SocketAddr),
    /// Accepting a connection failed; the server waits a moment and goes on.
    AcceptFailed(std::io::Error),
    /// A model no catalog name or family naming rule reads: its requests go through unchanged.
    /// Told once per model and server.
    UnknownModel(String),
    /// A compaction's removed history could not be archived: the request went on without it
    /// (counted in the metrics, and said in the ledger line).
    ArchiveFailed(String),
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Listening(addr) => write!(f, "listening on http://{addr}"),
            Self::AcceptFailed(err) => write!(f, "accept failed: {err}"),
            Self::ArchiveFailed(why) => write!(
                f,
                "cannot archive removed history (the request went on without it): {why}"
            ),
            Self::UnknownModel(model) => write!(
                f,
                "unknown model `{model}` (no catalog name or family naming rule reads it): its requests go through unchanged; pass --window N to compact them"
            ),
        }
    }
}

/// What every connection shares.
struct Shared {
    config: Config,
    upstreams: Upstreams,
    ledger: Ledger,
    /// The totals the ledger's lines add up to.
    metrics: Metrics,
    client: Client,
    on_event: Box<dyn Fn(Event) + Send + Sync>,
    /// The unknown models already told (once each per server).
    told: Mutex<BTreeSet<String>>,
}

impl Shared {
    /// Records a request's line: in the ledger, and in the totals and metrics.
    fn record(&self, entry: &Entry) {
        self.metrics.record(entry);
        self.ledger.record(entry);
    }

    /// Tells the caller of a model no catalog rule reads, the first time only.
    fn unknown_model(&self, model: &str) {
        let mut told = self
            .told
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if told.insert(model.to_string()) {
            (self.on_event)(Event::UnknownModel(model.to_string()));
        }
    }
}

impl Config {
    /// Runs the proxy on a runtime of its own, blocking the calling thread until the process
    /// stops; `on_event` is called with what the server has to tell (from any of its threads).
    ///
    /// # Errors
    /// Only before it serves: those of [`Config::start`].
    pub fn serve(self, on_event: impl Fn(Event) + Send + Sync + 'static) -> Result<Infallible> {
        let _running = self.start(on_event)?;
        loop {
            std::thread::park();
        }
    }

    /// Starts the proxy on a runtime of its own and returns once it listens: it serves in the
    /// background until the [`Running`] handle is stopped or dropped. `on_event` is called with
    /// what the server has to tell (from any of its threads), first where it listens.
    ///
    /// # Errors
    /// What [`Config::check`] finds, then [`Error::Proxy`] when the ledger cannot be opened,
    /// the runtime cannot start or the address cannot be listened on.
    pub fn start(self, on_event: impl Fn(Event) + Send + Sync + 'static) -> Result<Running> {
        let upstreams = self.upstreams()?;
        let ledger = Ledger::open(self.ledger.as_deref()).map_err(|source| Error::Proxy {
            what: format!(
                "{}: cannot open the ledger",
                self.ledger
                    .as_deref()
                    .unwrap_or(std::path::Path::new(""))
                    .display()
            ),
            source,
        })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|source| Error::Proxy {
                what: "cannot start the runtime".into(),
                source,
            })?;
        let listener = runtime
            .block_on(TcpListener::bind(self.listen))
            .map_err(|source| Error::Proxy {
                what: format!("cannot listen on {}", self.listen),
                source,
            })?;
        let address = listener.local_addr().map_err(|source| Error::Proxy {
            what: "the listening address".into(),
            source,
        })?;
        on_event(Event::Listening(address));
        let shared = Arc::new(Shared {
            config: self,
            upstreams,
            ledger,
            metrics: Metrics::new(),
            client: relay::client(),
            on_event: Box::new(on_event),
            told: Mutex::new(BTreeSet::new()),
        });
        runtime.spawn(accept(listener, Arc::clone(&shared)));
        Ok(Running {
            address,
            shared,
            runtime: Some(runtime),
        })
    }
}

/// A proxy serving in the background ([`Config::start`]). Stopping it ([`Running::stop`], or
/// dropping it) closes its port and drops the requests under way.
pub struct Running {
    address: SocketAddr,
    shared: Arc<Shared>,
    /// Taken when stopped.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Running {
    /// Where it listens (the port chosen when `listen` asked for port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The totals so far, as `GET /ctxcompact/stats` returns them.
    pub fn totals(&self) -> RequestTotals {
        let cached = self.shared.config.compactor.cached();
        self.shared.metrics.totals(cached)
    }

    /// Stops serving, and returns the totals: every request's, those dropped while stopping
    /// included.
    pub fn stop(mut self) -> RequestTotals {
        self.shut_down();
        self.totals()
    }

    fn shut_down(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(STOP_WAIT);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Accepts connections, at most `max_connections` served at once.
async fn accept(listener: TcpListener, shared: Arc<Shared>) -> Infallible {
    let slots = Arc::new(Semaphore::new(shared.config.max_connections.max(1)));
    let timeout = shared.config.header_timeout.max(Duration::from_secs(1));
    loop {
        let slot = Arc::clone(&slots)
            .acquire_owned()
            .await
            .expect("the connection slots are never closed");
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                (shared.on_event)(Event::AcceptFailed(err));
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let _slot = slot;
            let service = service_fn(move |request| handle(request, Arc::clone(&shared)));
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(timeout)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// One request: route it, decide its body, relay it.
async fn handle(
    request: Request<Incoming>,
    shared: Arc<Shared>,
) -> Result<Response<Body>, Infallible> {
    let time = SystemTime::now();
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or_else(|| path.clone(), |p| p.as_str().to_string());
    let mut entry = Entry::new(time, parts.method.to_string(), path.clone());
    let (provider, upstream_body, started) =
        match route::route(&parts.method, &path, &parts.headers) {
            Route::Stats => {
                let totals = shared.metrics.totals(shared.config.compactor.cached());
                let json = serde_json::to_vec_pretty(&totals).expect("totals serialize");
                return Ok(page(json, "application/json"));
            }
            Route::Metrics => {
                let text = shared.metrics.exposition(shared.config.compactor.cached());
                return Ok(page(text, metrics::CONTENT_TYPE));
            }
            Route::Upgrade => {
                entry.status = Some(StatusCode::UPGRADE_REQUIRED.as_u16());
                entry.verdict.reason = Some(UPGRADE_REFUSED.into());
                shared.record(&entry);
                let mut response = error(StatusCode::UPGRADE_REQUIRED, UPGRADE_REFUSED);
                // RFC 9110 §15.5.22: a 426 names the protocol to use.
                response
                    .headers_mut()
                    .insert(UPGRADE, HeaderValue::from_static("HTTP/1.1"));
                return Ok(response);
            }
            Route::Pass(provider) => (provider, relay::stream(body), Instant::now()),
            Route::Read {
                provider,
                format,
                model,
            } => {
                entry.api = Some(format);
                match read_capped(body, &parts.headers, shared.config.max_body).await {
                    Err(err) => {
                        entry.verdict.reason = Some(format!("the request body broke off: {err}"));
                        entry.response = Some(Ending::ClientGone);
                        shared.record(&entry);
                        return Ok(error(StatusCode::BAD_REQUEST, "the request body broke off"));
                    }
                    Ok(CappedBody::Over(body)) => {
                        entry.verdict.reason = Some(format!(
                            "the body is over --max-body ({} bytes): streamed through unread",
                            shared.config.max_body
                        ));
                        (provider, body, Instant::now())
                    }
                    Ok(CappedBody::Whole(bytes)) => {
                        let started = Instant::now();
                        let recognised = Agent::from_headers(|name| {
                            parts.headers.get(name).and_then(|v| v.to_str().ok())
                        });
                        let body = decide_body(
                            &shared,
                            format,
                            (model, recognised),
                            bytes,
                            &mut parts.headers,
                            &mut entry,
                        )
                        .await;
                        (provider, body, started)
                    }
                }
            }
        };
    Ok(forward(
        &shared,
        parts,
        provider,
        &path_and_query,
        upstream_body,
        started,
        entry,
    )
    .await)
}

/// Compacts a read body off the async threads, and fills the entry with what was done.
async fn decide_body(
    shared: &Arc<Shared>,
    format: Format,
    (model, recognised): (Option<String>, Option<(Agent, &'static str)>),
    bytes: Bytes,
    headers: &mut hyper::HeaderMap,
    entry: &mut Entry,
) -> Body {
    let mut forward = {
        let shared = Arc::clone(shared);
        let bytes = bytes.clone();
        tokio::task::spawn_blocking(move || {
            shared
                .config
                .compactor
                .compact(&bytes, format, model.as_deref(), recognised)
        })
        .await
        .unwrap_or_else(|_| {
            Forward::failed_open(None, FailOpen::Panicked, "the compaction panicked".into())
        })
    };
    if let Some(model) = &forward.unknown_model {
        shared.unknown_model(model);
    }
    if let Some(why) = &forward.compaction.archive_error {
        (shared.on_event)(Event::ArchiveFailed(why.clone()));
    }
    let body = forward.body.take();
    entry.decided(forward);
    match body {
        Some(body) => {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
            relay::full(body)
        }
        None => relay::full(bytes),
    }
}

/// A request body read whole, or found over the cap and streamed.
enum CappedBody {
    Whole(Bytes),
    Over(Body),
}

/// Reads a body up to `cap` bytes; past it, the bytes read and the rest are streamed.
async fn read_capped(
    mut body: Incoming,
    headers: &hyper::HeaderMap,
    cap: usize,
) -> Result<CappedBody, hyper::Error> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|length| length > cap) {
        return Ok(CappedBody::Over(relay::stream(body)));
    }
    let mut read = Vec::with_capacity(declared.unwrap_or(0));
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            read.extend_from_slice(&data);
            if read.len() > cap {
                let prefixed = Prefixed::new(Bytes::from(read), body);
                return Ok(CappedBody::Over(prefixed.boxed()));
            }
        }
    }
    Ok(CappedBody::Whole(Bytes::from(read)))
}

/// Sends the request upstream and relays the answer, recording the entry when it ends.
async fn forward(
    shared: &Arc<Shared>,
    mut parts: hyper::http::request::Parts,
    provider: Provider,
    path_and_query: &str,
    body: Body,
    started: Instant,
    mut entry: Entry,
) -> Response<Body> {
    let url = shared.upstreams.url(provider, path_and_query);
    let Ok(uri) = url.parse::<hyper::Uri>() else {
        entry.verdict.reason = Some("the upstream URL of this path is not valid".into());
        shared.record(&entry);
        return error(
            StatusCode::BAD_GATEWAY,
            "the upstream URL of this path is not valid",
        );
    };
    relay::strip_hop_by_hop(&mut parts.headers);
    if let Some(authority) = uri.authority()
        && let Ok(host) = HeaderValue::from_str(authority.as_str())
    {
        parts.headers.insert(HOST, host);
    }
    parts.uri = uri;
    let request = Request::from_parts(parts, body);
    entry.proxy_ms = started.elapsed().as_secs_f64() * 1000.0;
    match shared.client.request(request).await {
        Err(err) => {
            // The error's own text names neither headers nor the query.
            let why = format!("upstream unreachable: {}", error_chain(&err));
            entry.upstream = Upstream::Unreachable;
            entry.status = Some(502);
            entry.verdict.reason = Some(
                entry
                    .verdict
                    .reason
                    .take()
                    .map_or(why.clone(), |r| format!("{r}; {why}")),
            );
            shared.record(&entry);
            error(StatusCode::BAD_GATEWAY, &why)
        }
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            relay::strip_hop_by_hop(&mut parts.headers);
            entry.upstream = Upstream::Answered;
            entry.status = Some(parts.status.as_u16());
            let content_type = parts
                .headers
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let shared = Arc::clone(shared);
            let on_end = Box::new(move |ending: Ending, usage: Option<Usage>| {
                entry.response = Some(ending);
                if let Some(usage) = usage {
                    entry.cost_usd = shared.ledger.cost(entry.facts.price.as_deref(), &usage);
                    entry.usage = Some(usage);
                }
                shared.record(&entry);
            });
            Response::from_parts(parts, Relay::new(body, &content_type, on_end).boxed())
        }
    }
}

/// An error's message and its sources, joined.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// One of the proxy's own pages: `body`, of `content_type`.
fn page(body: impl Into<Bytes>, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(relay::full(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// The proxy's own error answer (when upstream gave none).
fn error(status: StatusCode, message: &str) -> Response<Body> {
    let body = serde_json::json!({"error": {"type": "ctxcompact_proxy_error", "message": message}});
    let mut response = page(body.to_string(), "application/json");
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_reads_as_the_line_the_command_prints() {
        let listening = Event::Listening("127.0.0.1:8787".parse().unwrap());
        assert_eq!(listening.to_string(), "listening on http://127.0.0.1:8787");
        let failed = Event::AcceptFailed(std::io::Error::other("too many open files"));
        assert_eq!(failed.to_string(), "accept failed: too many open files");
        let unknown = Event::UnknownModel("foo-1".into()).to_string();
        assert!(
            unknown.starts_with("unknown model `foo-1` (no catalog name")
                && unknown.ends_with("pass --window N to compact them"),
            "{unknown}"
        );
    }
}
