//! Format detection: every reader looks at the records for its format's evidence, and the
//! format with strong evidence, or the only one with any, is chosen; a forced format is checked
//! against the evidence.

use serde_json::Value;

use super::{Evidence, Format, Record, reader};
use crate::error::{Error, Result};
use crate::parallel;

/// Values (records, or the messages of one document) from which [`choose`] gathers the formats'
/// evidence on two threads: each reader looks at every message, which costs about 1 ms per
/// 1,000 messages, and reading is otherwise single-threaded.
pub(super) const PARALLEL_EVIDENCE_VALUES: usize = 2_000;

/// Every format's evidence, in [`Format::ALL`] order. Large inputs share the formats between two
/// threads, each taking the next format not taken yet (the formats' costs differ).
pub(super) fn gather_evidence(records: &[Record]) -> Vec<(Format, Evidence)> {
    let values = match records {
        [record] => match &record.value {
            Value::Array(items) => items.len(),
            Value::Object(body) => body
                .values()
                .filter_map(Value::as_array)
                .map(Vec::len)
                .max()
                .unwrap_or(0),
            _ => 0,
        },
        _ => records.len(),
    };
    let threads = if values < PARALLEL_EVIDENCE_VALUES {
        1
    } else {
        parallel::cores().min(2)
    };
    parallel::in_turn(Format::ALL.len(), threads, |at| {
        let format = Format::ALL[at];
        (format, reader(format).evidence(records))
    })
}

/// Picks the format: the forced one (unless the input clearly is another), or the only one
/// with strong evidence, or the only one with any.
pub(super) fn choose(records: &[Record], forced: Option<Format>) -> Result<Format> {
    let found: Vec<(Format, Evidence)> = gather_evidence(records)
        .into_iter()
        .filter(|(_, evidence)| !evidence.is_empty())
        .collect();
    let describe = |(format, evidence): &(Format, Evidence)| {
        format!(
            "{} looks like {}",
            evidence.first.as_deref().unwrap_or("the input"),
            format.title()
        )
    };
    // A forced format reads input that shows it; input that shows none is read as forced
    // only when nothing shows another format and the format reads bodies by their shape.
    if let Some(forced) = forced {
        let has = |format| found.iter().any(|(f, _)| *f == format);
        if !has(forced) {
            let strongest = found
                .iter()
                .filter(|(_, evidence)| evidence.strong > 0)
                .max_by_key(|(_, evidence)| evidence.strong);
            if let Some((found, evidence)) = strongest {
                return Err(Error::WrongFormat {
                    forced,
                    found: *found,
                    reason: evidence.first.clone().unwrap_or_default(),
                });
            }
            if let Some(needs) = reader(forced).needs() {
                return Err(Error::NotTheFormat {
                    forced,
                    missing: needs.to_string(),
                });
            }
        }
        return Ok(forced);
    }
    let strong: Vec<&(Format, Evidence)> = found.iter().filter(|(_, e)| e.strong > 0).collect();
    let candidates: Vec<&(Format, Evidence)> = if strong.is_empty() {
        found.iter().collect()
    } else {
        strong
    };
    match candidates.as_slice() {
        [(format, _)] => Ok(*format),
        [] if records.len() == 1 => {
            // Plain user/assistant text reads the same in several formats: OpenAI is the default.
            Ok(Format::OpenAi)
        }
        [] => Err(Error::UnknownFormat {
            reason: format!(
                "{} JSON values (JSONL) that no session-log format recognises",
                records.len()
            ),
        }),
        [first, second, ..] => Err(Error::UnknownFormat {
            reason: format!("{} but {}", describe(first), describe(second)),
        }),
    }
}
