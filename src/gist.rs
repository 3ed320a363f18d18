//! The gist of a cleared tool output: the part of it that later steps tend to use, in a form
//! read as plainly as the output itself.
//!
//! An agent reads ids, paths and names off its tool outputs and writes them in its next calls
//! (a user's payment id from a lookup, a file from a listing, a function from a disassembly). A
//! placeholder alone loses them; the gist keeps them within the tokens its caller gives:
//! - the names it holds — paths, identifiers, code names, dates and times, not a JSON key —
//!   each once, on a `names:` line, as many as fit (a name costs less than the line around it);
//! - then its lines, by how many names not seen before each adds per token, its error and exit
//!   lines first, written in their order with `…` where lines were left out; a kept line takes
//!   its names off the names line;
//! - a line repeated is kept once, with its count (`(×12)`);
//! - a JSON output is read as its scalar leaves, one `path: value` line each, and each long
//!   array's length.
//!
//! The gist is a function of the output's text and its room alone, so the same output always
//! gives the same bytes (the proxy's prompt cache relies on it).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::ops::Range;

use serde_json::Value;

use crate::hash::FxBuild;
use crate::identifiers;
use crate::tokens::TokenCounter;
use crate::{classify, evidence};

/// A line of the output longer than this many characters is clipped in the gist (its names
/// still count, and those past the clip may go to the names line).
const LINE_CHARS: usize = 240;
/// A JSON string value is clipped to this many characters in its `path: value` line.
const VALUE_CHARS: usize = 160;
/// Lines read from one output at most (a gist of a larger one reads its first lines).
const MAX_LINES: usize = 20_000;
/// An array longer than this gets a line with its length.
const LONG_ARRAY: usize = 4;
/// Estimated tokens of the names line's own words.
const NAMES_LINE: usize = 2;
/// How a gist's line of names starts.
const NAMES: &str = "names: ";
/// Tries at fitting the room: each one shrinks the estimate by the overshoot of the last.
const TRIES: usize = 4;
/// A gist of less room than this many tokens is not written.
pub(crate) const MIN_ROOM: usize = 8;

/// A gist: its text and what it kept, for the placeholder above it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gist {
    /// The kept lines, then the names line.
    pub(crate) text: String,
    /// Lines of the output kept.
    pub(crate) lines_kept: usize,
    /// Distinct lines of the output (a JSON output's leaves).
    pub(crate) lines: usize,
    /// The tokens of `text` by the counter that made the gist.
    pub(crate) tokens: usize,
}

impl Gist {
    /// Adds the names the gist shows to `shown`.
    pub(crate) fn show_in(&self, shown: &mut Shown) {
        for name in self.text.lines().flat_map(names_in) {
            if !shown.contains(name) {
                shown.insert(name.to_owned());
            }
        }
    }
}

/// The tokens a gist may take: `least`, or more, up to `most`, as far as the names of its
/// output need (a name-dense output — a router, a lookup's ids — holds more of what a later
/// step writes than its size says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Room {
    pub(crate) least: usize,
    pub(crate) most: usize,
}

impl Room {
    /// Exactly `tokens`, whatever the names need.
    pub(crate) const fn fixed(tokens: usize) -> Self {
        Self {
            least: tokens,
            most: tokens,
        }
    }

    /// The tokens for an output whose names line would take `names` tokens whole.
    fn for_names(self, names: usize) -> usize {
        names.clamp(self.least, self.most.max(self.least))
    }
}

/// Names another text beside an output already shows: its gist need not name them again.
pub(crate) type Shown = HashSet<String, FxBuild>;

/// The gist of `text` (an output flagged an error when `is_error`, whose outcome line is
/// `outcome`: `evidence::outcome_in(text, is_error)`, which its placeholder has read already)
/// within `room` tokens of `counter`, naming none of the names `shown` beside it; `None` when
/// the room is under [`MIN_ROOM`] or nothing of it fits.
pub(crate) fn gist<'a>(
    text: &'a str,
    is_error: bool,
    outcome: Option<&'a str>,
    room: Room,
    shown: &Shown,
    counter: &dyn TokenCounter,
) -> Option<Gist> {
    if room.most.max(room.least) < MIN_ROOM {
        return None;
    }
    // The harness's reminders appended to an output are not what the tool wrote; an output
    // without any is read as it is, outcome and all.
    let text = classify::without_tags(text);
    let outcome = match &text {
        Cow::Borrowed(_) => outcome,
        Cow::Owned(untagged) => evidence::outcome_in(untagged, is_error),
    };
    let lines = read_lines(&text);
    within(&lines, outcome, room, shown, counter)
}

