//! `ctxcompact compact`: a conversation compacted to a budget, written with its report.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use crate::flags::{self, BudgetArgs, InputArgs, OutputArgs, RemovalArgs};
use crate::input::read_anchored;
use crate::output::{check_paths, emit, exit_without_freeing};

/// Arguments of `compact`.
#[derive(Debug, Args)]
pub(crate) struct CompactArgs {
    #[command(flatten)]
    pub(crate) input: InputArgs,
    #[command(flatten)]
    pub(crate) budget: BudgetArgs,
    #[command(flatten)]
    pub(crate) removal: RemovalArgs,
    /// Archive each removed span and each message whose tool output is cleared in this
    /// folder (one JSON message a line), named in the markers and placeholders.
    #[arg(long, value_name = "DIR")]
    pub(crate) archive: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) output: OutputArgs,
}

/// Compacts the input to the budget and writes the output, the report and the archive.
pub(crate) fn run(args: CompactArgs) -> Result<ExitCode> {
    let CompactArgs {
        input,
        budget,
        removal,
        archive,
        output,
    } = args;
    let tables = budget.model.prepare();
    check_paths(&input, &output)?;
    let (conversation, anchor) = read_anchored(&input)?;
    let options = flags::settings(&budget, &removal, archive, None, anchor).options_for_body_from(
        &tables?,
        &conversation,
        None,
    )?;
    let compacted =
        ctxcompact::compact(conversation, &options).with_context(|| input.file.clone())?;
    let code = emit(
        &compacted,
        &compacted.report.summary(),
        &input,
        &output,
        true,
    );
    exit_without_freeing(compacted);
    code
}
