//! What the placeholders trimming writes cost: each tool's placeholder head is counted once per
//! planning job, what follows the size once per distinct text, and only the size is tokenized
//! for each output.

use std::collections::HashMap;

use crate::hash::FxBuild;
use crate::note;
use crate::tokens::{self, TokenCounter, Tokenizer};

/// The counter a planning job costs changes with, and what it has counted of the placeholders
/// it has costed, when the tokenizer's counts are sums of its pieces'.
pub(super) struct Counting {
    pub(super) counter: &'static dyn TokenCounter,
    /// `None` when the tokenizer's counts do not add across piece ends (a placeholder is
    /// counted whole).
    pieces: Option<Pieces>,
}

/// The placeholder pieces counted so far, under a tokenizer whose counts are sums of the counts
/// of a text's pieces ([`Tokenizer::additive_base`]): a placeholder ([`note::cleared_output`])
/// is cut where the tokenizer always ends a piece, after its head (punctuation before a digit)
/// and after its size (a digit before a space), and costs the sum of its three parts' counts.
struct Pieces {
    /// The counter whose counts add up.
    base: &'static dyn TokenCounter,
    /// The factor per million the sum is scaled by (a calibrated estimate), if any.
    per_million: Option<u64>,
    /// Each tool's head ([`note::cleared_head`]): its length and tokens.
    heads: Vec<(String, usize, usize)>,
    /// The tokens of each text seen after a size: a few texts (` tokens)]`, a superseded
    /// output's note) stand after thousands of sizes.
    ends: HashMap<String, usize, FxBuild>,
}

impl Counting {
    pub(super) fn new(tokenizer: Tokenizer) -> Self {
        Self {
            counter: tokenizer.counter(),
            pieces: tokenizer.additive_base().map(|(base, per_million)| Pieces {
                base: base.counter(),
                per_million,
                heads: Vec::new(),
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
        let sum = head + pieces.base.count_text(size) + pieces.end(end);
        pieces
            .per_million
            .map_or(sum, |per_million| tokens::scale(sum, per_million))
    }
}

impl Pieces {
    /// The length and tokens of `tool`'s head.
    fn head(&mut self, tool: &str) -> (usize, usize) {
        if let Some(&(_, length, tokens)) = self.heads.iter().find(|(name, ..)| name == tool) {
            return (length, tokens);
        }
        let head = note::cleared_head(tool);
        let tokens = self.base.count_text(&head);
        self.heads.push((tool.to_owned(), head.len(), tokens));
        (head.len(), tokens)
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
