//! `ctxcompact validate`: tool-call pairing and placement checked, each problem named.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::flags::InputArgs;
use crate::input::read;
use crate::output::{EXIT_BAD_INPUT, say};

/// Arguments of `validate`.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    #[command(flatten)]
    pub(crate) input: InputArgs,
}

/// Prints every problem a provider refuses the body for as a request (pairing, placement, a
/// call still in progress) with its message and field; exit 2 when there is one.
pub(crate) fn run(args: &ValidateArgs) -> Result<ExitCode> {
    let input = &args.input;
    let conversation = read(input)?;
    let problems = conversation.request_problems();
    let mut out = io::stdout().lock();
    // What a session log's reader repaired to read it as the agent sent it.
    for repair in conversation.repairs.iter().filter(|r| r.changed()) {
        let call = repair
            .call_id
            .as_deref()
            .map(|id| format!(" `{id}`"))
            .unwrap_or_default();
        // An API body's repairs name the message index, a log's its line.
        let at = if conversation.lines.is_empty() {
            "message"
        } else {
            "line"
        };
        writeln!(
            out,
            "{}: {at} {}: repaired: {}{call}",
            input.file, repair.line, repair.kind
        )?;
    }
    for problem in &problems {
        writeln!(out, "{}: {problem}", input.file)?;
    }
    if problems.is_empty() {
        let (format, count) = (conversation.format.as_str(), conversation.messages.len());
        writeln!(out, "{}: valid ({format}, {count} messages)", input.file)?;
        return Ok(ExitCode::SUCCESS);
    }
    let count = problems.len();
    let noun = if count == 1 { "problem" } else { "problems" };
    say(&format!("ctxcompact: {}: {count} {noun}", input.file));
    Ok(ExitCode::from(EXIT_BAD_INPUT))
}
