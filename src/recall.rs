//! The archive read back: what a marker's or a placeholder's handle names, and a search of an
//! archive folder for words. This is what `ctxcompact mcp` serves an agent, so every failure is
//! a sentence naming what was asked (a handle, a folder), never a panic.
//!
//! A handle is an archive file's content address, `<conversation>/<file>` (the names
//! `archive` gives them), so it names the same file in any folder the same history was archived
//! in.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Why a handle or a search could not be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecallError {
    /// Not of the form `<conversation>/<file>`, each 12 hexadecimal digits.
    #[error(
        "`{0}` is not a ctxcompact handle: a handle is two groups of 12 hexadecimal digits, \
         `<conversation>/<file>`, as a marker or placeholder names it (`handle 3fa2c1d0e9ab/7c1b2e3f4a5d`)"
    )]
    Malformed(String),
    /// No archive file for the handle in the folder.
    #[error(
        "no archive file for handle `{handle}`: {} does not exist (archived in another folder, \
         or removed by the archive's size bound)",
        path.display()
    )]
    Missing {
        /// The handle asked for.
        handle: String,
        /// The file it would be.
        path: PathBuf,
    },
    /// The folder holds no archive file.
    #[error("the archive {} is empty: nothing has been archived there", .0.display())]
    Empty(PathBuf),
    /// No compaction of the history given names the handle.
    #[error(
        "no compaction of this history removed anything under handle `{0}` (a handle names what \
         a compaction of the same history, with the same settings, removed)"
    )]
    NotInHistory(String),
    /// The history given could not be read.
    #[error("cannot read the history: {0}")]
    History(String),
    /// A file or folder that exists could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// What could not be read.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// Hexadecimal digits of each half of a handle (`archive`'s names).
const HANDLE_DIGITS: usize = 12;

