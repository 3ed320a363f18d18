//! `ctxcompact count`: each message's tokens and the total, as the budget counts them.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::flags::{InputArgs, ModelArgs};
use crate::input::read_anchored;
use crate::output::exit_without_freeing;

/// Arguments of `count`.
#[derive(Debug, Args)]
pub(crate) struct CountArgs {
    #[command(flatten)]
    pub(crate) input: InputArgs,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Print `{"total": N, "system": N, "messages": [...], "tokenizer": …, "estimator": …}`,
    /// with `model` and `model_match` when a model is known.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Prints each message's tokens and the total.
pub(crate) fn run(args: &CountArgs) -> Result<ExitCode> {
    let CountArgs { input, model, json } = args;
    let tables = model.prepare();
    let (conversation, anchor) = read_anchored(input)?;
    let options =
        model
            .unbudgeted(None, anchor)
            .options_for_body_from(&tables?, &conversation, None)?;
    let tokenizer = options.tokenizer;
    let counts = options.count_body(&conversation);
    let mut out = String::new();
    if *json {
        let value = options.count_json(&conversation);
        out = value.to_string();
        out.push('\n');
    } else {
        if counts.outside > 0 {
            let _ = writeln!(out, "system prompt  {:>8}", counts.outside);
        }
        let rows = conversation
            .messages
            .iter()
            .zip(&counts.messages)
            .enumerate();
        for (index, (message, tokens)) in rows {
            let _ = writeln!(out, "{index:>6} {:<9} {tokens:>8}", message.role.as_str());
        }
        let _ = writeln!(
            out,
            "total ({}, with {} reply tokens) {}",
            tokenizer.as_str(),
            tokenizer.counter().reply_priming(),
            counts.total()
        );
        if let Some(model) = &options.model {
            let how = options.model_match.as_deref().unwrap_or_default();
            let _ = writeln!(out, "model: {model}: {how}");
        }
        let _ = writeln!(out, "estimator: {}", tokenizer.describe());
        // A given overhead replaces the anchor (`Options::overhead`).
        if let Some(anchor) = options.anchor.as_ref().filter(|_| options.overhead == 0) {
            let _ = writeln!(
                out,
                "anchored on the input size recorded at line {}: {} tokens for the {} messages before it",
                anchor.line, anchor.input_tokens, anchor.message
            );
        }
    }
    io::stdout().write_all(out.as_bytes())?;
    exit_without_freeing(conversation);
    Ok(ExitCode::SUCCESS)
}
