//! What the placeholders trimming writes cost: each tool's placeholder head is counted once per
//! planning job, and only the rest of each placeholder is tokenized.

use crate::note;
use crate::tokens::{TokenCounter, Tokenizer};

/// The counter a planning job costs changes with, and the tokens of the placeholder heads it
/// has counted ([`note::cleared_head`], one per tool): under a BPE tokenizer a placeholder
/// costs its head's tokens plus the rest's, so that only the rest is tokenized for each output.
pub(super) struct Counting {
    pub(super) counter: &'static dyn TokenCounter,
    /// Each tool's head: its length and tokens; `None` when the tokenizer does not add counts
    /// across piece ends (a placeholder is counted whole).
    heads: Option<Vec<(String, usize, usize)>>,
}

impl Counting {
    pub(super) fn new(tokenizer: Tokenizer) -> Self {
        Self {
            counter: tokenizer.counter(),
            heads: tokenizer.adds_across_piece_ends().then(Vec::new),
        }
    }

    /// Tokens of `placeholder`, a placeholder of `tool`'s output.
    pub(super) fn placeholder(&mut self, tool: &str, placeholder: &str) -> usize {
        let Some(heads) = &mut self.heads else {
            return self.counter.count_text(placeholder);
        };
        let (length, tokens) =
            if let Some(&(_, length, tokens)) = heads.iter().find(|(name, _, _)| name == tool) {
                (length, tokens)
            } else {
                let head = note::cleared_head(tool);
                let tokens = self.counter.count_text(&head);
                heads.push((tool.to_owned(), head.len(), tokens));
                (head.len(), tokens)
            };
        tokens + self.counter.count_text(&placeholder[length..])
    }
}
