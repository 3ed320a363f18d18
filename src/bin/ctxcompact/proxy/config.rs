//! `ctxcompact proxy`'s flags, and the settings they resolve to: where to listen, where each
//! provider is, and the library options a request's model gets.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use ctxcompact::request::Compactor;
use ctxcompact::{Settings, Tokenizer};

use crate::flags::RemovalArgs;

/// Anthropic's public API origin.
const ANTHROPIC: &str = "https://api.anthropic.com";
/// OpenAI's public API origin.
const OPENAI: &str = "https://api.openai.com";
/// Google's Gemini API origin.
const GEMINI: &str = "https://generativelanguage.googleapis.com";

/// Put ctxcompact between an agent and its provider: an HTTP reverse proxy that compacts
/// request histories past a share of the model's window and forwards everything else as it
/// came.
///
/// Under the trigger a body is forwarded byte for byte; past it, it is compacted to the target
/// with the engine's defaults and forwarded in the same format. The body sent upstream is a
/// deterministic function of the body received and these flags, so any number of proxies
/// send the same bytes. Anything the proxy cannot read or fit goes through unchanged.
#[derive(Debug, Args)]
pub(crate) struct ProxyArgs {
    /// The address to listen on; other than loopback needs --allow-remote.
    #[arg(long, default_value = "127.0.0.1:8787")]
    pub(crate) listen: SocketAddr,
    /// Accept a --listen address other than loopback (anyone who reaches it can use the
    /// credentials its clients send).
    #[arg(long)]
    pub(crate) allow_remote: bool,
    /// The origin Anthropic requests go to; the request's path and query are appended.
    #[arg(long, default_value = ANTHROPIC, value_name = "URL")]
    pub(crate) anthropic_upstream: String,
    /// The origin OpenAI (Chat Completions, Responses) requests go to.
    #[arg(long, default_value = OPENAI, value_name = "URL")]
    pub(crate) openai_upstream: String,
    /// The origin Gemini requests go to.
    #[arg(long, default_value = GEMINI, value_name = "URL")]
    pub(crate) gemini_upstream: String,
    /// The context window in tokens, for every model (instead of the catalog's).
    #[arg(long, value_name = "N")]
    pub(crate) window: Option<usize>,
    /// Compact when a request passes this share of the window [default: 0.7, or below the
    /// agent's own compaction point when the proxy recognises Claude Code, Codex or Gemini
    /// CLI]. Given, it is used for every agent.
    #[arg(long, value_name = "T")]
    pub(crate) trigger: Option<f64>,
    /// Compact down to this share of the window [default: 0.5].
    #[arg(long, value_name = "R")]
    pub(crate) target_ratio: Option<f64>,
    /// Append one JSON line per request to this file (no message text, no credentials).
    #[arg(long, value_name = "FILE")]
    pub(crate) ledger: Option<PathBuf>,
    /// Archive each compaction's removed history in this folder, as `compact --archive` does;
    /// a file that cannot be written is noted in the ledger and the request goes on.
    #[arg(long, value_name = "DIR")]
    pub(crate) archive_dir: Option<PathBuf>,
    /// Bodies larger than this many bytes stream through untouched.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    pub(crate) max_body: usize,
    /// Connections served at once; more wait to be accepted.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub(crate) max_connections: usize,
    /// Conversations whose replayed state is kept, so that a request costs O(new messages).
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub(crate) cache_entries: usize,
    /// Seconds a client may take to send a request's headers.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub(crate) header_timeout: u64,
    /// Print the shell lines that point Claude Code, the OpenAI SDKs, Codex and Gemini CLI at
    /// this proxy, and exit.
    #[arg(long)]
    pub(crate) print_env: bool,
    #[command(flatten)]
    pub(crate) removal: RemovalArgs,
    /// The tokenizer (instead of each model's), by the names `--tokenizer` of `compact` takes.
    #[arg(long, value_parser = crate::flags::tokenizer_name)]
    pub(crate) tokenizer: Option<Tokenizer>,
    /// A model catalog to use instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    pub(crate) catalog: Option<PathBuf>,
}

