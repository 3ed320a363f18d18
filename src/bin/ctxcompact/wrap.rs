//! `ctxcompact wrap`: the proxy in this process, on a free loopback port, in front of one agent
//! run on the terminal; the agent's exit status is the command's.
//!
//! The agent inherits standard input, output and error (its terminal, when there is one) and
//! this process's group, so that the terminal's Ctrl-C and Ctrl-Z reach it directly. SIGTERM
//! and SIGHUP sent to `wrap` are passed on to it, and so is SIGINT unless `wrap` is in the
//! terminal's foreground group (the terminal sent it to the agent too). When the agent exits,
//! the proxy stops with this process; nothing is left running and nothing was written but the
//! ledger.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitCode, ExitStatus};

use anyhow::{Context, Result, bail};
use clap::Args;
use ctxcompact::proxy::{Config, Event, Provider};
use rustix::process::{Pid, Signal};
use tokio::signal::unix::{SignalKind, signal};

use crate::output::say;
use crate::presets::{self, PRESETS, Pointing};
use crate::proxy::ServeArgs;

/// The exit status when the agent's program is not found, as shells have it.
const EXIT_NOT_FOUND: u8 = 127;
/// The exit status when the agent's program is found but cannot be run, as shells have it.
const EXIT_NOT_EXECUTABLE: u8 = 126;

/// Run an agent with ctxcompact in front of it: the proxy starts in this process on a free
/// loopback port, the agent is pointed at it the way it reads its provider's address, runs on
/// this terminal, and its exit status is returned; the proxy stops with it.
///
/// Agents known by their program's name: claude (Claude Code), codex, gemini (Gemini CLI),
/// opencode, qwen (Qwen Code) and aider; any other with --env. An address the agent's variable
/// already held becomes the upstream. Flags win over the agent's preset. Exit status: the
/// agent's (128 + the signal's number when a signal ended it), 127 when its program is not
/// found, 126 when it cannot be run, 2 for bad usage.
#[derive(Debug, Args)]
pub(crate) struct WrapArgs {
    /// Point the agent at the proxy through this environment variable, set to the proxy's
    /// address followed by PATH when given (`--env OPENAI_BASE_URL=/v1`), instead of its
    /// preset's way.
    #[arg(long, value_name = "VAR[=PATH]")]
    pub(crate) env: Option<String>,
    /// Where the agent's requests go, for every provider (instead of the address its variable
    /// held, or the providers' public endpoints); the per-provider flags win over it.
    #[arg(long, value_name = "URL")]
    pub(crate) upstream: Option<String>,
    /// Append one JSON line per request to this file [default: `ledger.jsonl` in
    /// `$XDG_STATE_HOME/ctxcompact`, else in `~/.local/state/ctxcompact`].
    #[arg(long, value_name = "FILE")]
    pub(crate) ledger: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) serve: ServeArgs,
    /// The agent's program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "AGENT [ARGS]")]
    pub(crate) command: Vec<OsString>,
}

/// Runs the agent through the proxy; the agent's exit status.
pub(crate) fn run(args: &WrapArgs) -> Result<ExitCode> {
    let (program, agent_args) = args
        .command
        .split_first()
        .context("no agent given after --")?;
    let var = |name: &str| std::env::var(name).ok();
    let preset = presets::preset(program);
    let (pointing, who) = match (&args.env, preset) {
        (Some(named), _) => (Pointing::named(named, &var)?, program.to_string_lossy()),
        (None, Some(preset)) => (Pointing::of(preset, &var)?, preset.agent.into()),
        (None, None) => {
            let known: Vec<&str> = PRESETS.iter().map(|p| p.program).collect();
            bail!(
                "{}: not an agent wrap knows ({}); name the variable it reads its provider's address from with --env VAR[=PATH], and where its requests go with --upstream URL",
                program.to_string_lossy(),
                known.join(", ")
            );
        }
    };
    let ledger = args.ledger.clone().or_else(default_ledger);
    if let Some(dir) = ledger.as_deref().and_then(std::path::Path::parent) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create the folder", dir.display()))?;
    }
    let config = config(args, &pointing, ledger.clone())?;
    let proxy = config.start(|event| {
        if !matches!(event, Event::Listening(_)) {
            say(&format!("ctxcompact wrap: {event}"));
        }
    })?;
    let setup = pointing.at(&format!("http://{}", proxy.address()));
    say(&format!(
        "ctxcompact wrap: {who} through the proxy on {} via {}; ledger {}",
        proxy.address(),
        setup.said.join(", "),
        ledger
            .as_deref()
            .map_or_else(|| "none".into(), |p| p.display().to_string())
    ));
    let code = match run_agent(program, &setup.args, agent_args, &setup.env) {
        Ok(status) => exit_code(status),
        Err(err) => {
            say(&format!(
                "ctxcompact wrap: error: {}: cannot run it: {err}",
                program.to_string_lossy()
            ));
            match err.kind() {
                ErrorKind::NotFound => EXIT_NOT_FOUND,
                _ => EXIT_NOT_EXECUTABLE,
            }
        }
    };
    let totals = proxy.stop();
    say(&format!(
        "ctxcompact wrap: requests {}, compactions {}, tokens saved {}",
        totals.requests, totals.compactions, totals.tokens_saved
    ));
    Ok(ExitCode::from(code))
}

