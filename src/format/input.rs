//! Bytes into records: one JSON document, or a stream of JSON values (JSONL) each with the line
//! it started on, so that errors in a log name their line. A UTF-8 byte-order mark is skipped.

use std::cell::{Cell, RefCell};
use std::io::{BufRead, Read};
use std::rc::Rc;

use serde_json::Value;

use super::spelling::Spellings;
use super::{Format, Record};
use crate::error::{Error, Location, Result};

/// The byte-order mark some editors put at the start of UTF-8 files.
pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Splits bytes into their JSON values, each with the line it starts on (the fast path of
/// [`read_records`] for input already in memory).
// Counting newlines between two values is not worth the `bytecount` crate.
#[allow(clippy::naive_bytecount)]
pub(super) fn records_of_slice(bytes: &[u8]) -> Result<Vec<Record>> {
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    let mut stream = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    let mut records: Vec<Record> = Vec::new();
    let (mut counted, mut line) = (0, 1);
    loop {
        let offset = stream.byte_offset();
        match stream.next() {
            None => break,
            Some(Err(err)) => return Err(json_error(err, records.last())),
            Some(Ok(value)) => {
                let skipped = bytes[offset..]
                    .iter()
                    .take_while(|b| b.is_ascii_whitespace());
                let begin = offset + skipped.count();
                line += bytes[counted..begin]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count();
                counted = begin;
                records.push(Record { line, value });
            }
        }
    }
    if records.is_empty() {
        return Err(Error::empty());
    }
    if Spellings::may_differ(bytes) {
        let mut spellings = Spellings::default();
        spellings.feed(bytes);
        spellings
            .finish()
            .restore(records.iter_mut().map(|r| &mut r.value));
    }
    Ok(records)
}

/// A JSON syntax error; garbage after a value on its own line is trailing text, not a broken
/// JSONL line.
pub(super) fn json_error(err: serde_json::Error, last: Option<&Record>) -> Error {
    match last {
        Some(last) if err.line() == last.line && !err.is_io() => Error::Malformed {
            at: Location::line(last.line, "top level"),
            problem: format!(
                "trailing characters after the JSON value, at column {}",
                err.column()
            ),
        },
        _ => Error::from_json(err),
    }
}

/// Splits the input into its JSON values, each with the line it starts on.
pub(super) fn read_records(reader: impl Read) -> Result<Vec<Record>> {
    let mut reader = std::io::BufReader::new(reader);
    let buffer = reader.fill_buf().map_err(|source| Error::Read { source })?;
    if buffer.starts_with(BOM) {
        reader.consume(BOM.len());
    }
    let start = Rc::new(Cell::new(None));
    let spellings = Rc::new(RefCell::new(Spellings::default()));
    let counting = Counting {
        inner: reader,
        newlines: 0,
        start: Rc::clone(&start),
        spellings: Rc::clone(&spellings),
    };
    let mut records: Vec<Record> = Vec::new();
    for value in serde_json::Deserializer::from_reader(counting).into_iter::<Value>() {
        let value = value.map_err(|err| json_error(err, records.last()))?;
        let line = start.take().unwrap_or(1);
        records.push(Record { line, value });
    }
    if records.is_empty() {
        return Err(Error::empty());
    }
    let spellings = spellings.take().finish();
    if !spellings.is_empty() {
        spellings.restore(records.iter_mut().map(|r| &mut r.value));
    }
    Ok(records)
}

/// A reader that notes the line where each JSON value starts (its first non-blank byte after
/// the previous value; `start` is taken after each value) and the numbers the input spells
/// otherwise than the parse keeps them.
pub(super) struct Counting<R> {
    inner: R,
    newlines: usize,
    start: Rc<Cell<Option<usize>>>,
    spellings: Rc<RefCell<Spellings>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.spellings.borrow_mut().feed(&buf[..n]);
        for &byte in &buf[..n] {
            if self.start.get().is_none() && !byte.is_ascii_whitespace() {
                self.start.set(Some(self.newlines + 1));
            }
            if byte == b'\n' {
                self.newlines += 1;
            }
        }
        Ok(n)
    }
}

/// Reads the one JSON document an API request format needs.
pub(crate) fn single(records: Vec<Record>, format: Format) -> Result<Value> {
    if let Some(second) = records.get(1) {
        return Err(Error::line(
            second.line,
            "top level",
            format!(
                "a second JSON value: {} input is one JSON document",
                format.as_str()
            ),
        ));
    }
    records
        .into_iter()
        .next()
        .map(|record| record.value)
        .ok_or_else(Error::empty)
}
