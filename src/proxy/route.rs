//! Routing: which requests the proxy reads, and which provider every request goes to.
//!
//! `POST /v1/messages`, `/v1/chat/completions`, `/v1/responses` and Gemini's
//! `…:generateContent` / `…:streamGenerateContent` are read; `GET /ctxcompact/stats` and
//! `GET /metrics` are the proxy's own pages; a WebSocket upgrade (Codex's
//! Responses transport) is refused with 426, so that the client sends the same turn as a POST
//! the proxy reads; every other request passes through to the provider its path or headers
//! name, unchanged.

use hyper::{HeaderMap, Method};

use super::config::Provider;
use crate::format::Format;

/// What the proxy does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// A request body the proxy reads and may compact.
    Read {
        provider: Provider,
        format: Format,
        /// The model named in the path (Gemini), when the body does not name it.
        model: Option<String>,
    },
    /// `GET /ctxcompact/stats`: the proxy's totals, as JSON.
    Stats,
    /// `GET /metrics`: the proxy's totals, in Prometheus's text format.
    Metrics,
    /// A WebSocket upgrade: answered 426 Upgrade Required (the proxy relays HTTP only).
    Upgrade,
    /// Anything else: forwarded unchanged.
    Pass(Provider),
}

/// The path of the proxy's own totals.
pub(crate) const STATS_PATH: &str = "/ctxcompact/stats";
/// The path of the proxy's metrics (where Prometheus looks by default).
pub(crate) const METRICS_PATH: &str = "/metrics";

/// Routes a request by method, path (without query) and headers.
pub(crate) fn route(method: &Method, path: &str, headers: &HeaderMap) -> Route {
    if method == Method::GET {
        match path {
            STATS_PATH => return Route::Stats,
            METRICS_PATH => return Route::Metrics,
            _ => {}
        }
    }
    if is_websocket_upgrade(headers) {
        return Route::Upgrade;
    }
    let provider = provider(path, headers);
    if method != Method::POST {
        return Route::Pass(provider);
    }
    let read = |provider, format, model| Route::Read {
        provider,
        format,
        model,
    };
    match path {
        "/v1/messages" => read(Provider::Anthropic, Format::Anthropic, None),
        "/v1/chat/completions" => read(Provider::OpenAi, Format::OpenAi, None),
        "/v1/responses" => read(Provider::OpenAi, Format::Responses, None),
        _ => match gemini_model(path) {
            Some(model) => read(Provider::Gemini, Format::Gemini, Some(model)),
            None => Route::Pass(provider),
        },
    }
}

/// Whether a request asks to switch to WebSocket (`Upgrade: websocket`, any case, possibly in
/// a list).
fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get_all("upgrade")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|protocol| protocol.trim().eq_ignore_ascii_case("websocket"))
}

/// The model of a Gemini generate path (`/v1beta/models/gemini-2.5-pro:generateContent`).
fn gemini_model(path: &str) -> Option<String> {
    let (head, method) = path.rsplit_once(':')?;
    if method != "generateContent" && method != "streamGenerateContent" {
        return None;
    }
    let (_, model) = head.rsplit_once("/models/")?;
    (!model.is_empty() && !model.contains('/')).then(|| model.to_string())
}

/// The provider of a request the proxy does not read: Gemini's paths and key header, then
/// Anthropic's version header or key header, else OpenAI.
fn provider(path: &str, headers: &HeaderMap) -> Provider {
    if path.starts_with("/v1beta/")
        || path.starts_with("/upload/")
        || path.contains(":generateContent")
        || path.contains(":streamGenerateContent")
        || path.contains(":countTokens")
        || headers.contains_key("x-goog-api-key")
    {
        Provider::Gemini
    } else if path.starts_with("/v1/messages")
        || path.starts_with("/v1/complete")
        || headers.contains_key("anthropic-version")
        || headers.contains_key("x-api-key")
    {
        Provider::Anthropic
    } else {
        Provider::OpenAi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generate_paths_are_read_and_the_rest_passes_to_its_provider() {
        let none = HeaderMap::new();
        assert_eq!(
            route(
                &Method::POST,
                "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
                &none
            ),
            Route::Read {
                provider: Provider::Gemini,
                format: Format::Gemini,
                model: Some("gemini-2.5-pro".into())
            }
        );
        assert_eq!(
            route(&Method::POST, "/v1/messages/count_tokens", &none),
            Route::Pass(Provider::Anthropic)
        );
        assert_eq!(
            route(&Method::GET, "/v1/messages", &none),
            Route::Pass(Provider::Anthropic)
        );
        let mut anthropic = HeaderMap::new();
        anthropic.insert("anthropic-version", "2023-06-01".parse().unwrap());
        assert_eq!(
            route(&Method::GET, "/v1/models", &anthropic),
            Route::Pass(Provider::Anthropic)
        );
        assert_eq!(
            route(&Method::GET, "/v1/models", &none),
            Route::Pass(Provider::OpenAi)
        );
        assert_eq!(route(&Method::GET, STATS_PATH, &none), Route::Stats);
        assert_eq!(route(&Method::GET, METRICS_PATH, &none), Route::Metrics);
    }

    #[test]
    fn a_websocket_upgrade_is_refused_on_any_path() {
        let mut upgrade = HeaderMap::new();
        upgrade.insert("upgrade", "WebSocket".parse().unwrap());
        assert_eq!(
            route(&Method::GET, "/v1/responses", &upgrade),
            Route::Upgrade
        );
        assert_eq!(route(&Method::GET, "/other", &upgrade), Route::Upgrade);
        let mut h2c = HeaderMap::new();
        h2c.insert("upgrade", "h2c".parse().unwrap());
        assert_eq!(
            route(&Method::GET, "/v1/responses", &h2c),
            Route::Pass(Provider::OpenAi)
        );
    }
}