/// A JSON output read as its leaves ([`json_leaves`]), for its gist.
pub(crate) struct JsonLeaves(Vec<Line<'static>>);

/// The leaves of `output` when it is a JSON object or array of at least `least` scalar values
/// (a listing, not a wrapper around one text); `None` otherwise.
pub(crate) fn json_leaves(output: &str, least: usize) -> Option<JsonLeaves> {
    fn count(value: &Value) -> usize {
        match value {
            Value::Object(map) => map.values().map(count).sum(),
            Value::Array(items) => items.iter().map(count).sum(),
            _ => 1,
        }
    }
    let value = json_of(output)?;
    (count(&value) >= least).then(|| JsonLeaves(distinct(leaves(&value))))
}

impl JsonLeaves {
    /// The gist of the output within `room` tokens of `counter` ([`gist`]).
    pub(crate) fn gist(&self, room: usize, counter: &dyn TokenCounter) -> Option<Gist> {
        if room < MIN_ROOM {
            return None;
        }
        within(&self.0, None, Room::fixed(room), &Shown::default(), counter)
    }
}

/// The gist of an output read as `lines` (its error or exit line `outcome`) within `room`.
fn within(
    lines: &[Line<'_>],
    outcome: Option<&str>,
    room: Room,
    shown: &Shown,
    counter: &dyn TokenCounter,
) -> Option<Gist> {
    let scored = score(lines, outcome, shown);
    // A full gist grows as far as its names line's own count.
    let room = if room.most > room.least {
        let names: Vec<&str> = scored
            .iter()
            .flat_map(|s| s.new_names.iter().copied())
            .collect();
        room.for_names(counter.count_text(&format!("{NAMES}{}", names.join(" "))))
    } else {
        room.least
    };
    if room < MIN_ROOM {
        return None;
    }
    // The estimate runs high (about three bytes a token), so the first selection usually fits
    // and is counted once; one over its room is selected again, smaller.
    let mut estimate = room;
    for _ in 0..TRIES {
        let gist = select(lines, &scored, estimate);
        if gist.text.is_empty() {
            return None;
        }
        let tokens = counter.count_text(&gist.text);
        if tokens <= room {
            return Some(Gist { tokens, ..gist });
        }
        let next = estimate * room / tokens;
        estimate = next.saturating_sub(next / 16 + 1);
        if estimate < MIN_ROOM {
            return None;
        }
    }
    None
}

/// The distinct names of `lines` (a run of an output's lines, read as text), in order.
fn distinct_names(lines: &str) -> Vec<&str> {
    first_of_each(plain_lines(lines).flat_map(names_in))
}

/// The first of each name among `names`, in order.
fn first_of_each<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen: HashSet<&str, FxBuild> = HashSet::with_hasher(FxBuild::default());
    names.filter(|name| seen.insert(name)).collect()
}

/// Estimated tokens of the names line of `lines` ([`names_line`]) holding every name.
pub(crate) fn names_cost(lines: &str) -> usize {
    cost_of(&distinct_names(lines))
}

/// Estimated tokens of a names line holding every one of `names`.
fn cost_of(names: &[&str]) -> usize {
    NAMES_LINE + names.iter().map(|name| name_cost(name)).sum::<usize>()
}

/// The line naming the distinct names of `lines` in order, `names: a b`, as many as fit
/// `room` tokens of `counter`, with its tokens; `None` when there are none or none fits.
pub(crate) fn names_line(
    lines: &str,
    room: usize,
    counter: &dyn TokenCounter,
) -> Option<(String, usize)> {
    line_of(&distinct_names(lines), room, counter)
}

/// The line naming the first of `names` that fit `room` tokens of `counter`, with its tokens.
fn line_of(names: &[&str], room: usize, counter: &dyn TokenCounter) -> Option<(String, usize)> {
    let mut take = 0;
    let mut used = NAMES_LINE;
    for name in names {
        used += name_cost(name);
        if used > room {
            break;
        }
        take += 1;
    }
    for _ in 0..TRIES {
        if take == 0 {
            return None;
        }
        let line = format!("{NAMES}{}", names[..take].join(" "));
        let tokens = counter.count_text(&line);
        if tokens <= room {
            return Some((line, tokens));
        }
        // Fewer names by the share the line is over, and one more.
        take = (take * room / tokens).min(take - 1);
    }
    None
}

/// The names of each line of a text, read once, so that the names line of any run of its
/// lines ([`names_line`]) is made without reading their words again: a capped output's middle
/// is named at each cap tried. Its lines are the text's pieces as `split_inclusive('\n')`
/// cuts them; its names are kept as byte ranges of the text.
#[derive(Debug)]
pub(crate) struct LineNames {
    /// Each line's names in order, line after line.
    names: Vec<Range<usize>>,
    /// Per line: whether it is read (not blank), and where its names end in `names`.
    lines: Vec<(bool, usize)>,
}

impl LineNames {
    /// The names of each line of `text`.
    pub(crate) fn of(text: &str) -> Self {
        let mut names = Vec::new();
        let lines = text
            .split_inclusive('\n')
            .map(|piece| {
                // A piece holds one line: `plain_lines` gives it, or nothing when it is blank.
                let line = plain_lines(piece).next();
                let at = |name: &str| name.as_ptr() as usize - text.as_ptr() as usize;
                names.extend(
                    line.into_iter()
                        .flat_map(names_in)
                        .map(|name| at(name)..at(name) + name.len()),
                );
                (line.is_some(), names.len())
            })
            .collect();
        Self { names, lines }
    }

    /// [`distinct_names`] of the lines `lines` of `text` joined: as there, of the first
    /// [`MAX_LINES`] read lines only.
    fn distinct<'t>(&self, text: &'t str, lines: Range<usize>) -> Vec<&'t str> {
        let start = lines
            .start
            .checked_sub(1)
            .map_or(0, |line| self.lines[line].1);
        let mut end = start;
        let mut read = 0;
        for &(is_read, names_end) in &self.lines[lines] {
            read += usize::from(is_read);
            if read > MAX_LINES {
                break;
            }
            end = names_end;
        }
        first_of_each(
            self.names[start..end]
                .iter()
                .map(|name| &text[name.clone()]),
        )
    }

    /// [`names_line`] of the lines `lines` of `text` joined.
    pub(crate) fn names_line(
        &self,
        text: &str,
        lines: Range<usize>,
        room: usize,
        counter: &dyn TokenCounter,
    ) -> Option<(String, usize)> {
        line_of(&self.distinct(text, lines), room, counter)
    }

    /// [`names_cost`] of all of `text`.
    pub(crate) fn cost(&self, text: &str) -> usize {
        cost_of(&self.distinct(text, 0..self.lines.len()))
    }
}

