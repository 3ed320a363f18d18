//! `ctxcompact proxy`'s flags, and the library's proxy configured from them
//! ([`ctxcompact::proxy`]); what the server tells is printed on standard error.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use ctxcompact::proxy::Config;
use ctxcompact::request::Compactor;
use ctxcompact::{Settings, Tokenizer};

use crate::flags::RemovalArgs;

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
    #[arg(long, default_value_t = Config::LISTEN)]
    pub(crate) listen: SocketAddr,
    /// Accept a --listen address other than loopback (anyone who reaches it can use the
    /// credentials its clients send).
    #[arg(long)]
    pub(crate) allow_remote: bool,
    /// Append one JSON line per request to this file (no message text, no credentials).
    #[arg(long, value_name = "FILE")]
    pub(crate) ledger: Option<PathBuf>,
    /// Print the shell lines that point Claude Code, the OpenAI SDKs, Codex and Gemini CLI at
    /// this proxy, and exit.
    #[arg(long)]
    pub(crate) print_env: bool,
    #[command(flatten)]
    pub(crate) serve: ServeArgs,
}

/// What a proxy is given, by `proxy` and `wrap` alike: its upstreams, when it compacts and how,
/// and its bounds.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The origin Anthropic requests go to; the request's path and query are appended
    /// [default: `https://api.anthropic.com`].
    #[arg(long, value_name = "URL")]
    pub(crate) anthropic_upstream: Option<String>,
    /// The origin OpenAI (Chat Completions, Responses) requests go to
    /// [default: `https://api.openai.com`].
    #[arg(long, value_name = "URL")]
    pub(crate) openai_upstream: Option<String>,
    /// The origin Gemini requests go to
    /// [default: `https://generativelanguage.googleapis.com`].
    #[arg(long, value_name = "URL")]
    pub(crate) gemini_upstream: Option<String>,
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
    /// Archive each compaction's removed history in this folder, as `compact --archive` does
    /// [default: `$XDG_CACHE_HOME/ctxcompact/archive`, else `~/.cache/ctxcompact/archive`];
    /// a file that cannot be written is logged, counted and noted in the ledger, and the
    /// request goes on. `ctxcompact mcp` recalls it by the handles the notes name.
    #[arg(long, value_name = "DIR")]
    pub(crate) archive_dir: Option<PathBuf>,
    /// Archive nothing: what compactions remove is gone.
    #[arg(long, conflicts_with = "archive_dir")]
    pub(crate) no_archive: bool,
    /// Keep the archive folder under this many bytes: past it, the least recently used
    /// files are removed [default: 1 GiB].
    #[arg(long, value_name = "BYTES", default_value_t = ARCHIVE_MAX_BYTES)]
    pub(crate) archive_max_bytes: u64,
    /// Bodies larger than this many bytes stream through untouched.
    #[arg(long, value_name = "BYTES", default_value_t = Config::MAX_BODY)]
    pub(crate) max_body: usize,
    /// Connections served at once; more wait to be accepted.
    #[arg(long, value_name = "N", default_value_t = Config::MAX_CONNECTIONS)]
    pub(crate) max_connections: usize,
    /// Conversations whose replayed state is kept, so that a request costs O(new messages).
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub(crate) cache_entries: usize,
    /// Seconds a client may take to send a request's headers.
    #[arg(long, value_name = "SECONDS", default_value_t = Config::HEADER_TIMEOUT.as_secs())]
    pub(crate) header_timeout: u64,
    #[command(flatten)]
    pub(crate) removal: RemovalArgs,
    /// The tokenizer (instead of each model's), by the names `--tokenizer` of `compact` takes.
    #[arg(long, value_parser = crate::flags::tokenizer_name)]
    pub(crate) tokenizer: Option<Tokenizer>,
    /// A model catalog to use instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    pub(crate) catalog: Option<PathBuf>,
    /// Factors for the calibrated estimators (the output of `calibrate --json`) instead of
    /// the shipped ones.
    #[arg(long, value_name = "FILE")]
    pub(crate) calibration: Option<PathBuf>,
}

/// The default `--archive-max-bytes`: 1 GiB.
const ARCHIVE_MAX_BYTES: u64 = 1 << 30;

/// Runs the proxy until the process is stopped (or prints the environment lines).
pub(crate) fn run(args: &ProxyArgs) -> Result<()> {
    let config = Config {
        listen: args.listen,
        allow_remote: args.allow_remote,
        ledger: args.ledger.clone(),
        ..args.serve.config()?
    };
    config.check()?;
    if args.print_env {
        print!("{}", config.env_lines());
        print!(
            "{}",
            crate::mcp::config_lines(args.serve.archive().as_deref())
        );
        return Ok(());
    }
    let never: Infallible = config.serve(|event| eprintln!("ctxcompact proxy: {event}"))?;
    match never {}
}

impl ServeArgs {
    /// The archive folder: `--archive-dir`, else the user's default, unless `--no-archive`.
    pub(crate) fn archive(&self) -> Option<PathBuf> {
        if self.no_archive {
            return None;
        }
        crate::archive_dir::given_or_default(self.archive_dir.as_ref())
    }

    /// The library's proxy configured by the flags, on the default address, with no ledger;
    /// an upstream not given is the provider's public endpoint.
    pub(crate) fn config(&self) -> Result<Config> {
        let mut settings = Settings {
            catalog: self.catalog.clone(),
            calibration: self.calibration.clone(),
            trigger: self.trigger,
            target_ratio: self.target_ratio,
            tokenizer: self.tokenizer,
            archive: self.archive(),
            ..Settings::default()
        };
        self.removal.fill(&mut settings);
        let compactor = Compactor::new(&settings, self.window, self.cache_entries)?
            .bound_archive(self.archive_max_bytes);
        let given = |flag: &Option<String>, default: &str| flag.clone().unwrap_or(default.into());
        Ok(Config {
            anthropic_upstream: given(&self.anthropic_upstream, Config::ANTHROPIC_UPSTREAM),
            openai_upstream: given(&self.openai_upstream, Config::OPENAI_UPSTREAM),
            gemini_upstream: given(&self.gemini_upstream, Config::GEMINI_UPSTREAM),
            max_body: self.max_body,
            max_connections: self.max_connections,
            header_timeout: Duration::from_secs(self.header_timeout),
            ..Config::new(compactor)
        })
    }
}
