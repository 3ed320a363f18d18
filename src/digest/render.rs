//! The digest rendered within its cap: its sections in priority order, each item made into
//! text only when counted or written, and trimmed from the bottom up.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::{
    Command, Digest, DigestCap, IDENTIFIERS, IDENTIFIERS_PCT, IDENTIFIERS_TITLE, REQUEST_CHARS,
    REQUEST_HEAD, REQUEST_SHORT, STANDING, STANDING_TITLE, percent,
};
use crate::evidence::Touch;
use crate::note::{clip_cow, thousands};
use crate::tokens::TokenCounter;

/// Which requests take the longer of two forms: the shortest first (the cheapest to lengthen),
/// the newest first among requests of one length — those up to `chars` characters, less
/// those of exactly `chars` before index `from`.
#[derive(Debug, Clone, Copy)]
struct Upgrade {
    chars: usize,
    from: usize,
}

impl Upgrade {
    /// No request.
    const NONE: Self = Self {
        chars: 0,
        from: usize::MAX,
    };

    /// Whether request `text`, at index `i`, takes the longer form.
    fn covers(self, text: &str, i: usize) -> bool {
        if self.chars == 0 {
            return false;
        }
        let chars = text.chars().count();
        chars < self.chars || (chars == self.chars && i >= self.from)
    }
}

/// The items of one section, made into text only when counted or rendered.
#[derive(Debug, Clone, Copy)]
enum Items<'d> {
    /// Removed requests: verbatim (a long one by its head and tail) when `short` is `None`,
    /// else each by its first `short` characters; those [`Upgrade::covers`] take the `longer`
    /// form; when `recent`, the last ones are those shown.
    Requests {
        texts: &'d [Cow<'d, str>],
        short: Option<usize>,
        longer: Option<usize>,
        upgrade: Upgrade,
        recent: bool,
    },
    /// Files, with how many times each was touched.
    Files(&'d [(Cow<'d, str>, usize)]),
    Commands(&'d [Command<'d>]),
    /// Lines written as they are.
    Lines(&'d [Cow<'d, str>]),
}

impl<'d> Items<'d> {
    fn len(&self) -> usize {
        match self {
            Self::Requests { texts, .. } | Self::Lines(texts) => texts.len(),
            Self::Files(files) => files.len(),
            Self::Commands(commands) => commands.len(),
        }
    }

    fn get(&self, i: usize) -> Cow<'d, str> {
        match *self {
            Self::Requests {
                texts,
                short,
                longer,
                upgrade,
                ..
            } => match if upgrade.covers(&texts[i], i) {
                longer
            } else {
                short
            } {
                None => clip_request(&texts[i]),
                Some(chars) => clip_cow(Cow::Borrowed(&texts[i]), chars),
            },
            Self::Files(files) => match &files[i] {
                (path, 1) => Cow::Borrowed(path),
                (path, n) => Cow::Owned(format!("{path} ×{n}")),
            },
            Self::Commands(commands) => commands[i].line(),
            Self::Lines(lines) => Cow::Borrowed(&lines[i]),
        }
    }
}

/// One section of a rendered digest.
struct Section<'d> {
    title: &'static str,
    /// Items, oldest first.
    items: Items<'d>,
    /// Items an earlier marker had already cut.
    more: usize,
    /// Items written on the heading line, comma-separated (files), rather than one per line.
    inline: bool,
    /// Prefix of each item on its own line.
    bullet: &'static str,
}

impl Section<'_> {
    fn total(&self) -> usize {
        self.items.len() + self.more
    }

    /// The indices of the items shown when `kept` are: the first ones, or the last ones for
    /// requests named most recent first.
    fn shown(&self, kept: usize) -> std::ops::Range<usize> {
        match self.items {
            Items::Requests { recent: true, .. } => self.items.len() - kept..self.items.len(),
            _ => 0..kept,
        }
    }
}

/// The title of the last section, written as `Last state: …` with no count.
const LAST_STATE: &str = "Last state";

