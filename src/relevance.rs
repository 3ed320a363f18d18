//! Relevance: how much each message shares with what the current request asks.
//!
//! A message is read as a bag of **terms**: words, names, numbers, dates, paths and identifiers,
//! lowercased; a path or an identifier counts whole and by its pieces; a plain word loses its
//! plural or tense ending (`painted`, `paints` and `painting` are one term). Each message is
//! scored against the query's terms by BM25: a shared term weighs by its rarity over the
//! conversation's messages (one in half of them or more weighs nothing, as a speaker's name in a
//! chat), saturating with its count and normalised by the message's length. One pass over the
//! text, no model: the same input gives the same scores, in time linear in its size.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::Value;

use crate::conversation::{Message, Part, joined_text};
use crate::hash::FxBuild;

/// BM25's saturation of a term's count.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;
/// Words too common to say what a request is about.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing",
    "for", "from", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "no",
    "not", "now", "of", "on", "once", "only", "or", "other", "our", "out", "over", "she", "so",
    "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "to", "too", "up", "us", "very", "was", "we", "were", "what", "when", "where",
    "which", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
];

/// The query's terms matched in each message, and each message's score.
#[derive(Debug, Clone, Default)]
pub(crate) struct Relevance {
    /// Each message's score: 0 for the query's own messages and those sharing nothing with it.
    pub(crate) scores: Vec<f64>,
    /// Each message's matched query terms, as indices into `terms`, weightiest first.
    matched: Vec<Vec<u32>>,
    /// The query's terms as the query first writes them (lowercased), and their weights
    /// (inverse document frequency).
    terms: Vec<(String, f64)>,
}

impl Relevance {
    /// Scores `messages` against a query made of the text of the messages `request` (the
    /// current request) and the call arguments of the messages `calls` (a tool round in
    /// progress: what the agent asks for now). Those messages score 0.
    pub(crate) fn measure(
        messages: &[Message],
        request: Range<usize>,
        calls: Range<usize>,
    ) -> Self {
        let mut index: HashMap<String, u32, FxBuild> = HashMap::default();
        let mut written: Vec<String> = Vec::new();
        let mut add_query = |text: &str| {
            each_term(text, &mut |term, word| {
                let next = u32::try_from(index.len()).unwrap_or(u32::MAX);
                index.entry(term.to_owned()).or_insert_with(|| {
                    written.push(word.to_owned());
                    next
                });
            });
        };
        for message in &messages[request.clone()] {
            add_query(&joined_text(&message.parts));
        }
        for message in &messages[calls.clone()] {
            for part in &message.parts {
                if let Part::ToolCall { arguments, .. } = part {
                    each_value(arguments, &mut add_query);
                }
            }
        }
        let in_query = |i: usize| request.contains(&i) || calls.contains(&i);
        // One pass: each message's length in terms and its counts of the query's terms.
        let mut lengths = vec![0usize; messages.len()];
        let mut counts: Vec<Vec<(u32, u32)>> = vec![Vec::new(); messages.len()];
        let mut documents = vec![0usize; index.len()];
        let mut population = 0usize;
        for (i, message) in messages.iter().enumerate() {
            if in_query(i) || index.is_empty() {
                continue;
            }
            population += 1;
            let tally = &mut counts[i];
            let length = &mut lengths[i];
            each_text(message, &mut |text| {
                each_term(text, &mut |term, _| {
                    *length += 1;
                    if let Some(&t) = index.get(term) {
                        match tally.iter_mut().find(|(q, _)| *q == t) {
                            Some((_, n)) => *n += 1,
                            None => tally.push((t, 1)),
                        }
                    }
                });
            });
            for &(t, _) in tally.iter() {
                documents[t as usize] += 1;
            }
        }
        let n = population as f64;
        let weight = |df: usize| {
            let df = df as f64;
            ((n - df + 0.5) / (df + 0.5)).ln().max(0.0)
        };
        let terms: Vec<(String, f64)> = written
            .into_iter()
            .zip(&documents)
            .map(|(word, &df)| (word, weight(df)))
            .collect();
        let average = lengths.iter().sum::<usize>() as f64 / n.max(1.0);
        let mut scores = vec![0.0; messages.len()];
        let mut matched = vec![Vec::new(); messages.len()];
        for (i, tally) in counts.iter().enumerate() {
            let norm = 1.0 - B + B * lengths[i] as f64 / average.max(1.0);
            let mut hits: Vec<u32> = Vec::new();
            for &(t, tf) in tally {
                let w = terms[t as usize].1;
                if w > 0.0 {
                    let tf = f64::from(tf);
                    scores[i] += w * tf * (K1 + 1.0) / (tf + K1 * norm);
                    hits.push(t);
                }
            }
            hits.sort_by(|a, b| terms[*b as usize].1.total_cmp(&terms[*a as usize].1));
            matched[i] = hits;
        }
        Self {
            scores,
            matched,
            terms,
        }
    }

    /// The query's terms that message `i` holds, weightiest first.
    pub(crate) fn terms_of(&self, i: usize) -> impl Iterator<Item = &str> {
        self.matched
            .get(i)
            .into_iter()
            .flatten()
            .map(|&t| self.terms[t as usize].0.as_str())
    }

