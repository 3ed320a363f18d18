//! What the placeholders trimming writes cost: each tool's placeholder head is counted once per
//! process, what follows the size once per distinct text, and the size as the sum of its
//! groups of digits and commas, a token each; a gist below a placeholder keeps the count it was
//! made with where that is exact.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::gist::Gist;
use crate::hash::FxBuild;
use crate::note;
use crate::tokens::{self, TokenCounter, Tokenizer};

/// The counter a planning job costs changes with, and what it has counted of the placeholders
/// it has costed, when the tokenizer's counts are sums of its pieces'.
pub(super) struct Counting {
    pub(super) counter: &'static dyn TokenCounter,
    /// `None` when the tokenizer's counts do not add across piece ends (a placeholder is
    /// counted whole).
    pieces: Option<PieceCounts>,
}

/// The counts of the placeholder pieces seen so far, under a tokenizer whose counts are sums of
/// the counts of a text's pieces ([`Tokenizer::additive_base`]): a placeholder
/// ([`note::cleared_output`]) is cut where the tokenizer always ends a piece, after its head
/// (punctuation before a digit) and after its size (a digit before a space), and costs the sum
/// of its three parts' counts; its size ([`note::thousands`]) is cut likewise between each group
/// of digits and comma.
struct PieceCounts {
    /// The counter whose counts add up.
    base: &'static dyn TokenCounter,
    /// The factor per million the sum is scaled by (a calibrated estimate), if any.
    per_million: Option<u64>,
    /// Each tool's head ([`note::cleared_head`]): its length and tokens.
    heads: Vec<(String, usize, usize)>,
    /// The tokens of each tool's head counted by any job of the process under this base.
    counted_heads: &'static CountedHeads,
    /// The tokens of each text seen after a size: a few texts (` tokens)]`, a superseded
    /// output's note) stand after thousands of sizes.
    ends: HashMap<String, usize, FxBuild>,
}

/// The tokens of a group of one to three digits, and of a comma, under either additive base
/// ([`Tokenizer::additive_base`]: `O200k` or `Cl100k`): each is one of their tokens (a unit test
/// counts every group).
const GROUP_TOKENS: usize = 1;
const COMMA_TOKENS: usize = 1;

/// Tools and the tokens of their heads, counted once per process: a job meets a few tools, and
/// counting a head costs as much as costing a thousand placeholders from it.
type CountedHeads = Mutex<Vec<(String, usize)>>;

/// The most heads a process keeps counted per base: a long-running proxy meets new tools for
/// as long as it runs. Past it, each job counts the heads of tools not kept itself.
const MAX_COUNTED_HEADS: usize = 512;

/// The heads counted under `base`, an additive base ([`Tokenizer::additive_base`]).
fn counted_heads(base: Tokenizer) -> &'static CountedHeads {
    static O200K: CountedHeads = Mutex::new(Vec::new());
    static CL100K: CountedHeads = Mutex::new(Vec::new());
    match base {
        Tokenizer::Cl100k => &CL100K,
        // The only other additive base.
        _ => &O200K,
    }
}

impl Counting {
    pub(super) fn new(tokenizer: Tokenizer) -> Self {
        Self {
            counter: tokenizer.counter(),
            pieces: tokenizer
                .additive_base()
                .map(|(base, per_million)| PieceCounts {
                    base: base.counter(),
                    per_million,
                    heads: Vec::new(),
                    counted_heads: counted_heads(base),
                    ends: HashMap::default(),
                }),
        }
    }

