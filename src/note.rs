//! The notes ctxcompact leaves in a conversation, and their grammar: the removal marker's first
//! and last lines, the placeholder of a cleared tool output, the line standing for the cut middle
//! of a capped output or a shortened task.
//!
//! Every note starts with [`MARKER_PREFIX`] (or, inside a capped text, `[…`) so that a reader,
//! or a later run, recognises it; its wording is decided here only, and later stages read notes
//! back through this module ([`marker_len`], [`parse_header`], [`is_cleared_output`]).

use std::borrow::Cow;

/// The prefix every ctxcompact marker starts with.
pub(crate) const MARKER_PREFIX: &str = "[ctxcompact:";

/// A command, an error line or an outcome is cut to this many characters.
pub(crate) const LINE_CHARS: usize = 200;

/// The last line of a marker with a digest, so that its extent is plain to a later run even when
/// it was merged into the message after it.
pub(crate) const DIGEST_END: &str = "[ctxcompact: end of digest]";

/// The words of the first line that say a digest follows.
pub(crate) const DIGEST_FOLLOWS: &str = "; digest below";

/// The longest marker this run could write with `messages` and `tokens` at most, without its
/// digest: what each marker reserves besides the shared digest allowance.
pub(crate) fn worst_header(messages: usize, tokens: usize, digest: bool) -> String {
    let header = header(messages, tokens, digest, Place::BeforeCurrent);
    if digest {
        format!("{header}\n\n{DIGEST_END}")
    } else {
        header
    }
}

/// The first line of a removal marker whose digest had too little room to name every removed
/// request: [`header`] without its closing clause, so that the tokens it saves name more.
pub(crate) fn tight_header(messages: usize, tokens: usize) -> String {
    let noun = if messages == 1 { "message" } else { "messages" };
    format!(
        "[ctxcompact: {} earlier {noun} ({} input tokens) removed here{DIGEST_FOLLOWS}]",
        thousands(messages),
        thousands(tokens)
    )
}

/// Where a removed span lies relative to the current request, which its marker's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Before it: the current request is the last user message.
    BeforeCurrent,
    /// After it (rounds of the current turn): the current request is above the marker, which is
    /// then a later user message itself.
    AfterCurrent,
}

/// The first line of every removal marker. Its closing clause tells the model where the current
/// request is, by the span's `place`. The clause after the current request is the shorter, so
/// that [`worst_header`] is one before it.
pub(crate) fn header(messages: usize, tokens: usize, digest: bool, place: Place) -> String {
    let noun = if messages == 1 { "message" } else { "messages" };
    let follows = if digest { DIGEST_FOLLOWS } else { "" };
    let current = match place {
        Place::AfterCurrent => "is above",
        Place::BeforeCurrent => "is the last user message",
    };
    format!(
        "[ctxcompact: {} earlier {noun} ({} input tokens) removed here{follows}; the current \
         request {current}]",
        thousands(messages),
        thousands(tokens)
    )
}

/// The length in bytes of the marker `text` starts with, if it starts with one: its first line,
/// or through its closing line when it has a digest.
pub(crate) fn marker_len(text: &str) -> Option<usize> {
    let start = text.len() - text.trim_start().len();
    let rest = &text[start..];
    if !rest.starts_with(MARKER_PREFIX) {
        return None;
    }
    let first = rest.find('\n').unwrap_or(rest.len());
    if !rest[..first].contains(DIGEST_FOLLOWS) {
        // A brief marker's archive line is the marker's too.
        let archive = rest[first..]
            .strip_prefix('\n')
            .filter(|line| line.starts_with(ARCHIVE_START) || line.starts_with(HANDLE_START));
        if let Some(line) = archive {
            return Some(start + first + 1 + line.find('\n').unwrap_or(line.len()));
        }
        return Some(start + first);
    }
    match rest.find(DIGEST_END) {
        Some(at) => Some(start + at + DIGEST_END.len()),
        None => Some(text.len()),
    }
}