    /// The share of the whole history's score that its best-scoring messages hold, as many as
    /// the square root of the messages scored: near 1 when the request names something a few
    /// messages state, near 0 when it shares only common words, or nothing.
    pub(crate) fn concentration(&self) -> f64 {
        let mut scores: Vec<f64> = self.scores.iter().copied().filter(|&s| s > 0.0).collect();
        let total: f64 = scores.iter().sum();
        if total <= 0.0 {
            return 0.0;
        }
        scores.sort_by(|a, b| b.total_cmp(a));
        let n = self.scores.len();
        let root = n.isqrt();
        let top = if root * root < n { root + 1 } else { root };
        scores.iter().take(top.max(1)).sum::<f64>() / total
    }
}

/// Calls `f` with each piece of text a message holds: its text, its calls' arguments and its
/// results' text.
fn each_text(message: &Message, f: &mut dyn FnMut(&str)) {
    for part in &message.parts {
        match part {
            Part::Text { text, .. } => f(text),
            Part::ToolCall { arguments, .. } => each_value(arguments, f),
            Part::ToolResult { content, .. } => f(&joined_text(content)),
            Part::Opaque(_) => {}
        }
    }
}

/// Calls `f` with each string of a JSON value (arguments may be a JSON-encoded string).
fn each_value(value: &Value, f: &mut dyn FnMut(&str)) {
    match value {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(inner @ (Value::Object(_) | Value::Array(_))) => each_value(&inner, f),
            _ => f(s),
        },
        Value::Array(items) => items.iter().for_each(|v| each_value(v, f)),
        Value::Object(map) => map.values().for_each(|v| each_value(v, f)),
        Value::Number(n) => f(&n.to_string()),
        Value::Bool(_) | Value::Null => {}
    }
}

/// Calls `f` with each term of `text` and the word it stands for: a path or identifier whole
/// and by its pieces, each word lowercased and stemmed, stopwords left out.
pub(crate) fn each_term(text: &str, f: &mut dyn FnMut(&str, &str)) {
    let joins = |c: char| matches!(c, '_' | '-' | '.' | '/' | ':' | '#' | '@');
    let breaks = |c: char| !(c.is_alphanumeric() || joins(c));
    for word in text.split(breaks) {
        let word = word.trim_matches(joins);
        if word.is_empty() {
            continue;
        }
        let whole = word.to_lowercase();
        if whole.contains(joins) {
            if whole.chars().count() >= 3 {
                f(&whole, &whole);
            }
            for part in whole.split(joins).filter(|p| !p.is_empty()) {
                emit(part, f);
            }
        } else {
            emit(&whole, f);
        }
    }
}

/// Passes one lowercased word to `f`, stemmed, with the word itself, unless it is a stopword or
/// a lone letter.
fn emit(word: &str, f: &mut dyn FnMut(&str, &str)) {
    let alphabetic = word.chars().all(char::is_alphabetic);
    if alphabetic && (word.chars().count() < 2 || STOPWORDS.binary_search(&word).is_ok()) {
        return;
    }
    if alphabetic {
        let mut term = word.to_owned();
        stem(&mut term);
        f(&term, word);
    } else {
        f(word, word);
    }
}

/// Cuts a plural or tense ending, then a final `e`, so that a word's forms meet.
fn stem(word: &mut String) {
    let len = word.len();
    if word.ends_with("ies") && len > 4 {
        word.truncate(len - 3);
        word.push('y');
    } else if word.ends_with("ing") && len > 5 {
        word.truncate(len - 3);
    } else if word.ends_with("ed") && len > 4 {
        word.truncate(len - 2);
    } else if word.ends_with('s') && !word.ends_with("ss") && len > 3 {
        word.truncate(len - 1);
    }
    if word.ends_with('e') && word.len() > 3 {
        word.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Role;

    fn terms(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        each_term(text, &mut |t, _| out.push(t.to_owned()));
        out
    }

    #[test]
    fn stopwords_are_sorted_for_the_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_word_s_forms_meet_and_paths_count_whole_and_by_pieces() {
        assert_eq!(terms("painted paints painting"), ["paint"; 3]);
        assert_eq!(terms("What did she bake?"), ["bak"]);
        assert_eq!(
            terms("src/relevance.rs on 8 May, 2023"),
            [
                "src/relevance.rs",
                "src",
                "relevanc",
                "rs",
                "8",
                "may",
                "2023"
            ]
        );
    }

    #[test]
    fn a_rare_shared_term_outweighs_a_common_one() {
        let mut messages: Vec<Message> = (0..10)
            .map(|i| Message::new_text(Role::User, format!("Caroline: day {i} was fine")))
            .collect();
        messages[3] = Message::new_text(Role::User, "Caroline: I adopted a guinea pig named Oscar");
        messages.push(Message::new_text(
            Role::User,
            "What is Caroline's guinea pig called?",
        ));
        let relevance = Relevance::measure(&messages, 10..11, 0..0);
        let best = (0..10)
            .max_by(|&a, &b| relevance.scores[a].total_cmp(&relevance.scores[b]))
            .unwrap();
        assert_eq!(best, 3);
        assert!(
            relevance.terms_of(0).next().is_none(),
            "a name in every message weighs nothing"
        );
        let named: Vec<&str> = relevance.terms_of(3).collect();
        assert_eq!(named, ["guinea", "pig"]);
        assert!(relevance.concentration() > 0.9);
    }
}