/// One distinct line of an output: its text, how often it occurs, where its names start (after
/// a JSON leaf's path, which names a key rather than a thing), and whether it gives a long
/// array's length (the shape of the data).
struct Line<'a> {
    text: Cow<'a, str>,
    times: usize,
    names_at: usize,
    shape: bool,
}

impl<'a> Line<'a> {
    fn new(text: impl Into<Cow<'a, str>>, names_at: usize, shape: bool) -> Self {
        Self {
            text: text.into(),
            times: 1,
            names_at,
            shape,
        }
    }

    /// The part of the line whose words may be names.
    fn named(&self) -> &str {
        &self.text[self.names_at..]
    }
}

/// The distinct non-blank lines of `output` in order of first occurrence, with their counts;
/// a JSON output's `path: value` leaves.
fn read_lines(output: &str) -> Vec<Line<'_>> {
    distinct(match json_of(output) {
        Some(value) => leaves(&value),
        None => plain_lines(output)
            .map(|l| Line::new(l, 0, false))
            .collect(),
    })
}

/// The `path: value` lines of a JSON value ([`flatten`]).
fn leaves(value: &Value) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    flatten(value, &mut String::new(), &mut out);
    out
}

/// `read` with each repeated line kept once, where it first occurs, with its count.
fn distinct(read: Vec<Line<'_>>) -> Vec<Line<'_>> {
    let mut lines: Vec<Line<'_>> = Vec::with_capacity(read.len());
    let mut seen = HashMap::with_hasher(FxBuild::default());
    for line in read {
        if let Some(&at) = seen.get(&line.text) {
            let first: &mut Line<'_> = &mut lines[at];
            first.times += 1;
            continue;
        }
        seen.insert(line.text.clone(), lines.len());
        lines.push(line);
    }
    lines
}

/// The JSON value an output is, when it is one.
fn json_of(output: &str) -> Option<Value> {
    let trimmed = output.trim_start();
    trimmed
        .starts_with(['{', '['])
        .then(|| serde_json::from_str::<Value>(trimmed).ok())
        .flatten()
}

/// Calls `f` with each name of `output` ([`names_in`]), repeats included: in a JSON output,
/// those of its values only (its keys are the schema's words, not things).
pub(crate) fn for_each_name(output: &str, mut f: impl FnMut(&str)) {
    match json_of(output) {
        Some(value) => {
            for line in &leaves(&value) {
                names_in(line.named()).for_each(&mut f);
            }
        }
        None => plain_lines(output).flat_map(names_in).for_each(f),
    }
}

/// The non-blank lines of a text output, their trailing blanks trimmed (a line is clipped only
/// where it is written, so that the names past the clip still count).
fn plain_lines(output: &str) -> impl Iterator<Item = &str> {
    output
        .lines()
        .map(str::trim_end)
        .filter(|l| !is_blank(l))
        .take(MAX_LINES)
}

/// Whether a line holds nothing but blanks, or only the number a file reader puts before each
/// line (`     6→`, `6:`): a blank line of the file.
fn is_blank(line: &str) -> bool {
    let rest = line
        .trim_start()
        .trim_start_matches(|c: char| c.is_ascii_digit());
    rest.len() < line.trim_start().len() && matches!(rest.trim(), "→" | ":" | "|")
        || line.trim().is_empty()
}

/// Appends a `path: value` line for each scalar leaf of `value` under `path`, and a
/// `path: N items` line for each long array.
fn flatten(value: &Value, path: &mut String, out: &mut Vec<Line<'static>>) {
    if out.len() >= MAX_LINES {
        return;
    }
    let at = path.len();
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                flatten(item, path, out);
                path.truncate(at);
            }
        }
        Value::Array(items) => {
            if items.len() > LONG_ARRAY {
                let head = format!("{}: ", label(path));
                let text = format!("{head}{} items", items.len());
                out.push(Line::new(text, head.len(), true));
            }
            for (i, item) in items.iter().enumerate() {
                let _ = write!(path, "[{i}]");
                flatten(item, path, out);
                path.truncate(at);
            }
        }
        Value::String(text) => {
            let head = format!("{}: ", label(path));
            for (n, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
                let line = clip(line.trim(), VALUE_CHARS);
                out.push(if n == 0 {
                    Line::new(format!("{head}{line}"), head.len(), false)
                } else {
                    Line::new(line, 0, false)
                });
            }
        }
        scalar => {
            let head = format!("{}: ", label(path));
            out.push(Line::new(format!("{head}{scalar}"), head.len(), false));
        }
    }
}