/// How the line of a marker naming its archive file starts.
pub(crate) const ARCHIVE_START: &str = "[ctxcompact: archived in ";

/// The words that name an archive file in a note, before its path.
const ARCHIVED_IN: &str = "archived in ";

/// The words that name a handle in a note, before it.
const HANDLE_IS: &str = "; handle ";

/// The reference to the first `lines` lines of the archive file at `path`, then its handle
/// ([`handle`]): what a recall tool takes.
pub(crate) fn reference(path: &str, lines: usize) -> String {
    let handle = handle(path);
    if lines == 1 {
        format!("{ARCHIVED_IN}{path}, line 1{HANDLE_IS}{handle}")
    } else {
        format!("{ARCHIVED_IN}{path}, lines 1-{lines}{HANDLE_IS}{handle}")
    }
}

/// The handle of the archive file at `path`: its folder's name and its own without the
/// extension (`<conversation>/<file>`), the file's content address wherever the folder is.
pub(crate) fn handle(path: &str) -> String {
    let path = std::path::Path::new(path);
    let name = |p: Option<&std::path::Path>, stem: bool| {
        p.and_then(|p| if stem { p.file_stem() } else { p.file_name() })
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    format!("{}/{}", name(path.parent(), false), name(Some(path), true))
}

/// A reference to removed history kept by the caller, not in a file (`Options::handles`): its
/// handle alone.
pub(crate) fn handle_reference(handle: &str) -> String {
    format!("handle {handle}")
}

/// How the line of a marker naming its span's handle alone starts ([`handle_line`]).
const HANDLE_START: &str = "[ctxcompact: handle ";

/// The line of a marker naming its span's handle alone, when no file holds it.
pub(crate) fn handle_line(handle: &str) -> String {
    format!("{HANDLE_START}{handle}]")
}

/// Whether `text` holds a reference to removed history: an archive file's or a handle's.
pub(crate) fn has_reference(text: &str) -> bool {
    parse_reference(text).is_some() || text.contains(HANDLE_IS) || text.contains(HANDLE_START)
}

/// The line of a marker naming the archive file of its span: it follows the marker's first line.
pub(crate) fn archive_line(path: &str, lines: usize) -> String {
    format!("{MARKER_PREFIX} {}]", reference(path, lines))
}

/// `marker` with its span's archive line after its first line (the line alone when `marker`
/// is empty: without a marker, the archive line is one).
pub(crate) fn with_archive_line(marker: &str, line: &str) -> String {
    if marker.is_empty() {
        return line.to_string();
    }
    match marker.split_once('\n') {
        Some((first, rest)) => format!("{first}\n{line}\n{rest}"),
        None => format!("{marker}\n{line}"),
    }
}

/// A placeholder (or any note ending in `]`) with a reference to its archive file before its
/// closing bracket.
pub(crate) fn with_reference(note: &str, reference: &str) -> String {
    let body = note.strip_suffix(']').unwrap_or(note);
    format!("{body}; {reference}]")
}

/// The archive file and the number of lines the last reference in `text` names.
pub(crate) fn parse_reference(text: &str) -> Option<(&str, usize)> {
    let at = text.rfind(ARCHIVED_IN)?;
    let rest = &text[at + ARCHIVED_IN.len()..];
    let (path, rest) = rest.rsplit_once(", line")?;
    let rest = rest.strip_prefix('s').unwrap_or(rest).strip_prefix(' ')?;
    let digits: String = rest
        .strip_prefix("1-")
        .unwrap_or(rest)
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((path, digits.parse().ok()?))
}

/// Reads the counts of an earlier marker's first line.
pub(crate) fn parse_header(text: &str) -> Option<(usize, usize)> {
    let rest = text.trim_start().strip_prefix("[ctxcompact: ")?;
    let (messages, rest) = rest.split_once(" earlier message")?;
    let (_, rest) = rest.split_once('(')?;
    let (tokens, _) = rest.split_once(" input tokens")?;
    let number = |s: &str| s.replace(',', "").parse::<usize>().ok();
    Some((number(messages)?, number(tokens)?))
}

/// The first `max` characters of `text`, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    clip_cow(Cow::Borrowed(text), max).into_owned()
}

