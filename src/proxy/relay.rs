//! Relaying: the request to upstream and the response back, streamed frame by frame.
//!
//! A response body — SSE or not — reaches the client as upstream sends it, never buffered
//! whole; usage is read from the frames as they pass. When the client goes away the response
//! body is dropped, and with it the upstream connection, which cancels the upstream request.
//! The ledger line is written when the body ends, fails or is dropped.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{HeaderMap, HeaderName};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as LegacyClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::usage::{Usage, UsageScanner};

/// Any error a body may carry.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The body of every request and response the proxy sends.
pub(crate) type Body = BoxBody<Bytes, BoxError>;
/// The upstream client: HTTP/1 over TCP, or TLS by rustls with the webpki roots.
pub(crate) type Client = LegacyClient<HttpsConnector<HttpConnector>, Body>;

/// Headers that describe one connection, not the message: never forwarded (RFC 9110 §7.6.1).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The upstream client.
pub(crate) fn client() -> Client {
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_webpki_roots()
        .https_or_http()
        .enable_http1()
        .build();
    LegacyClient::builder(TokioExecutor::new()).build(https)
}

/// A body of these bytes.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// A streamed body, as received.
pub(crate) fn stream(body: Incoming) -> Body {
    body.map_err(BoxError::from).boxed()
}

/// Removes the hop-by-hop headers, and those the `connection` header names.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all("connection")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

/// A body that yields bytes already read, then the rest of the request.
pub(crate) struct Prefixed {
    prefix: Option<Bytes>,
    rest: Incoming,
}

impl Prefixed {
    /// `prefix`, then whatever `rest` still holds.
    pub(crate) fn new(prefix: Bytes, rest: Incoming) -> Self {
        Self {
            prefix: Some(prefix),
            rest,
        }
    }
}

impl hyper::body::Body for Prefixed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some(prefix) = this.prefix.take() {
            return Poll::Ready(Some(Ok(Frame::data(prefix))));
        }
        Pin::new(&mut this.rest)
            .poll_frame(cx)
            .map_err(BoxError::from)
    }

    fn is_end_stream(&self) -> bool {
        self.prefix.is_none() && self.rest.is_end_stream()
    }
}

/// How a relayed response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Ending {
    /// Upstream sent it whole and the client took it.
    Complete,
    /// Upstream's body failed (it closed mid-stream); the client saw the break.
    UpstreamBroke,
    /// The client went away first; the upstream request was dropped with it.
    ClientGone,
}

/// Called once with how the response ended and the usage it reported.
pub(crate) type OnEnd = Box<dyn FnOnce(Ending, Option<Usage>) + Send + Sync>;

/// The upstream response body on its way to the client.
pub(crate) struct Relay {
    inner: Incoming,
    scanner: Option<UsageScanner>,
    on_end: Option<OnEnd>,
}

impl Relay {
    /// Relays `inner` (of content type `content_type`), calling `on_end` when it ends.
    pub(crate) fn new(inner: Incoming, content_type: &str, on_end: OnEnd) -> Self {
        Self {
            inner,
            scanner: Some(UsageScanner::new(content_type)),
            on_end: Some(on_end),
        }
    }

    fn end(&mut self, ending: Ending) {
        if let Some(on_end) = self.on_end.take() {
            let usage = self.scanner.take().and_then(UsageScanner::finish);
            on_end(ending, usage);
        }
    }
}

impl hyper::body::Body for Relay {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(scanner)) = (frame.data_ref(), this.scanner.as_mut()) {
                    scanner.feed(data);
                }
                // Hyper polls no further once a body says it has ended.
                if this.inner.is_end_stream() {
                    this.end(Ending::Complete);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => {
                this.end(Ending::UpstreamBroke);
                Poll::Ready(Some(Err(err.into())))
            }
            Poll::Ready(None) => {
                this.end(Ending::Complete);
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.end(Ending::ClientGone);
    }
}