    /// Tokens of `placeholder`, a placeholder of `tool`'s output ([`note::cleared_output`], and
    /// whatever notes follow it).
    pub(super) fn placeholder(&mut self, tool: &str, placeholder: &str) -> usize {
        let Some(pieces) = &mut self.pieces else {
            return self.counter.count_text(placeholder);
        };
        let (length, head) = pieces.head(tool);
        let rest = &placeholder[length..];
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != ',')
            .unwrap_or(rest.len());
        let (size, end) = rest.split_at(digits);
        let sum = head + pieces.size(size) + pieces.end(end);
        pieces
            .per_million
            .map_or(sum, |per_million| tokens::scale(sum, per_million))
    }

    /// Tokens of `placeholder`, a placeholder that ends with `gist` below it
    /// ([`note::with_gist`]). The gist's own count is reused where counts add unscaled and the
    /// tokenizer always ends a piece where the gist starts: after the `]` and line break before
    /// it, unless the gist starts with `\r`, `\n` or `/` (which a piece of punctuation and line
    /// breaks takes in). Elsewhere the placeholder is counted whole.
    pub(super) fn with_gist(&self, placeholder: &str, gist: &Gist) -> usize {
        let unscaled = self
            .pieces
            .as_ref()
            .is_some_and(|pieces| pieces.per_million.is_none());
        let head = placeholder
            .strip_suffix(gist.text.as_str())
            .filter(|head| head.ends_with("]\n") && !gist.text.starts_with(['\r', '\n', '/']));
        match head {
            Some(head) if unscaled => self.counter.count_text(head) + gist.tokens,
            _ => self.counter.count_text(placeholder),
        }
    }
}

impl PieceCounts {
    /// The length and tokens of `tool`'s head.
    fn head(&mut self, tool: &str) -> (usize, usize) {
        if let Some(&(_, length, tokens)) = self.heads.iter().find(|(name, ..)| name == tool) {
            return (length, tokens);
        }
        let head = note::cleared_head(tool);
        let mut counted = self
            .counted_heads
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let tokens = if let Some(&(_, tokens)) = counted.iter().find(|(name, _)| name == tool) {
            tokens
        } else {
            let tokens = self.base.count_text(&head);
            if counted.len() < MAX_COUNTED_HEADS {
                counted.push((tool.to_owned(), tokens));
            }
            tokens
        };
        self.heads.push((tool.to_owned(), head.len(), tokens));
        (head.len(), tokens)
    }

    /// The tokens of `size`, digits in groups of three with commas between ([`note::thousands`]).
    fn size(&self, size: &str) -> usize {
        let mut tokens = 0;
        for (i, group) in size.split(',').enumerate() {
            if i > 0 {
                tokens += COMMA_TOKENS;
            }
            if group.is_empty() || group.len() > 3 {
                // Not a size as `thousands` writes one: counted whole.
                return self.base.count_text(size);
            }
            tokens += GROUP_TOKENS;
        }
        tokens
    }

    /// The tokens of `end`, the text after a placeholder's size.
    fn end(&mut self, end: &str) -> usize {
        if let Some(&tokens) = self.ends.get(end) {
            return tokens;
        }
        let tokens = self.base.count_text(end);
        self.ends.insert(end.to_owned(), tokens);
        tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_of_one_to_three_digits_and_a_comma_are_one_token_under_each_additive_base() {
        for base in [Tokenizer::O200k, Tokenizer::Cl100k] {
            let counter = base.counter();
            assert_eq!(counter.count_text(","), COMMA_TOKENS, "{base:?}");
            for width in 1..=3 {
                for value in 0..10usize.pow(width) {
                    let group = format!("{value:0width$}", width = width as usize);
                    assert_eq!(counter.count_text(&group), GROUP_TOKENS, "{base:?} {group}");
                }
            }
        }
    }

    proptest::proptest! {
        /// A placeholder with a gist below it costs what it counts whole, whatever the gist
        /// starts with: punctuation, line breaks, a slash, blanks, letters, digits.
        #[test]
        fn a_placeholder_with_a_gist_costs_what_it_counts_whole(
            text in "([a-z]|[A-Z]|[0-9]|/|\r|\n| |\t|\\]|\\{|'|\\.|…|\u{a0}|'s){1,12}"
        ) {
            for tokenizer in [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::Chars] {
                let counting = Counting::new(tokenizer);
                let gist = Gist {
                    tokens: counting.counter.count_text(&text),
                    text: text.clone(),
                    lines_kept: 1,
                    lines: 3,
                };
                let placeholder = note::with_gist(&note::cleared_output("bash", 1_234, None), 1, 3, &text);
                proptest::prop_assert_eq!(
                    counting.with_gist(&placeholder, &gist),
                    counting.counter.count_text(&placeholder),
                    "{:?} {:?}", tokenizer, text
                );
            }
        }
    }
}
