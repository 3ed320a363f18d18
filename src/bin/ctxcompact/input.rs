//! Reading the input: the file (or standard input) parsed in its format, with the last input
//! size a session log recorded.

use std::fs;
use std::io;

use anyhow::{Context, Result};
use ctxcompact::{Conversation, format};

use crate::flags::InputArgs;

/// Reads and parses the input file (or standard input for `-`).
pub(crate) fn read(input: &InputArgs) -> Result<Conversation> {
    read_anchored(input).map(|(conversation, _)| conversation)
}

/// Reads the input, with the last input size a session log recorded (none when the whole
/// history is read: the reported sizes are of what followed the last compaction).
pub(crate) fn read_anchored(
    input: &InputArgs,
) -> Result<(Conversation, Option<format::RecordedUsage>)> {
    let options = format::ReadOptions {
        format: input.format.format(),
        whole_history: input.whole_history,
        strict: input.strict,
        repair: input.repair,
    };
    // A file is read whole and parsed from memory: parsing a slice is several times faster
    // than parsing a stream byte by byte, for one copy of the input held while it parses.
    let read = if input.file == "-" {
        format::parse_reader_with_usage(io::stdin().lock(), &options)
    } else {
        let bytes =
            fs::read(&input.file).with_context(|| format!("{}: cannot read", input.file))?;
        format::parse_with_usage(&bytes, &options)
    };
    let (conversation, mut usages) = read.with_context(|| input.file.clone())?;
    let anchor = if input.whole_history {
        None
    } else {
        usages.pop()
    };
    Ok((conversation, anchor))
}