/// Which provider a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Provider {
    /// Anthropic Messages and the rest of Anthropic's API.
    Anthropic,
    /// OpenAI Chat Completions, Responses and the rest of OpenAI's API.
    OpenAi,
    /// Google's Gemini API.
    Gemini,
}

/// The settings of a running proxy.
pub(crate) struct Config {
    pub(crate) listen: SocketAddr,
    anthropic: String,
    openai: String,
    gemini: String,
    pub(crate) ledger: Option<PathBuf>,
    pub(crate) max_body: usize,
    pub(crate) max_connections: usize,
    pub(crate) header_timeout: Duration,
    /// What compacts each request body: the engine settings, the catalog, the window.
    pub(crate) compactor: Compactor,
    /// The unknown models already named on standard error (once each per process).
    warned: Mutex<BTreeSet<String>>,
}

impl Config {
    /// Checks the flags and resolves them.
    pub(crate) fn from_args(args: &ProxyArgs) -> Result<Self> {
        if !args.listen.ip().is_loopback() && !args.allow_remote {
            bail!(
                "--listen {}: not a loopback address; pass --allow-remote to accept connections from other hosts",
                args.listen
            );
        }
        let mut settings = Settings {
            catalog: args.catalog.clone(),
            trigger: args.trigger,
            target_ratio: args.target_ratio,
            tokenizer: args.tokenizer,
            archive: args.archive_dir.clone(),
            ..Settings::default()
        };
        args.removal.fill(&mut settings);
        let compactor = Compactor::new(&settings, args.window, args.cache_entries)?;
        Ok(Self {
            listen: args.listen,
            anthropic: origin(&args.anthropic_upstream, "--anthropic-upstream")?,
            openai: origin(&args.openai_upstream, "--openai-upstream")?,
            gemini: origin(&args.gemini_upstream, "--gemini-upstream")?,
            ledger: args.ledger.clone(),
            max_body: args.max_body,
            max_connections: args.max_connections.max(1),
            header_timeout: Duration::from_secs(args.header_timeout.max(1)),
            compactor,
            warned: Mutex::new(BTreeSet::new()),
        })
    }

    /// The URL a request with `path_and_query` goes to at `provider`.
    pub(crate) fn upstream(&self, provider: Provider, path_and_query: &str) -> String {
        let origin = match provider {
            Provider::Anthropic => &self.anthropic,
            Provider::OpenAi => &self.openai,
            Provider::Gemini => &self.gemini,
        };
        format!("{origin}{path_and_query}")
    }

    /// Names a model no catalog rule reads on standard error, the first time only.
    pub(crate) fn warn_once(&self, model: &str) {
        let mut warned = self
            .warned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if warned.insert(model.to_string()) {
            eprintln!(
                "ctxcompact proxy: unknown model `{model}` (no catalog name or family naming rule reads it): its requests go through unchanged; pass --window N to compact them"
            );
        }
    }
}

/// Checks an upstream origin (`http://` or `https://`, host, optional path prefix) and drops
/// its trailing slash, so that a request's path can be appended.
fn origin(url: &str, flag: &str) -> Result<String> {
    let uri: hyper::Uri = url
        .parse()
        .with_context(|| format!("{flag} {url}: not a URL"))?;
    match uri.scheme_str() {
        Some("http" | "https") if uri.authority().is_some() => {}
        _ => bail!("{flag} {url}: expected an http:// or https:// origin"),
    }
    if uri.query().is_some() {
        bail!("{flag} {url}: an upstream has no query string (the request's is appended)");
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// The lines `--print-env` prints for a proxy listening on `listen`: what each client reads,
/// as checked against the pinned Claude Code 2.1.328, Codex 0.169.0 and Gemini CLI 0.61.0
/// (`tests/clients/run.sh`).
pub(crate) fn env_lines(listen: SocketAddr) -> String {
    let base = format!("http://{listen}");
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

#[cfg(test)]
mod tests {
    use super::*;

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