/// Where the removed requests' section is among the rendered sections: after the standing
/// instructions, which come first.
const REQUESTS_AT: usize = 1;
/// Where the identifiers' section is: after the files, before the commands (a line of
/// identifiers names more of the span's things than a command line does).
const IDENTIFIERS_AT: usize = REQUESTS_AT + 5;

/// The digest's sections in priority order.
fn sections<'d>(digest: &'d Digest<'_>) -> Vec<Section<'d>> {
    let mut sections = vec![Section {
        title: STANDING_TITLE,
        items: Items::Lines(&digest.standing),
        more: digest.more[STANDING],
        inline: false,
        bullet: "» ",
    }];
    sections.push(Section {
        title: "Requests",
        items: Items::Requests {
            texts: &digest.requests,
            short: None,
            longer: None,
            upgrade: Upgrade::NONE,
            recent: false,
        },
        more: digest.more[0],
        inline: false,
        bullet: "» ",
    });
    for touch in Touch::ALL {
        sections.push(Section {
            title: touch.title(),
            items: Items::Files(&digest.files[touch as usize]),
            more: digest.more[touch as usize + 1],
            inline: true,
            bullet: "",
        });
    }
    sections.push(Section {
        title: IDENTIFIERS_TITLE,
        items: Items::Lines(&digest.identifiers),
        more: digest.more[IDENTIFIERS],
        inline: true,
        bullet: "",
    });
    sections.push(Section {
        title: "Commands",
        items: Items::Commands(&digest.commands),
        more: digest.more[5],
        inline: false,
        bullet: "$ ",
    });
    sections.push(Section {
        title: "Errors",
        items: Items::Lines(&digest.errors),
        more: digest.more[6],
        inline: false,
        bullet: "! ",
    });
    sections.push(Section {
        title: LAST_STATE,
        items: Items::Lines(digest.last_state.as_slice()),
        more: 0,
        inline: true,
        bullet: "",
    });
    sections
}