/// The path of a leaf, `value` at the root.
fn label(path: &str) -> &str {
    if path.is_empty() { "value" } else { path }
}

/// The part of a line a gist shows.
fn shown(text: &str) -> &str {
    if text.len() <= LINE_CHARS {
        return text;
    }
    text.char_indices()
        .nth(LINE_CHARS)
        .map_or(text, |(at, _)| &text[..at])
}

/// `text` clipped to `max` characters, with `…` when it was longer.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// What selecting a line weighs: the names it adds and its estimated tokens.
struct Scored<'a> {
    /// The names the line holds that no earlier line did, in order.
    new_names: Vec<&'a str>,
    /// Its worth: new names, plus more for a long array's length and the first and last lines.
    worth: usize,
    /// Whether it is the output's error or exit line.
    outcome: bool,
    tokens: usize,
}

/// Each line's new names (none of those `shown` beside the output) and worth, in order.
fn score<'a>(lines: &'a [Line<'_>], outcome: Option<&str>, shown: &Shown) -> Vec<Scored<'a>> {
    let mut seen: HashSet<&str, FxBuild> = HashSet::with_hasher(FxBuild::default());
    let last = lines.len().saturating_sub(1);
    let mut outcome_seen = false;
    lines
        .iter()
        .enumerate()
        .map(|(index, line)| {
            let mut new_names = Vec::new();
            for name in names_in(line.named()) {
                if seen.insert(name) && !shown.contains(name) {
                    new_names.push(name);
                }
            }
            let mut worth = new_names.len() * 2 + if line.shape { 2 } else { 0 };
            let is_outcome = !outcome_seen && outcome.is_some_and(|o| line.text.trim() == o.trim());
            outcome_seen |= is_outcome;
            if index == 0 || index == last {
                worth += 1;
            }
            Scored {
                new_names,
                worth,
                outcome: is_outcome,
                tokens: estimate(line.text.len().min(LINE_CHARS), line.times) + 1,
            }
        })
        .collect()
}

/// Tokens a text is estimated at before it is counted: about three characters a token (code
/// and ids run denser than prose), plus the repeat count.
fn estimate(bytes: usize, times: usize) -> usize {
    bytes / 3 + 1 + if times > 1 { 3 } else { 0 }
}

/// The gist within about `room` estimated tokens. The output's names come first, in order,
/// as many as fit (a name costs less than the line around it); then lines, by worth per token,
/// each kept line taking its names off the names line and giving their room back; then, while
/// room is left, the other lines in order. The error or exit line goes before all of them.
fn select(lines: &[Line<'_>], scored: &[Scored<'_>], room: usize) -> Gist {
    let mut order: Vec<usize> = (0..lines.len()).filter(|&i| scored[i].worth > 0).collect();
    // By worth per token, the earlier line first among equals.
    order.sort_by(|&a, &b| {
        let (x, y) = (&scored[a], &scored[b]);
        (y.worth * x.tokens)
            .cmp(&(x.worth * y.tokens))
            .then(a.cmp(&b))
    });
    let mut kept = vec![false; lines.len()];
    let mut used = NAMES_LINE;
    // The error or exit line first.
    if let Some(i) = scored.iter().position(|s| s.outcome) {
        if scored[i].tokens + 1 + used <= room {
            kept[i] = true;
            used += scored[i].tokens + 1;
        }
    }
    // The names, each with its line and cost, in order of first appearance.
    let mut names: Vec<(usize, &str, usize)> = Vec::new();
    'names: for (i, s) in scored.iter().enumerate() {
        let visible = if kept[i] { shown(&lines[i].text) } else { "" };
        for name in s.new_names.iter().filter(|n| !visible.contains(**n)) {
            let cost = name_cost(name);
            if used + cost > room {
                break 'names;
            }
            names.push((i, name, cost));
            used += cost;
        }
    }
    let mut listed = vec![false; lines.len()];
    for &(i, _, _) in &names {
        listed[i] = true;
    }
    for &i in &order {
        let s = &scored[i];
        if kept[i] {
            continue;
        }
        // A line gives back the room of its names that it shows.
        let visible = shown(&lines[i].text);
        let freed: usize = if listed[i] {
            names
                .iter()
                .filter(|(at, name, _)| *at == i && visible.contains(*name))
                .map(|(_, _, cost)| cost)
                .sum()
        } else {
            0
        };
        if used + s.tokens + 1 > room + freed {
            continue;
        }
        kept[i] = true;
        used = used + s.tokens + 1 - freed;
        if freed > 0 {
            names.retain(|(at, name, _)| *at != i || !visible.contains(*name));
        }
    }
    // Room still left takes the other lines, in order: context around what was kept.
    for (i, s) in scored.iter().enumerate() {
        if !kept[i] && used + s.tokens < room {
            kept[i] = true;
            used += s.tokens + 1;
        }
    }
    let names: Vec<&str> = names.into_iter().map(|(_, name, _)| name).collect();
    render(lines, &kept, &names)
}

