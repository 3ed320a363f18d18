//! The settings of a proxy: where to listen, where each provider is, the bounds of what it
//! accepts, and the [`Compactor`] every read body goes through.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::request::Compactor;

/// The settings of a proxy ([`Config::serve`] runs it).
///
/// Its fields are public, so a config reads `Config { ledger, ..Config::new(compactor) }`;
/// [`Config::check`] says whether they can be served.
pub struct Config {
    /// The address to listen on; other than loopback needs `allow_remote`.
    pub listen: SocketAddr,
    /// Accept a `listen` address other than loopback (anyone who reaches it can use the
    /// credentials its clients send).
    pub allow_remote: bool,
    /// The origin Anthropic requests go to (`http://` or `https://`, a host, an optional path
    /// prefix); the request's path and query are appended.
    pub anthropic_upstream: String,
    /// The origin OpenAI (Chat Completions, Responses) requests go to.
    pub openai_upstream: String,
    /// The origin Gemini requests go to.
    pub gemini_upstream: String,
    /// The file the ledger appends one JSON line per request to (none: totals only).
    pub ledger: Option<PathBuf>,
    /// Bodies larger than this many bytes stream through untouched.
    pub max_body: usize,
    /// Connections served at once (at least 1); more wait to be accepted.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers (at least a second).
    pub header_timeout: Duration,
    /// What compacts each request body: the engine settings, the catalog, the window.
    pub compactor: Compactor,
}

/// Which provider a request is for, and whose upstream an agent's address names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Anthropic Messages and the rest of Anthropic's API.
    Anthropic,
    /// OpenAI Chat Completions, Responses and the rest of OpenAI's API.
    OpenAi,
    /// Google's Gemini API.
    Gemini,
}

/// The checked upstream origins, without their trailing slash.
pub(crate) struct Upstreams {
    anthropic: String,
    openai: String,
    gemini: String,
}

impl Upstreams {
    /// The URL a request with `path_and_query` goes to at `provider`.
    pub(crate) fn url(&self, provider: Provider, path_and_query: &str) -> String {
        let origin = match provider {
            Provider::Anthropic => &self.anthropic,
            Provider::OpenAi => &self.openai,
            Provider::Gemini => &self.gemini,
        };
        format!("{origin}{path_and_query}")
    }
}