/// Renders sections, keeping the first `kept[i]` items of section `i`; a section with
/// `shown[i]` false is left out altogether.
fn render(sections: &[Section<'_>], kept: &[usize], shown: &[bool]) -> String {
    let mut out = String::new();
    for ((section, &kept), _) in sections.iter().zip(kept).zip(shown).filter(|(_, s)| **s) {
        let more = section.total() - kept;
        if section.title == LAST_STATE {
            if kept > 0 {
                out.push_str("Last state: ");
                out.push_str(&section.items.get(0));
                out.push('\n');
            }
            continue;
        }
        let _ = write!(out, "{} ({}):", section.title, thousands(section.total()));
        if section.inline {
            for (n, i) in section.shown(kept).enumerate() {
                out.push_str(if n == 0 { " " } else { ", " });
                out.push_str(&section.items.get(i));
            }
            if more > 0 {
                let _ = write!(out, "{}+{more} more", if kept == 0 { " " } else { ", " });
            }
            out.push('\n');
        } else {
            out.push('\n');
            let shown = section.shown(kept);
            // Items left out before those shown (the older requests) are counted first.
            let before = more > 0 && shown.start > 0;
            if before {
                let _ = writeln!(out, "+{more} more");
            }
            for i in shown {
                out.push_str(section.bullet);
                out.push_str(&section.items.get(i));
                out.push('\n');
            }
            if more > 0 && !before {
                let _ = writeln!(out, "+{more} more");
            }
        }
    }
    // The closing newline only: a request's own trailing spaces are part of its verbatim text.
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

/// One digest's rendering: the counter its items are counted with and the cap they fit in,
/// read by every step of [`Renderer::render_capped`].
#[derive(Clone, Copy)]
pub(super) struct Renderer<'c> {
    pub(super) counter: &'c dyn TokenCounter,
    pub(super) cap: DigestCap,
}

impl Renderer<'_> {
    /// Renders the digest within the cap, trimming from the bottom up: the digest is one
    /// sequence — each section's heading, then its items, sections in priority order — and the
    /// longest beginning of it that fits is kept. The requests come first, within `cap.total`:
    /// verbatim when they all fit so, else all shortened together, step by step
    /// ([`Self::fit_requests`]), the most recent named when not even the shortest form fits
    /// them all; the sections after them share `cap.rest` of what is left. The section cut in
    /// the middle says how many items it left out; the sections below it are named, with their
    /// counts, on one closing line (unless `closing` is false: a tight frame spends those
    /// tokens on the items). Items are counted one by one, and only until the cap is reached,
    /// so the cost does not grow with the span. Empty when not even the closing line fits. Also
    /// returns how many requests, and how many files, it left out.
    pub(super) fn render_capped(&self, digest: &Digest<'_>, closing: bool) -> (String, [usize; 2]) {
        let Self { counter, cap } = *self;
        let mut sections = sections(digest);
        let present: Vec<bool> = sections.iter().map(|s| s.total() > 0).collect();
        let mut shown = vec![false; sections.len()];
        let mut kept = vec![0; sections.len()];
        // The closing line's cost should every section from `s` on be left out.
        let closing_from: Vec<usize> = (0..=sections.len())
            .map(|s| {
                let which: Vec<bool> = present
                    .iter()
                    .enumerate()
                    .map(|(i, p)| *p && i >= s)
                    .collect();
                let line = closing_line(&sections, &which, closing);
                if line.is_empty() {
                    0
                } else {
                    counter.count_text(&line) + 1
                }
            })
            .collect();
        let mut used = 0;
        let mut requests_used = 0;
        for s in (0..sections.len()).filter(|&s| present[s]) {
            let limit = if s <= REQUESTS_AT {
                cap.total
            } else {
                cap.total.min(requests_used + cap.rest)
            };
            let room = limit.saturating_sub(closing_from[s + 1]);
            let section = &sections[s];
            let cost = self.heading_cost(section);
            if used + cost > room {
                break;
            }
            shown[s] = true;
            // Cut by their share alone, the identifiers do not end the digest.
            let item_room = if section.title == IDENTIFIERS_TITLE {
                let after = (&sections[s + 1..], &present[s + 1..]);
                self.identifiers_room(after, used + cost, room)
            } else {
                room
            };
            let (n, after) = if let Items::Requests { texts, .. } = section.items {
                // Named all by their first 200 characters (or shorter forms when those do not fit),
                // the requests leave the identifiers their share before they take longer forms.
                let share = percent(cap.rest, IDENTIFIERS_PCT).min(room / 2);
                let reserve = self.identifiers_cost(&sections[IDENTIFIERS_AT], share);
                let floor = used + cost + self.short_items(texts, REQUEST_SHORT[0]);
                let request_room = room.saturating_sub(reserve).max(floor).min(room);
                let (items, n, after) = self.fit_requests(texts, used + cost, request_room);
                sections[s].items = items;
                (n, after)
            } else {
                self.fill(section, used + cost, item_room)
            };
            kept[s] = n;
            used = after;
            if s <= REQUESTS_AT {
                requests_used = used;
            }
            if n < sections[s].items.len() && item_room == room {
                break;
            }
        }
        loop {
            let mut text = render(&sections, &kept, &shown);
            let omitted: Vec<bool> = present.iter().zip(&shown).map(|(p, s)| *p && !*s).collect();
            let line = closing_line(&sections, &omitted, closing);
            if !line.is_empty() {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&line);
            }
            let tokens = counter.count_text(&text);
            if tokens <= cap.total {
                let unnamed =
                    |s: usize| sections[s].items.len() - if shown[s] { kept[s] } else { 0 };
                let files = (REQUESTS_AT + 1..=REQUESTS_AT + 4).map(unnamed).sum();
                return (text, [unnamed(REQUESTS_AT) + unnamed(0), files]);
            }
            // The per-item counts fell short: give up the lowest kept items, about as many bytes as
            // the excess (4 bytes a token, the rough average), else the lowest section.
            let mut excess = (tokens - cap.total) * 4;
            while excess > 0 {
                if let Some(s) = kept.iter().rposition(|k| *k > 0) {
                    // The item given up: the last shown, or the oldest of the recent requests.
                    let shown = sections[s].shown(kept[s]);
                    let dropped =
                        if matches!(sections[s].items, Items::Requests { recent: true, .. }) {
                            shown.start
                        } else {
                            shown.end - 1
                        };
                    kept[s] -= 1;
                    excess = excess.saturating_sub(sections[s].items.get(dropped).len().max(1));
                } else if let Some(s) = shown.iter().rposition(|s| *s) {
                    shown[s] = false;
                    excess = 0;
                } else {
                    let files = digest.files.iter().map(Vec::len).sum();
                    return (String::new(), [digest.requests.len(), files]);
                }
            }
        }
    }

    /// Tokens of a section's heading line at most (with a `+N more` count), and its line break.
    fn heading_cost(&self, section: &Section<'_>) -> usize {
        let total = thousands(section.total());
        let heading = format!("{} ({total}): +{total} more\n", section.title);
        self.counter.count_text(&heading) + 1
    }

    /// Tokens every request takes by its first `short` characters, its bullet and line break
    /// included.
    fn short_items(&self, texts: &[Cow<'_, str>], short: usize) -> usize {
        texts
            .iter()
            .map(|t| self.counter.count_text(&clip_cow(Cow::Borrowed(t), short)) + 2)
            .sum()
    }

    /// Where the identifiers' items may go up to, from `from`: their share of `rest`, or all the
    /// sections `after` them leave of `room` when that is more, keeping the rest for those.
    fn identifiers_room(
        &self,
        (after, present): (&[Section<'_>], &[bool]),
        from: usize,
        room: usize,
    ) -> usize {
        let later: usize = after
            .iter()
            .zip(present)
            .filter(|(_, p)| **p)
            .map(|(section, _)| self.full_cost(section))
            .sum();
        let share =
            (from + percent(self.cap.rest, IDENTIFIERS_PCT)).max(room.saturating_sub(later));
        room.min(share)
    }

    /// Tokens a section takes whole: its heading and every item.
    fn full_cost(&self, section: &Section<'_>) -> usize {
        self.fill(section, self.heading_cost(section), usize::MAX).1
    }

    /// Tokens the identifiers' section wants, up to `share`: its heading and as many identifiers
    /// as that share holds (none when there are none).
    fn identifiers_cost(&self, section: &Section<'_>, share: usize) -> usize {
        if section.total() == 0 {
            return 0;
        }
        let heading = self.heading_cost(section);
        let (_, used) = self.fill(section, heading, heading + share);
        used.min(heading + share)
    }

    /// How many of a section's items fit from `used` tokens up to `room`, each counted with its
    /// line break and bullet, and the tokens used then.
    fn fill(&self, section: &Section<'_>, used: usize, room: usize) -> (usize, usize) {
        self.fill_items(section.items, 0..section.items.len(), used, room)
    }

    /// [`Self::fill`] over the items at `order`, in that order.
    fn fill_items(
        &self,
        items: Items<'_>,
        order: impl Iterator<Item = usize>,
        mut used: usize,
        room: usize,
    ) -> (usize, usize) {
        let mut n = 0;
        for i in order {
            let cost = self.counter.count_text(&items.get(i)) + 2;
            if used + cost > room {
                break;
            }
            used += cost;
            n += 1;
        }
        (n, used)
    }

    /// The form of the removed requests that names them all from `used` tokens up to `room`:
    /// verbatim, else all of them shortened together to each step of [`REQUEST_SHORT`] in turn.
    /// The room a form that fits them all leaves then gives some requests a longer form, the
    /// shortest first (the cheapest to lengthen, so that as many as can be are), the newest first
    /// among equals: among the forms that fit them all and the longer forms, the pair that keeps
    /// the most requests' first [`REQUEST_SHORT`]`[0]` characters wins (ties: the longer form for
    /// all). When not even the last step fits them all, the most recent ones that fit in it, so
    /// that the requests left out are the oldest. Returns the form, how many requests it shows and
    /// the tokens used then.
    fn fit_requests<'d>(
        &self,
        texts: &'d [Cow<'d, str>],
        used: usize,
        room: usize,
    ) -> (Items<'d>, usize, usize) {
        let forms: Vec<Option<usize>> = std::iter::once(None)
            .chain(REQUEST_SHORT.map(Some))
            .collect();
        let requests = |short, longer, upgrade| Items::Requests {
            texts,
            short,
            longer,
            upgrade,
            recent: false,
        };
        // Whether a request's first characters, as the verbatim recall reads them, survive `form`.
        let whole = |form: Option<usize>, i: usize| {
            form.is_none_or(|chars| chars >= REQUEST_SHORT[0] || texts[i].chars().count() <= chars)
        };
        let lengths: Vec<usize> = texts.iter().map(|t| t.chars().count()).collect();
        // Shortest first, then newest first.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| (lengths[i], std::cmp::Reverse(i)));
        let mut best: Option<(usize, Items<'d>, usize)> = None;
        for (step, &short) in forms.iter().enumerate() {
            let uniform = requests(short, short, Upgrade::NONE);
            let (n, after) = self.fill_items(uniform, 0..texts.len(), used, room);
            if n < texts.len() {
                continue;
            }
            for &longer in &forms[..step] {
                let mut spent = after;
                let mut upgrade = Upgrade::NONE;
                for &i in &order {
                    let cost = |form| {
                        self.counter
                            .count_text(&requests(form, form, Upgrade::NONE).get(i))
                    };
                    let extra = cost(longer).saturating_sub(cost(short));
                    if spent + extra > room {
                        break;
                    }
                    spent += extra;
                    upgrade = Upgrade {
                        chars: lengths[i].max(1),
                        from: i,
                    };
                }
                let kept = (0..texts.len())
                    .filter(|&i| {
                        whole(
                            if upgrade.covers(&texts[i], i) {
                                longer
                            } else {
                                short
                            },
                            i,
                        )
                    })
                    .count();
                if best.as_ref().is_none_or(|(most, _, _)| kept > *most) {
                    best = Some((kept, requests(short, longer, upgrade), spent));
                }
            }
            let kept = (0..texts.len()).filter(|&i| whole(short, i)).count();
            if best.as_ref().is_none_or(|(most, _, _)| kept > *most) {
                best = Some((kept, uniform, after));
            }
            if step == 0 {
                break;
            }
        }
        if let Some((_, items, after)) = best {
            return (items, texts.len(), after);
        }
        let short = REQUEST_SHORT.last().copied();
        let items = Items::Requests {
            texts,
            short,
            longer: short,
            upgrade: Upgrade::NONE,
            recent: true,
        };
        let (n, after) = self.fill_items(items, (0..texts.len()).rev(), used, room);
        (items, n, after)
    }
}

/// The closing line naming the sections left out, with their counts; empty when none is, or
/// when the frame has no `closing` line.
fn closing_line(sections: &[Section<'_>], which: &[bool], closing: bool) -> String {
    if closing {
        left_out(sections, which)
    } else {
        String::new()
    }
}

/// The closing line naming the sections left out, with their counts; empty when none is.
fn left_out(sections: &[Section<'_>], which: &[bool]) -> String {
    let names: Vec<String> = sections
        .iter()
        .zip(which)
        .filter(|(_, w)| **w)
        .map(|(s, _)| format!("{} ({})", s.title, thousands(s.total())))
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!("Left out for room: {}", names.join(", "))
    }
}

/// A removed request as the digest keeps it: verbatim up to [`REQUEST_CHARS`] characters, else
/// its head and tail around ` … `.
pub(super) fn clip_request(text: &str) -> Cow<'_, str> {
    if text.len() <= REQUEST_CHARS {
        return Cow::Borrowed(text);
    }
    let chars = text.chars().count();
    if chars <= REQUEST_CHARS {
        return Cow::Borrowed(text);
    }
    let head: String = text.chars().take(REQUEST_HEAD).collect();
    let tail_len = REQUEST_CHARS - REQUEST_HEAD - 3;
    let tail: String = text.chars().skip(chars - tail_len).collect();
    Cow::Owned(format!("{head} … {tail}"))
}