/// [`clip`], borrowing what needs no cut.
pub(crate) fn clip_cow(text: Cow<'_, str>, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return text;
    }
    match text.char_indices().nth(max) {
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
        None => text,
    }
}

/// Newlines and runs of blanks become single spaces.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The placeholder that replaces a cleared tool result's content: the tool, the size, and the
/// `outcome` (the output's error or exit-status line, `crate::evidence::outcome_in`). It starts
/// with [`cleared_head`].
pub(crate) fn cleared_output(tool: &str, tokens: usize, outcome: Option<&str>) -> String {
    let outcome = outcome.map(|line| clip_cow(Cow::Borrowed(line), LINE_CHARS));
    // Room for all that follows the head, a superseded output's note included ([`superseded`]),
    // so that the placeholder is allocated once.
    let room = thousands_len(tokens)
        + " tokens)]".len()
        + outcome.as_ref().map_or(0, |line| ": ".len() + line.len())
        + SUPERSEDED_END.len();
    let mut placeholder = head_with_room(tool, room);
    push_thousands(&mut placeholder, tokens);
    placeholder.push_str(" tokens)");
    if let Some(line) = outcome {
        placeholder.push_str(": ");
        placeholder.push_str(&line);
    }
    placeholder.push(']');
    placeholder
}

/// A placeholder with the gist of its output below it: how many of the output's lines the gist
/// keeps (none: only names), then the gist's text.
pub(crate) fn with_gist(placeholder: &str, kept: usize, lines: usize, gist: &str) -> String {
    let body = placeholder.strip_suffix(']').unwrap_or(placeholder);
    if kept == 0 {
        format!("{body}; its names below]\n{gist}")
    } else {
        format!(
            "{body}; {kept} of {} lines below]\n{gist}",
            thousands(lines)
        )
    }
}

/// A placeholder with a gist below it ([`with_gist`]) as the bare placeholder: its first line
/// without the words naming the gist; `None` when `text` has no gist.
pub(crate) fn without_gist(text: &str) -> Option<String> {
    let (first, _) = text.split_once('\n')?;
    if !is_cleared_output(first) {
        return None;
    }
    let body = first.strip_suffix(']')?;
    let at = body.rfind("; ")?;
    let named = &body[at + 2..];
    (named == "its names below" || named.ends_with(" lines below"))
        .then(|| format!("{}]", &body[..at]))
}

/// Makes the placeholder of an output that a later call of the same tool with the same arguments
/// repeats say so, before its closing bracket: in place, as it is planned for every such output.
pub(crate) fn mark_superseded(placeholder: &mut String) {
    if placeholder.ends_with(']') {
        placeholder.pop();
    }
    placeholder.push_str(SUPERSEDED_END);
}

/// What a superseded output's placeholder ends with.
const SUPERSEDED_END: &str = "; a later call repeats it]";

/// How every placeholder of a cleared output starts, before the tool's name.
pub(crate) const CLEARED_START: &str = "[ctxcompact: output of ";

/// The start of every placeholder of `tool`'s outputs: it ends with punctuation just before the
/// size, a digit, where the BPE tokenizers always end a piece.
pub(crate) fn cleared_head(tool: &str) -> String {
    head_with_room(tool, 0)
}

/// [`cleared_head`] with room for `room` more bytes.
fn head_with_room(tool: &str, room: usize) -> String {
    const CLEARED: &str = " cleared (";
    let mut head = String::with_capacity(CLEARED_START.len() + tool.len() + CLEARED.len() + room);
    head.push_str(CLEARED_START);
    head.push_str(tool);
    head.push_str(CLEARED);
    head
}