/// Estimated tokens of a name on the names line with the blank before it: a token per six
/// characters and one more (a name of 8 to 11 characters takes about 2.3 on the corpus's
/// gists). The gist's exact count checks it.
fn name_cost(name: &str) -> usize {
    name.len() / 6 + 1
}

/// The kept lines in order, `…` where lines were left out between them, then the names line
/// (its tokens not counted yet: 0).
fn render(lines: &[Line<'_>], kept: &[bool], names: &[&str]) -> Gist {
    let mut text = String::new();
    let mut lines_kept = 0;
    let mut gap = false;
    for (line, &keep) in lines.iter().zip(kept) {
        if !keep {
            gap = lines_kept > 0;
            continue;
        }
        if gap {
            text.push_str("…\n");
            gap = false;
        }
        text.push_str(&clip(&line.text, LINE_CHARS));
        if line.times > 1 {
            let _ = write!(text, " (×{})", line.times);
        }
        text.push('\n');
        lines_kept += 1;
    }
    if lines_kept > 0 && kept.last() == Some(&false) {
        text.push_str("…\n");
    }
    if !names.is_empty() {
        text.push_str(NAMES);
        text.push_str(&names.join(" "));
        text.push('\n');
    }
    if text.ends_with('\n') {
        text.pop();
    }
    Gist {
        text,
        lines_kept,
        lines: lines.len(),
        tokens: 0,
    }
}

/// The names in a line of output: the words a later step may write again — paths,
/// identifiers ([`identifiers::is_identifier`]), code names — each a slice of `line`. A JSON
/// key (`"flight_number":`, in a JSON text cut in the middle or one a log line carries) is the
/// schema's word, not a thing, and is left out.
pub(crate) fn names_in(line: &str) -> impl Iterator<Item = &str> {
    let bytes = line.as_bytes();
    bytes
        .split(|&b| is_break(b))
        .filter(|word| word.len() >= 3)
        .filter(move |word| {
            // The word's end, as an offset into the line.
            let end = word.as_ptr() as usize - bytes.as_ptr() as usize + word.len();
            !bytes[end..].starts_with(b"\":")
        })
        // Words hold ASCII bytes only (every other byte is a break), so each is a `str`.
        .filter_map(|word| std::str::from_utf8(word).ok())
        .map(|word| word.trim_matches(is_edge))
        .filter(|word| is_name(word))
}

/// Bytes between words: blanks and control bytes, quotes, brackets, separators, and every byte
/// of a character outside ASCII (names are ASCII; `→` after a line number is a break).
fn is_break(b: u8) -> bool {
    b <= b' ' || b >= 0x80 || b"\"'`()[]{}<>,;|=".contains(&b)
}

/// Punctuation trimmed from both ends of a word.
fn is_edge(c: char) -> bool {
    matches!(
        c,
        '.' | ',' | ':' | ';' | '!' | '?' | '*' | '&' | '+' | '~' | '-' | '#'
    )
}

/// Whether a word names a thing: a path, an identifier, a code name, a date or a time, of 3 to
/// 160 characters.
fn is_name(word: &str) -> bool {
    (3..=160).contains(&word.len())
        && has_mark(word)
        // The cheapest test first: most names in code are code names.
        && (is_code_name(word)
            || evidence::path_word(word).is_some()
            || identifiers::is_identifier(word)
            || is_date_or_time(word))
}

/// A date (`2024-05-24`) or a time of day (`17:00`, `06:30:00`): digits in groups joined by
/// `-` or `:`, what a schedule, a booking or a log line is about.
fn is_date_or_time(word: &str) -> bool {
    let groups = |sep: char| -> Option<Vec<usize>> {
        let lens: Vec<usize> = word.split(sep).map(str::len).collect();
        word.split(sep)
            .all(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()))
            .then_some(lens)
    };
    match (groups('-'), groups(':')) {
        (Some(date), _) => date == [4, 2, 2],
        (_, Some(time)) => matches!(time.as_slice(), [1 | 2, 2] | [1 | 2, 2, 2]),
        _ => false,
    }
}

/// Whether a word has what every name has one of: a digit, one of `_ . / : @ # \\ $`, or a
/// capital after its first character. Most words of an output have none, and are passed over
/// at the cost of one look at their bytes.
fn has_mark(word: &str) -> bool {
    word.bytes().enumerate().any(|(at, b)| {
        b.is_ascii_digit() || b"_./:@#\\$".contains(&b) || (at > 0 && b.is_ascii_uppercase())
    })
}

