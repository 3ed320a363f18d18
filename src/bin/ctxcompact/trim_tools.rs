//! `ctxcompact trim-tools`: old tool rounds trimmed, whatever the budget (for every turn).

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use ctxcompact::Report;

use crate::flags::{InputArgs, ModelArgs, OutputArgs, ToolArgs};
use crate::input::read_anchored;
use crate::output::{check_paths, emit};

/// Arguments of `trim-tools`.
#[derive(Debug, Args)]
pub(crate) struct TrimToolsArgs {
    #[command(flatten)]
    pub(crate) input: InputArgs,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    #[command(flatten)]
    pub(crate) tools: ToolArgs,
    #[command(flatten)]
    pub(crate) output: OutputArgs,
}

/// Trims the input's old tool rounds and writes the output and the report.
pub(crate) fn run(args: &TrimToolsArgs) -> Result<ExitCode> {
    let TrimToolsArgs {
        input,
        model,
        tools,
        output,
    } = args;
    let tables = model.prepare();
    check_paths(input, output)?;
    let (conversation, anchor) = read_anchored(input)?;
    let options = model
        .unbudgeted(Some(tools), anchor)
        .options_for_body_from(&tables?, &conversation, None)?;
    let trimmed =
        ctxcompact::trim_tools(conversation, &options).with_context(|| input.file.clone())?;
    emit(
        &trimmed,
        &trim_summary(&trimmed.report),
        input,
        output,
        false,
    )
}

/// The summary line of `trim-tools`, which has no budget: what trimming did.
fn trim_summary(report: &Report) -> String {
    let t = &report.tool_trim;
    format!(
        "tool trimming: {} → {} tokens; {} rounds, {} kept, {} cleared, {} dropped, {} excluded, {} truncated",
        report.tokens_before,
        report.tokens_after,
        t.rounds,
        t.kept,
        t.cleared,
        t.dropped,
        t.excluded,
        t.truncated
    )
}