/// Whether `text` is the placeholder of a cleared output.
pub(crate) fn is_cleared_output(text: &str) -> bool {
    text.starts_with(CLEARED_START)
}

/// The line that stands for the middle of a capped tool output (or, for a JSON output, the
/// values its gist leaves out); `unit` is `lines`, `characters` or `values`.
pub(crate) fn omitted(omitted: usize, total: usize, unit: &str) -> String {
    format!(
        "{OMITTED_START}{} of {} {unit}{OMITTED_END}]",
        thousands(omitted),
        thousands(total)
    )
}

/// How the line standing for a capped output's middle starts.
const OMITTED_START: &str = "[… ";
/// How it ends, after its unit and before its closing bracket (or its archive reference).
const OMITTED_END: &str = " omitted …";

/// Whether `line` is the line standing for a capped output's middle ([`omitted`]), with or
/// without a reference to the archive file holding the whole output ([`with_reference`]).
pub(crate) fn is_omitted(line: &str) -> bool {
    let Some(rest) = line.strip_prefix(OMITTED_START) else {
        return false;
    };
    let reference = rest
        .rfind(&format!("; {ARCHIVED_IN}"))
        .or_else(|| rest.rfind(HANDLE_IS));
    let bare = match reference {
        Some(at) => &rest[..at],
        None => rest.strip_suffix(']').unwrap_or(rest),
    };
    bare.contains(" of ")
        && [" lines", " characters", " values"].iter().any(|unit| {
            bare.strip_suffix(OMITTED_END)
                .is_some_and(|b| b.ends_with(unit))
        })
}

/// How the note in a shortened task starts.
const SHORTENED_START: &str = "[… ctxcompact shortened the task";

/// Whether `text` holds the note of a shortened task.
pub(crate) fn is_shortened(text: &str) -> bool {
    text.contains(SHORTENED_START)
}

/// The note that stands for the middle of a task shortened to fit the budget.
pub(crate) fn shortened(cut: usize, total: usize) -> String {
    format!(
        "{SHORTENED_START} to fit the budget: {} of {} characters cut here …]",
        thousands(cut),
        thousands(total)
    )
}

/// `9812` → `9,812`.
pub(crate) fn thousands(n: usize) -> String {
    let mut out = String::with_capacity(SIZE_CHARS);
    push_thousands(&mut out, n);
    out
}

/// The longest number [`thousands`] writes: `usize::MAX` on 64 bits, with its commas.
const SIZE_CHARS: usize = 26;

/// How many bytes [`thousands`] writes for `n`: its digits and a comma before each group of
/// three after the first.
fn thousands_len(n: usize) -> usize {
    let digits = n.checked_ilog10().map_or(1, |log| log as usize + 1);
    digits + (digits - 1) / 3
}