/// `handle` without surrounding blanks, when it is one: `<12 hex digits>/<12 hex digits>`.
///
/// # Errors
/// [`RecallError::Malformed`] for anything else.
pub(crate) fn checked(handle: &str) -> Result<&str, RecallError> {
    let trimmed = handle.trim();
    let hex = |part: &str| {
        part.len() == HANDLE_DIGITS
            && part
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    match trimmed.split_once('/') {
        Some((conversation, file)) if hex(conversation) && hex(file) => Ok(trimmed),
        _ => Err(RecallError::Malformed(handle.to_string())),
    }
}

/// The file `handle` names in the archive folder `dir`.
///
/// # Errors
/// [`RecallError::Malformed`] for anything but `<12 hex digits>/<12 hex digits>` (surrounding
/// blanks aside).
pub fn file_of(dir: &Path, handle: &str) -> Result<PathBuf, RecallError> {
    let handle = checked(handle)?;
    Ok(dir.join(format!("{handle}.jsonl")))
}

/// The archive file `handle` names in `dir`, byte for byte: one message a line, each as the
/// client sent it (in its wire format), in their order.
///
/// # Errors
/// [`RecallError::Malformed`], [`RecallError::Missing`], or [`RecallError::Read`].
pub fn recall(dir: &Path, handle: &str) -> Result<String, RecallError> {
    let path = file_of(dir, handle)?;
    match std::fs::read_to_string(&path) {
        Ok(content) => {
            mark_used(&path);
            Ok(content)
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => Err(RecallError::Missing {
            handle: handle.trim().to_string(),
            path,
        }),
        Err(source) => Err(RecallError::Read { path, source }),
    }
}

/// Marks the archive file at `path` used now: the archive's size bound removes the least
/// recently used files first (by modification time), so a file an agent recalls, or a
/// compaction archives again, outlives those no one has used since. Best effort: a file whose
/// time cannot be set only goes sooner.
pub(crate) fn mark_used(path: &Path) {
    let file = std::fs::OpenOptions::new().append(true).open(path);
    if let Ok(file) = file {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

/// One archived message a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hit {
    /// The handle of its file.
    pub handle: String,
    /// Its line in that file, from 1.
    pub line: usize,
    /// Its text (every string of the message, joined by spaces), around the first word
    /// found.
    pub excerpt: String,
}

/// Characters of a hit's text shown on each side of the first word found.
const EXCERPT_CHARS: usize = 160;

/// The archived messages in `dir` whose text holds every word of `words` (case aside), in
/// order of their handles and lines, at most `limit`; and how many matched in all.
///
/// # Errors
/// [`RecallError::Empty`] when `dir` holds no archive file (or does not exist);
/// [`RecallError::Read`] for a folder or file that cannot be read.
pub fn search(dir: &Path, words: &str, limit: usize) -> Result<(Vec<Hit>, usize), RecallError> {
    let files = archive_files(dir)?;
    if files.is_empty() {
        return Err(RecallError::Empty(dir.to_path_buf()));
    }
    let words: Vec<String> = words.split_whitespace().map(str::to_lowercase).collect();
    let mut hits = Vec::new();
    let mut found = 0;
    for (handle, path) in files {
        let content = std::fs::read_to_string(&path).map_err(|source| RecallError::Read {
            path: path.clone(),
            source,
        })?;
        for (at, line) in content.lines().enumerate() {
            let text = text_of(line);
            let lower = text.to_lowercase();
            if words.is_empty() || !words.iter().all(|w| lower.contains(w.as_str())) {
                continue;
            }
            found += 1;
            if hits.len() < limit {
                let first = lower.find(words[0].as_str()).unwrap_or(0);
                hits.push(Hit {
                    handle: handle.clone(),
                    line: at + 1,
                    excerpt: excerpt(&text, first),
                });
            }
        }
    }
    Ok((hits, found))
}

/// The hits of a search as lines of text: each hit's handle and line, then its excerpt.
pub fn describe(hits: &[Hit], found: usize) -> String {
    let mut out = String::new();
    for hit in hits {
        let _ = writeln!(
            out,
            "handle {} line {}: {}",
            hit.handle, hit.line, hit.excerpt
        );
    }
    if found > hits.len() {
        let _ = writeln!(
            out,
            "({} more; add words to narrow the search)",
            found - hits.len()
        );
    }
    out
}

/// The archive files of `dir` by handle, in the handles' order.
fn archive_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, RecallError> {
    let read = |path: &Path| {
        std::fs::read_dir(path).map_err(|source| RecallError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for conversation in read(dir)?.flatten() {
        let folder = conversation.path();
        if !folder.is_dir() {
            continue;
        }
        let Some(name) = folder.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        for entry in read(&folder)?.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                let stem = path.file_stem().unwrap_or_default().to_string_lossy();
                files.push((format!("{name}/{stem}"), path));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Every string of an archived message (a line of JSON), joined by spaces; the line itself
/// when it is no JSON.
fn text_of(line: &str) -> String {
    fn strings(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(text) => out.push(text.clone()),
            Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    match serde_json::from_str::<Value>(line) {
        Ok(value) => {
            let mut out = Vec::new();
            strings(&value, &mut out);
            out.join(" ")
        }
        Err(_) => line.to_string(),
    }
}

/// `text` around byte `at`, [`EXCERPT_CHARS`] characters each side, on one line, with `…`
/// where cut.
fn excerpt(text: &str, at: usize) -> String {
    let before: Vec<(usize, char)> = text[..at].char_indices().collect();
    let start = before
        .len()
        .checked_sub(EXCERPT_CHARS)
        .map_or(0, |i| before[i].0);
    let end = text[at..]
        .char_indices()
        .nth(EXCERPT_CHARS)
        .map_or(text.len(), |(i, _)| at + i);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(
        &text[start..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    );
    if end < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_checked_and_missing_files_and_empty_folders_say_so() {
        let dir = std::env::temp_dir().join(format!("ctxcompact-recall-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let err = search(&dir, "x", 10).unwrap_err();
        assert!(err.to_string().contains("is empty"), "{err}");
        for bad in [
            "",
            "abc",
            "3fa2c1d0e9ab",
            "3fa2c1d0e9ab/../../etc",
            "3FA2C1D0E9AB/7c1b2e3f4a5d",
        ] {
            let err = recall(&dir, bad).unwrap_err();
            assert!(matches!(err, RecallError::Malformed(_)), "{bad}: {err}");
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
        }
        let handle = "3fa2c1d0e9ab/7c1b2e3f4a5d";
        let err = recall(&dir, handle).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
        let path = file_of(&dir, handle).unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let lines = "{\"role\":\"user\",\"content\":\"Fix the\\nparser, please\"}\n{\"role\":\"assistant\",\"content\":\"done\"}\n";
        std::fs::write(&path, lines).unwrap();
        assert_eq!(recall(&dir, &format!(" {handle}\n")).unwrap(), lines);
        let (hits, found) = search(&dir, "PARSER fix", 10).unwrap();
        assert_eq!(found, 1);
        assert_eq!(hits[0].handle, handle);
        assert_eq!(hits[0].line, 1);
        assert_eq!(hits[0].excerpt, "user Fix the parser, please");
        assert_eq!(search(&dir, "nowhere", 10).unwrap().1, 0);
        let (hits, found) = search(&dir, "e", 1).unwrap();
        assert_eq!((hits.len(), found), (1, 2));
        assert!(describe(&hits, found).ends_with("(1 more; add words to narrow the search)\n"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