impl Config {
    /// The default `listen`: loopback, port 8787.
    pub const LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8787));
    /// The default `anthropic_upstream`: Anthropic's public API origin.
    pub const ANTHROPIC_UPSTREAM: &'static str = "https://api.anthropic.com";
    /// The default `openai_upstream`: OpenAI's public API origin.
    pub const OPENAI_UPSTREAM: &'static str = "https://api.openai.com";
    /// The default `gemini_upstream`: Google's Gemini API origin.
    pub const GEMINI_UPSTREAM: &'static str = "https://generativelanguage.googleapis.com";
    /// The default `max_body`: 64 MiB.
    pub const MAX_BODY: usize = 64 << 20;
    /// The default `max_connections`.
    pub const MAX_CONNECTIONS: usize = 1024;
    /// The default `header_timeout`.
    pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

    /// A proxy on the default address, in front of the providers' public endpoints, with no
    /// ledger file, compacting with `compactor`.
    pub fn new(compactor: Compactor) -> Self {
        Self {
            listen: Self::LISTEN,
            allow_remote: false,
            anthropic_upstream: Self::ANTHROPIC_UPSTREAM.into(),
            openai_upstream: Self::OPENAI_UPSTREAM.into(),
            gemini_upstream: Self::GEMINI_UPSTREAM.into(),
            ledger: None,
            max_body: Self::MAX_BODY,
            max_connections: Self::MAX_CONNECTIONS,
            header_timeout: Self::HEADER_TIMEOUT,
            compactor,
        }
    }

    /// Checks what [`Config::serve`] checks before it listens.
    ///
    /// # Errors
    /// [`Error::BadSetting`] for a `listen` address other than loopback without
    /// `allow_remote`, or an upstream that is not an `http://` or `https://` origin.
    pub fn check(&self) -> Result<()> {
        self.upstreams().map(drop)
    }

    /// The checked upstreams (after the listening address).
    pub(crate) fn upstreams(&self) -> Result<Upstreams> {
        if !self.listen.ip().is_loopback() && !self.allow_remote {
            return Err(Error::bad_setting(format!(
                "--listen {}: not a loopback address; pass --allow-remote to accept connections from other hosts",
                self.listen
            )));
        }
        Ok(Upstreams {
            anthropic: origin(&self.anthropic_upstream, "--anthropic-upstream")?,
            openai: origin(&self.openai_upstream, "--openai-upstream")?,
            gemini: origin(&self.gemini_upstream, "--gemini-upstream")?,
        })
    }

    /// The shell lines that point Claude Code, the OpenAI SDKs, Codex and Gemini CLI at this
    /// proxy: what each client reads, as checked against the pinned Claude Code 2.1.328, Codex
    /// 0.169.0 and Gemini CLI 0.61.0 (`tests/clients/run.sh`).
    pub fn env_lines(&self) -> String {
        let base = format!("http://{}", self.listen);
        format!(
            "# Claude Code and the Anthropic SDKs\n\
             export ANTHROPIC_BASE_URL={base}\n\
             # The OpenAI SDKs\n\
             export OPENAI_BASE_URL={base}/v1\n\
             # Codex reads no variable for its built-in provider: give it the key openai_base_url,\n\
             # on the command line or at the top of ~/.codex/config.toml\n\
             alias codex='codex -c openai_base_url=\"{base}/v1\"'\n\
             # Gemini CLI (API-key auth: \"security\": {{\"auth\": {{\"selectedType\": \"gemini-api-key\"}}}}\n\
             # in ~/.gemini/settings.json, and GEMINI_API_KEY) and the Google Gen AI SDKs\n\
             export GOOGLE_GEMINI_BASE_URL={base}\n"
        )
    }
}

/// Checks an upstream origin (`http://` or `https://`, host, optional path prefix) and drops
/// its trailing slash, so that a request's path can be appended; `flag` names the setting in
/// the error, as the command line spells it.
fn origin(url: &str, flag: &str) -> Result<String> {
    let uri: hyper::Uri = url
        .parse()
        .map_err(|err| Error::bad_setting(format!("{flag} {url}: not a URL: {err}")))?;
    match uri.scheme_str() {
        Some("http" | "https") if uri.authority().is_some() => {}
        _ => {
            return Err(Error::bad_setting(format!(
                "{flag} {url}: expected an http:// or https:// origin"
            )));
        }
    }
    if uri.query().is_some() {
        return Err(Error::bad_setting(format!(
            "{flag} {url}: an upstream has no query string (the request's is appended)"
        )));
    }
    Ok(url.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::settings::Settings;

    #[test]
    fn a_remote_address_needs_allow_remote_and_the_upstreams_lose_their_slash() {
        let compactor = Compactor::new(&Settings::default(), None, 0).unwrap();
        let mut config = Config {
            listen: "0.0.0.0:0".parse().unwrap(),
            anthropic_upstream: "http://127.0.0.1:9000/".into(),
            ..Config::new(compactor)
        };
        let err = config.check().unwrap_err().to_string();
        assert!(
            err.starts_with("--listen 0.0.0.0:0: not a loopback address"),
            "{err}"
        );
        config.allow_remote = true;
        let upstreams = config.upstreams().unwrap();
        assert_eq!(
            upstreams.url(Provider::Anthropic, "/v1/messages?beta=true"),
            "http://127.0.0.1:9000/v1/messages?beta=true"
        );
        assert_eq!(
            upstreams.url(Provider::Gemini, "/v1beta/models"),
            "https://generativelanguage.googleapis.com/v1beta/models"
        );
    }

    #[test]
    fn an_origin_loses_its_trailing_slash_and_must_be_http() {
        assert_eq!(
            origin("http://127.0.0.1:9000/", "--x").unwrap(),
            "http://127.0.0.1:9000"
        );
        assert!(origin("ftp://host", "--x").is_err());
        assert!(origin("http://host/?a=1", "--x").is_err());
    }
}