/// Appends `n` to `out` as [`thousands`] writes it, without a formatter or a copy: every cleared
/// output's placeholder holds its size.
fn push_thousands(out: &mut String, n: usize) {
    // The digits from the last, each group of three after the first preceded by a comma.
    let mut digits = [0u8; SIZE_CHARS];
    let mut start = digits.len();
    let mut rest = n;
    let mut written = 0;
    loop {
        if written > 0 && written % 3 == 0 {
            start -= 1;
            digits[start] = b',';
        }
        start -= 1;
        digits[start] = b"0123456789"[rest % 10];
        written += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&digits[start..]).expect("ASCII digits and commas"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(
            cleared_output("read_file", 2431, None),
            "[ctxcompact: output of read_file cleared (2,431 tokens)]"
        );
        assert_eq!(
            cleared_output("bash", 12, Some("Error: no such file")),
            "[ctxcompact: output of bash cleared (12 tokens): Error: no such file]"
        );
        assert_eq!(
            omitted(100, 1000, "lines"),
            "[… 100 of 1,000 lines omitted …]"
        );
        assert_eq!(
            parse_header(&header(1234, 56789, true, Place::BeforeCurrent)),
            Some((1234, 56789))
        );
        let after = header(1234, 56789, true, Place::AfterCurrent);
        assert_eq!(parse_header(&after), Some((1234, 56789)));
        assert!(after.ends_with("the current request is above]"), "{after}");
        assert!(after.len() < header(1234, 56789, true, Place::BeforeCurrent).len());
        let tight = format!(
            "{}\nRequests (1):\n» Go.\n{DIGEST_END}\n\nNext.",
            tight_header(3, 90)
        );
        assert_eq!(parse_header(&tight), Some((3, 90)));
        assert_eq!(marker_len(&tight), tight.find("\n\nNext."));
    }

    #[test]
    fn archive_references_read_back() {
        let marker = with_archive_line(
            &header(3, 120, false, Place::BeforeCurrent),
            &archive_line("/a/b/c.jsonl", 3),
        );
        assert_eq!(marker_len(&marker), Some(marker.len()));
        assert_eq!(parse_reference(&marker), Some(("/a/b/c.jsonl", 3)));
        let merged = format!("{marker}\n\nAnd Macbeth?");
        assert_eq!(marker_len(&merged), Some(marker.len()));
        let placeholder = with_reference(
            &cleared_output("bash", 12, Some("exit 1")),
            &reference("/a/b/d.jsonl", 1),
        );
        assert_eq!(
            placeholder,
            "[ctxcompact: output of bash cleared (12 tokens): exit 1; archived in /a/b/d.jsonl, line 1; handle b/d]"
        );
        assert_eq!(parse_reference(&placeholder), Some(("/a/b/d.jsonl", 1)));
        // A reference written before handles were named still reads back.
        let old =
            "[ctxcompact: output of bash cleared (12 tokens); archived in /a/b/d.jsonl, line 1]";
        assert_eq!(parse_reference(old), Some(("/a/b/d.jsonl", 1)));
        assert!(is_cleared_output(&placeholder));
    }

    proptest::proptest! {
        /// Sizes are written as their decimal digits with a comma before each group of three
        /// from the right, at every magnitude up to `usize::MAX`.
        #[test]
        fn thousands_groups_the_decimal_digits_by_three(
            n in proptest::prop_oneof![0..100_000usize, proptest::num::usize::ANY]
        ) {
            let digits = n.to_string();
            let mut expected = String::new();
            for (i, digit) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i).is_multiple_of(3) {
                    expected.push(',');
                }
                expected.push(digit);
            }
            proptest::prop_assert_eq!(thousands_len(n), expected.len());
            proptest::prop_assert_eq!(thousands(n), expected);
        }

        /// A superseded output's placeholder is the placeholder, without one closing bracket,
        /// then the words saying so and the bracket: an outcome line ending in `]` keeps its own.
        /// Saying so needs no more room than the placeholder was made with.
        #[test]
        fn a_superseded_placeholder_says_so_before_its_one_closing_bracket(
            tool in "[a-z_]{1,8}",
            tokens in proptest::prop_oneof![0..2_000_000usize, proptest::num::usize::ANY],
            outcome in proptest::option::of("(x|\\]|\\[| |\u{e9}){0,6}|(x|\u{e9}){195,210}"),
        ) {
            let placeholder = cleared_output(&tool, tokens, outcome.as_deref());
            let mut marked = cleared_output(&tool, tokens, outcome.as_deref());
            let capacity = marked.capacity();
            mark_superseded(&mut marked);
            let body = &placeholder[..placeholder.len() - 1];
            proptest::prop_assert_eq!(&marked, &format!("{body}; a later call repeats it]"));
            // The placeholder was made with room for the note.
            proptest::prop_assert_eq!(marked.capacity(), capacity);
        }
    }
}