/// The proxy's configuration: on a free loopback port; each provider's upstream from its flag,
/// else `--upstream`, else the address the agent's variable held, else the public endpoint.
fn config(args: &WrapArgs, pointing: &Pointing, ledger: Option<PathBuf>) -> Result<Config> {
    let mut config = args.serve.config()?;
    config.listen = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    config.ledger = ledger;
    let serve = &args.serve;
    for (provider, flag, upstream) in [
        (
            Provider::Anthropic,
            &serve.anthropic_upstream,
            &mut config.anthropic_upstream,
        ),
        (
            Provider::OpenAi,
            &serve.openai_upstream,
            &mut config.openai_upstream,
        ),
        (
            Provider::Gemini,
            &serve.gemini_upstream,
            &mut config.gemini_upstream,
        ),
    ] {
        if flag.is_some() {
            continue;
        }
        let was = pointing
            .upstreams
            .iter()
            .find(|(p, _)| *p == provider)
            .map(|(_, url)| url);
        if let Some(url) = args.upstream.as_ref().or(was) {
            upstream.clone_from(url);
        }
    }
    config.check()?;
    Ok(config)
}

/// The ledger's default place: `ledger.jsonl` in `$XDG_STATE_HOME/ctxcompact`, else in
/// `~/.local/state/ctxcompact` (the XDG base directories' state folder).
fn default_ledger() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|dir| !dir.is_empty())
                .map(|home| PathBuf::from(home).join(".local/state"))
        })?;
    Some(state.join("ctxcompact/ledger.jsonl"))
}

/// Runs the agent with `before` then `args`, and `env` added to this process's environment;
/// passes on the signals sent to `wrap` until it exits.
fn run_agent(
    program: &OsString,
    before: &[String],
    args: &[OsString],
    env: &[(String, String)],
) -> std::io::Result<ExitStatus> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // Handled from before the agent starts: none of them ends `wrap` and leaves it alone.
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let mut hangup = signal(SignalKind::hangup())?;
        let mut child = tokio::process::Command::new(program)
            .args(before)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .spawn()?;
        loop {
            let forward = tokio::select! {
                status = child.wait() => return status,
                _ = interrupt.recv() => (!in_terminal_foreground()).then_some(Signal::INT),
                _ = terminate.recv() => Some(Signal::TERM),
                _ = hangup.recv() => Some(Signal::HUP),
            };
            // `id` is none once the agent is reaped, so a reused process id is never signalled.
            let pid = child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .and_then(Pid::from_raw);
            if let (Some(sig), Some(pid)) = (forward, pid) {
                let _ = rustix::process::kill_process(pid, sig);
            }
        }
    })
}

/// Whether this process's group is its terminal's foreground group: a Ctrl-C there reached
/// the agent, in the same group, too.
fn in_terminal_foreground() -> bool {
    rustix::termios::tcgetpgrp(std::io::stdin())
        .is_ok_and(|group| group == rustix::process::getpgrp())
}

/// The exit status a shell gives for the agent's: its code, or 128 + the signal's number.
fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(255),
        (None, None) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_is_128_plus_its_number_as_in_shells() {
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(ExitStatus::from_raw(15)), 143);
        assert_eq!(exit_code(ExitStatus::from_raw(2)), 130);
    }
}