/// A name in code or data: letters with `_`, `::`, an inner capital (`HttpServer`), digits
/// (`HAT138`, `utf8_decode`), or dotted segments (`MyApp.Accounts`, `socket.assigns`); never a
/// plain word.
fn is_code_name(word: &str) -> bool {
    if !word
        .chars()
        .all(|c| c.is_alphanumeric() || "_.:$-".contains(c))
        || !word.chars().any(char::is_alphabetic)
    {
        return false;
    }
    let has_digit = word.chars().any(|c| c.is_ascii_digit());
    let inner_capital = word
        .as_bytes()
        .windows(2)
        .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    let dotted = word.contains('.')
        && word
            .split('.')
            .all(|s| s.chars().next().is_some_and(char::is_alphabetic))
        // A field or module path (`socket.assigns`, `MyApp.Accounts`), not an abbreviation
        // (`e.g`, `i.e`).
        && word.split('.').any(|s| s.len() > 1);
    word.contains('_') || word.contains("::") || inner_capital || has_digit || dotted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Tokenizer;

    /// The gist of `output` (not an error) within `room`, with nothing shown beside it.
    fn gist_of(output: &str, room: Room) -> Option<Gist> {
        let outcome = evidence::outcome_in(output, false);
        gist(output, false, outcome, room, &Shown::default(), counter())
    }

    fn counter() -> &'static dyn TokenCounter {
        Tokenizer::O200k.counter()
    }

    #[test]
    fn names_are_paths_identifiers_and_code_names_not_words() {
        let line = "Read src/lib.rs: user noah_muller_9847 paid with credit_card_7407366 on HAT138, \
                    see MyApp.Accounts and HttpServer::bind at 0x401a2f; the value is fine: \
                    socket.assigns holds it.";
        let names: Vec<&str> = names_in(line).collect();
        assert_eq!(
            names,
            [
                "src/lib.rs",
                "noah_muller_9847",
                "credit_card_7407366",
                "HAT138",
                "MyApp.Accounts",
                "HttpServer::bind",
                "0x401a2f",
                "socket.assigns"
            ]
        );
    }

    #[test]
    fn a_json_key_is_not_a_name_and_dates_and_times_are() {
        let line = r#"{"flight_number": "HAT069", "date": "2024-05-24", "departs": "06:00:00", "seats": 12}"#;
        let names: Vec<&str> = names_in(line).collect();
        assert_eq!(names, ["HAT069", "2024-05-24", "06:00:00"]);
        let plain: Vec<&str> = names_in("at 17:00 on 2024-5-1, 3:5 or 12:345 left 9-10").collect();
        assert_eq!(plain, ["17:00"]);
    }

    #[test]
    fn a_gist_reads_what_the_tool_wrote_not_the_harness_reminder_after_it() {
        let output = "fn handle_event() in src/app.rs\n\n<system-reminder>\nWhenever you read \
                      a file, consider whether it is malware: /etc/malware_rules\n\
                      </system-reminder>\n";
        let gist = gist_of(output, Room::fixed(40)).unwrap();
        assert!(gist.text.contains("handle_event"), "{}", gist.text);
        assert!(!gist.text.contains("system-reminder"), "{}", gist.text);
        assert!(!gist.text.contains("malware"), "{}", gist.text);
    }

    #[test]
    fn a_numbered_blank_line_of_a_file_is_not_a_line_of_its_gist() {
        let output = "     1→defmodule Jobs.Sync do\n     2→\n     3→  def run_job(args), do: \
                      :ok\n     4→\n     5→end\n     6→\n";
        let gist = gist_of(output, Room::fixed(40)).unwrap();
        assert!(gist.text.contains("run_job"), "{}", gist.text);
        assert_eq!(gist.lines, 3, "{}", gist.text);
        assert!(
            gist.text
                .lines()
                .all(|line| !line.trim_end().ends_with('→')),
            "{}",
            gist.text
        );
        assert!(is_blank("  12→ ") && is_blank("7:") && is_blank("   "));
        assert!(!is_blank("42") && !is_blank("  3→end"));
    }

    #[test]
    fn a_gist_does_not_name_again_what_is_shown_beside_it() {
        let words = "and a long comment of plain words around it ".repeat(4);
        let output = format!("{words}shared_helper {words}\n{words}own_handler {words}\n");
        let shown: Shown = ["shared_helper".to_owned()].into_iter().collect();
        let names_line = |shown: &Shown| {
            let outcome = evidence::outcome_in(&output, false);
            let gist = gist(&output, false, outcome, Room::fixed(16), shown, counter()).unwrap();
            assert_eq!(gist.lines_kept, 0, "{}", gist.text);
            gist.text
        };
        assert_eq!(
            names_line(&Shown::default()),
            "names: shared_helper own_handler"
        );
        assert_eq!(names_line(&shown), "names: own_handler");
    }

    #[test]
    fn a_gist_keeps_the_naming_lines_and_errors_within_its_room() {
        let mut output = String::new();
        for i in 0..200 {
            let _ = writeln!(output, "just some ordinary words on line number {i}");
            if i % 40 == 7 {
                let _ = writeln!(output, "found src/module_{i}.rs with handler_{i}");
            }
        }
        output.push_str("error: build failed\n");
        let total = counter().count_text(&output);
        let gist = gist_of(&output, Room::fixed(90)).unwrap();
        assert!(counter().count_text(&gist.text) <= 90);
        assert!(counter().count_text(&gist.text) < total / 10);
        for i in [7, 47, 87, 127, 167] {
            assert!(
                gist.text.contains(&format!("src/module_{i}.rs")),
                "{}",
                gist.text
            );
        }
        assert!(gist.text.contains("error: build failed"));
        assert!(gist.lines_kept < gist.lines);
    }

    #[test]
    fn json_keeps_its_leaves_and_the_length_of_long_arrays() {
        let output = r#"{"user_id": "mia_li_3668", "payment_methods": {"credit_card_4421486": {"source": "credit_card", "id": "credit_card_4421486"}}, "reservations": ["NO6JO3", "AIXC49", "HKEG34", "8JX2WO", "SI1P7Q"]}"#;
        let gist = gist_of(output, Room::fixed(200)).unwrap();
        assert!(gist.text.contains("user_id: mia_li_3668"), "{}", gist.text);
        assert!(gist.text.contains("reservations: 5 items"), "{}", gist.text);
        for id in ["credit_card_4421486", "NO6JO3", "8JX2WO", "SI1P7Q"] {
            assert!(gist.text.contains(id), "{}", gist.text);
        }
    }

    #[test]
    fn repeated_lines_are_kept_once_with_their_count() {
        let output = "warning: unused_variable x1\n".repeat(30) + "done in build_42\n";
        let gist = gist_of(&output, Room::fixed(100)).unwrap();
        assert!(
            gist.text.contains("warning: unused_variable x1 (×30)"),
            "{}",
            gist.text
        );
        assert_eq!(gist.lines, 2);
    }

    #[test]
    fn a_name_dense_output_takes_more_room_for_its_names_and_a_plain_one_does_not() {
        let mut routes = String::new();
        for i in 0..40 {
            let _ = writeln!(routes, "    get \"/route_{i}\", Handler{i}Live, :index");
        }
        let room = Room {
            least: 60,
            most: 600,
        };
        let gist_of_routes = gist_of(&routes, room).unwrap();
        // The room is the names line's own count; the names are fitted to it by estimate.
        let named = (0..40)
            .filter(|i| gist_of_routes.text.contains(&format!("/route_{i} ")))
            .count();
        assert!(named >= 36, "{named}: {}", gist_of_routes.text);
        assert!(counter().count_text(&gist_of_routes.text) > 2 * room.least);
        let prose = "the build ran and every check passed without a single warning\n".repeat(3)
            + "see src/main.rs\n";
        let gist_of_prose = gist_of(&prose, room).unwrap();
        assert!(counter().count_text(&gist_of_prose.text) <= room.least);
    }

    #[test]
    fn names_that_do_not_fit_as_lines_go_on_the_names_line() {
        let mut output = String::new();
        for i in 0..50 {
            let _ = writeln!(
                output,
                "a long line of prose that only mentions one thing, item_{i}, among many words"
            );
        }
        let gist = gist_of(&output, Room::fixed(120)).unwrap();
        assert!(gist.text.contains("names: "), "{}", gist.text);
        let kept = (0..50)
            .filter(|i| {
                gist.text.contains(&format!("item_{i} "))
                    || gist.text.contains(&format!("item_{i}\n"))
                    || gist.text.ends_with(&format!("item_{i}"))
            })
            .count();
        assert!(kept > 20, "{kept}: {}", gist.text);
    }

    proptest::proptest! {
        /// The names line of a run of lines named once ([`LineNames`]) is the names line of
        /// the run's text: at any run and room, of lines with names repeated, blank lines,
        /// numbered blank lines, line breaks of two bytes and a last line without its break.
        #[test]
        fn lines_named_once_name_each_run_as_its_text(
            lines in proptest::collection::vec(
                "(src/[a-c]\\.rs|fn [a-c]_[0-9]\\(\\)|2024-05-0[1-3]|plain words| |  [0-9]→|\r)*\n?",
                0..16,
            ),
            start in 0_usize..16,
            length in 0_usize..16,
            room in 0_usize..40,
        ) {
            let text = lines.concat();
            let named = LineNames::of(&text);
            let pieces: Vec<&str> = text.split_inclusive('\n').collect();
            let start = start.min(pieces.len());
            let run = start..(start + length).min(pieces.len());
            proptest::prop_assert_eq!(
                named.names_line(&text, run.clone(), room, counter()),
                names_line(&pieces[run].concat(), room, counter())
            );
            proptest::prop_assert_eq!(named.cost(&text), names_cost(&text));
        }

        /// A gist given its output's outcome line is the gist of the output without the
        /// harness's tags, read with that text's own outcome line: the same line when the output
        /// has no tags, another when a tag holds an exit status or an error.
        #[test]
        fn a_gist_reads_the_outcome_of_the_text_without_tags(
            lines in proptest::collection::vec(
                "(src/[a-z]{1,8}\\.rs|exit code [0-9]|error: [a-z]{1,9}|plain words|<system-reminder>|</system-reminder>|\n)",
                0..30,
            ),
            is_error: bool,
            least in 8_usize..100,
        ) {
            let output = lines.concat();
            let room = Room::fixed(least);
            let untagged = classify::without_tags(&output);
            let expected = within(
                &read_lines(&untagged),
                evidence::outcome_in(&untagged, is_error),
                room,
                &Shown::default(),
                counter(),
            );
            let outcome = evidence::outcome_in(&output, is_error);
            proptest::prop_assert_eq!(
                gist(&output, is_error, outcome, room, &Shown::default(), counter()),
                expected
            );
        }

        /// Over outputs of code, paths, ids, JSON and repeats: a gist fits its most room, is the
        /// same each time, and holds only the output's own lines (clipped, with a repeat's
        /// count), `…` gaps and a names line of its words.
        #[test]
        fn a_gist_fits_its_room_is_deterministic_and_holds_only_the_outputs_words(
            lines in proptest::collection::vec(
                "(src/[a-z]{1,8}\\.rs|handle_[a-z]{1,6}|HAT[0-9]{3}|0x[0-9a-f]{6}|error: [a-z ]{1,20}|\\{\"id\": \"[a-z]{2}_[0-9]{4}\"\\}|plain words|  |é→ü){1,6}",
                0..60,
            ),
            least in 0_usize..300,
            more in 0_usize..300,
        ) {
            let output = lines.join("\n");
            let room = Room { least, most: least + more };
            let first = gist_of(&output, room);
            proptest::prop_assert_eq!(&first, &gist_of(&output, room));
            let Some(first) = first else {
                return Ok(());
            };
            proptest::prop_assert!(counter().count_text(&first.text) <= room.most);
            proptest::prop_assert!(first.lines_kept <= first.lines);
            for line in first.text.lines() {
                let line = line.strip_suffix('…').unwrap_or(line);
                let line = match line.rfind(" (×") {
                    Some(at) if line.ends_with(')') => &line[..at],
                    _ => line,
                };
                let own = line.is_empty()
                    || output.contains(line)
                    || line.strip_prefix("names: ").is_some_and(|names| {
                        names.split(' ').all(|name| output.contains(name))
                    })
                    // A JSON output's leaves: `path: value`, the value its own.
                    || line.split_once(": ").is_some_and(|(_, value)| output.contains(value));
                proptest::prop_assert!(own, "{line:?} is not the output's: {output:?}");
            }
        }
    }

    #[test]
    fn a_names_line_holds_the_names_in_order_within_its_room() {
        let lines = "use src/a.rs\nfn handle_event() at 0x401a2f\nplain words\nuse src/a.rs\n";
        let (line, _) = names_line(lines, 40, counter()).unwrap();
        assert_eq!(line, "names: src/a.rs handle_event 0x401a2f");
        assert!(counter().count_text(&line) <= 40);
        // An estimate: within half and twice the line's count.
        let (estimate, count) = (names_cost(lines), counter().count_text(&line));
        assert!(
            estimate * 2 >= count && count * 2 >= estimate,
            "{estimate} {count}"
        );
        let (short, _) = names_line(lines, 8, counter()).unwrap();
        assert!(counter().count_text(&short) <= 8, "{short}");
        assert_eq!(names_line("plain words only", 40, counter()), None);
    }

    #[test]
    fn lines_named_once_read_names_of_the_first_lines_only_as_text_does() {
        // Blank lines between do not count towards the lines read.
        let mut text = "\n".repeat(5);
        for line in 0..MAX_LINES + 3 {
            let _ = writeln!(text, "src/m{line}.rs");
        }
        let named = LineNames::of(&text);
        let lines = text.split_inclusive('\n').count();
        for start in [0, 3, 5, 6] {
            let (line, _) = named
                .names_line(&text, start..lines, usize::MAX, counter())
                .unwrap();
            let pieces: Vec<&str> = text.split_inclusive('\n').collect();
            let whole = names_line(&pieces[start..].concat(), usize::MAX, counter());
            assert_eq!(Some(line.clone()), whole.map(|(line, _)| line));
            assert!(line.ends_with(&format!(" src/m{}.rs", start.max(5) - 5 + MAX_LINES - 1)));
        }
        assert_eq!(named.cost(&text), names_cost(&text));
    }

    #[test]
    fn no_gist_below_its_least_room_and_the_same_bytes_each_time() {
        let output = "src/a.rs\nsrc/b.rs\n";
        assert_eq!(gist_of(output, Room::fixed(MIN_ROOM - 1)), None);
        assert_eq!(
            gist_of(output, Room::fixed(40)),
            gist_of(output, Room::fixed(40))
        );
    }
}
