//! The run's state: what the pipeline knows of its input, and the conversation as each step
//! leaves it — exact counts, where each message came from, and what the steps took out.
//!
//! A step takes an [`Applied`] and returns the next one; no step copies the conversation. Every
//! output message keeps its [`Source`] (an input message as read, one changed, or a marker), so
//! that the report, the archive and a caller holding the input's bytes can tell them apart.

use std::sync::OnceLock;

use crate::account::{Features, HarnessMessage, InstructionFile};
use crate::conversation::Repair;
use crate::conversation::{Conversation, Layout, Message, Part};
use crate::digest::ClearedNames;
use crate::error::{Error, Result};
use crate::features::FeatureThresholds;
use crate::format::Format;
use crate::identifiers::{self, Counted, Tally};
use crate::tokens::Counts;
use crate::units::{self, Unit};
use crate::{classify, gist, instructions, parallel, validate};

/// Messages from which a conversation's pairing check runs on a thread of its own, beside the
/// classification of the input's requests or the making of the output's report (each takes
/// about 0.3 µs a message).
pub(crate) const PARALLEL_CHECK_MESSAGES: usize = 1_000;

/// What a run knows of its input once the pipeline owns the conversation: counted, checked and
/// classified once, read by every later stage and by the report.
pub(crate) struct CountedInput {
    /// The wire format read.
    pub(crate) format: Format,
    /// The unlogged part of what lies outside the messages, counted in: the `overhead` given,
    /// or what the anchor measured (the report's `overhead`).
    pub(crate) unlogged: usize,
    /// Its messages.
    pub(crate) messages: usize,
    /// Its tokens, the unlogged part included.
    pub(crate) tokens: usize,
    /// Each input message's tokens: markers count what they replace in these.
    pub(crate) counts: Vec<usize>,
    /// The input messages that are harness text.
    pub(crate) harness: Vec<HarnessMessage>,
    /// The input indices of the requests, ascending: classified once, here.
    pub(crate) requests: Vec<usize>,
    /// The input messages holding an instruction file, ascending: found once, here.
    pub(crate) instructions: Vec<InstructionFile>,
    /// The input index of the task (the first request).
    pub(crate) task: Option<usize>,
    /// The input index of the current request (the last request).
    pub(crate) current: Option<usize>,
    /// What the session-log reader repaired.
    pub(crate) repairs: Vec<Repair>,
    /// With an anchor, the unlogged part its count found (the report's `unlogged_tokens`).
    pub(crate) anchored_unlogged: Option<usize>,
}

impl CountedInput {
    /// Checks `conversation`'s pairing and classifies its messages (requests, harness text,
    /// instruction files), given its `counts` with the `unlogged` part counted in them and,
    /// with an anchor, the part its count found. The check and the classification follow
    /// the count, beside each other, so that their walk through the whole conversation does not
    /// compete with the tokenizer for memory.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the conversation breaks tool pairing.
    pub(crate) fn checked(
        conversation: &Conversation,
        (counts, unlogged): (&Counts, usize),
        anchored_unlogged: Option<usize>,
    ) -> Result<Self> {
        let apart = conversation.messages.len() >= PARALLEL_CHECK_MESSAGES;
        let (problems, (requests, (harness, instructions))) = parallel::beside(
            apart,
            || validate::check(conversation),
            || {
                (
                    classify::requests(conversation),
                    (
                        classify::harness(conversation),
                        instruction_files(conversation),
                    ),
                )
            },
        );
        Error::unless_valid(&problems)?;
        Ok(Self {
            format: conversation.format,
            unlogged,
            messages: conversation.messages.len(),
            tokens: counts.total(),
            counts: counts.messages.clone(),
            harness: harness
                .into_iter()
                .map(|(message, agent, pattern, source)| HarnessMessage {
                    message,
                    agent,
                    pattern,
                    source,
                })
                .collect(),
            task: requests.first().copied(),
            current: requests.last().copied(),
            requests,
            instructions,
            repairs: conversation.repairs.clone(),
            anchored_unlogged,
        })
    }

    /// The input indices of the messages holding an instruction file, ascending.
    pub(crate) fn instruction_indices(&self) -> Vec<usize> {
        self.instructions.iter().map(|f| f.message).collect()
    }
}

/// The input's instruction files, as the report lists them.
fn instruction_files(conversation: &Conversation) -> Vec<InstructionFile> {
    instructions::instruction_files(conversation)
        .into_iter()
        .map(|(message, wrapper)| InstructionFile {
            message,
            agent: wrapper.agent.as_str(),
            file: wrapper.file.as_str(),
            pattern: wrapper.text.as_str(),
            paths: instructions::paths_named(&conversation.messages[message].text()),
        })
        .collect()
}

/// A conversation after a step changed it, with its exact counts and where each message came
/// from.
#[derive(Debug)]
pub(crate) struct Applied {
    /// The changed conversation.
    pub conversation: Conversation,
    /// Exact counts of its messages: cached ones for unchanged messages, fresh ones for the rest.
    pub counts: Counts,
    /// Where each message came from.
    pub origin: Vec<Source>,
    /// What the steps so far took out of the conversation.
    pub discarded: Discarded,
}

/// What steps took out of a conversation (cleared outputs, removed messages), held rather than
/// freed as each step goes: freeing thousands of allocations one by one is a tenth of what a
/// compaction does after counting. They are freed with the result that holds them, once it has
/// been used; the CLI exits without freeing them at all.
///
/// A cleared tool output is also where the identifiers of its message are read from when that
/// message is later removed: its placeholder no longer holds them.
#[derive(Default)]
pub(crate) struct Discarded {
    parts: Vec<Cleared>,
    messages: Vec<Message>,
}

/// A cleared tool output: the input message it belonged to, the part of that message it was
/// the content of and how that content was written, and its names, found once when first asked
/// for.
struct Cleared {
    input: Option<usize>,
    part: usize,
    layout: Layout,
    parts: Vec<Part>,
    names: OnceLock<Names>,
}

/// The names of a cleared output, each ranked ([`Tally::ranked`]): its identifiers, and its
/// other names (paths, code names, dates: [`gist::for_each_name`]).
struct Names {
    identifiers: Vec<Counted>,
    others: Vec<Counted>,
}

impl Names {
    fn of(parts: &[Part]) -> Self {
        let (mut identifiers, mut others) = (Tally::default(), Tally::default());
        for part in parts {
            if let Part::Text { text, .. } = part {
                identifiers.add_text(text, false);
                gist::for_each_name(text, |name| {
                    if !identifiers::is_identifier(name) {
                        others.add(name, false);
                    }
                });
            }
        }
        Self {
            identifiers: identifiers.ranked(),
            others: others.ranked(),
        }
    }
}

impl Discarded {
    /// Holds the content (`parts`, written as `layout`) a step replaced in part `part` of the
    /// message read from input message `input`: a tool result's.
    pub(crate) fn output(
        &mut self,
        input: Option<usize>,
        (part, layout): (usize, Layout),
        parts: Vec<Part>,
    ) {
        self.parts.push(Cleared {
            input,
            part,
            layout,
            parts,
            names: OnceLock::new(),
        });
    }

    /// The content part `part` of input message `input` was read with, and how it was
    /// written, when a step replaced it: the first content held for it (a later step replaces
    /// what an earlier one left).
    pub(crate) fn original_output(&self, input: usize, part: usize) -> Option<(&[Part], Layout)> {
        let first = self
            .parts
            .iter()
            .find(|c| c.input == Some(input) && c.part == part)?;
        Some((&first.parts, first.layout))
    }

    /// The names of the outputs cleared from the input messages `inputs` (ascending): their
    /// identifiers, and their other names.
    pub(crate) fn names_of(&self, inputs: &[usize]) -> ClearedNames<'_> {
        let mut cleared = ClearedNames::default();
        let outputs = self.parts.iter();
        for c in outputs.filter(|c| c.input.is_some_and(|i| inputs.binary_search(&i).is_ok())) {
            let names = c.names.get_or_init(|| Names::of(&c.parts));
            let ids = names.identifiers.iter().map(|c| c.id.as_str());
            cleared.identifiers.extend(ids);
            cleared
                .names
                .extend(names.others.iter().map(|c| c.id.as_str()));
        }
        cleared
    }

    /// Holds a message a step removed.
    pub(crate) fn message(&mut self, message: Message) {
        self.messages.push(message);
    }
}

/// A copy holds nothing: what was discarded is never read again.
impl Clone for Discarded {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for Discarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Discarded({} part lists, {} messages)",
            self.parts.len(),
            self.messages.len()
        )
    }
}

/// Where a message of a step's output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Input message `i`, as it was read.
    Input(usize),
    /// Input message `i`, changed: an output cleared or capped, text kept from a dropped round,
    /// the task shortened, or a marker merged into it.
    Edited(usize),
    /// A marker standing alone: no input message.
    Marker,
}

impl Source {
    /// The input message this one is or was changed from.
    pub(crate) fn input(self) -> Option<usize> {
        match self {
            Self::Input(index) | Self::Edited(index) => Some(index),
            Self::Marker => None,
        }
    }

    /// The same origin, once the message is changed.
    pub(crate) fn edited(self) -> Self {
        match self {
            Self::Input(index) => Self::Edited(index),
            other => other,
        }
    }
}

impl Applied {
    /// The starting point: a conversation as read, with its counts.
    pub(crate) fn unchanged(conversation: Conversation, counts: Counts) -> Self {
        let origin = (0..conversation.messages.len())
            .map(Source::Input)
            .collect();
        Self {
            conversation,
            counts,
            origin,
            discarded: Discarded::default(),
        }
    }

    /// Message `index` (read from input message `input`) with the content its tool results
    /// were read with, where a step replaced any, and the parts given back; `None` when no
    /// result of it was replaced.
    pub(crate) fn whole_outputs(
        &self,
        index: usize,
        input: usize,
    ) -> Option<(Message, Vec<usize>)> {
        let mut message = None;
        let mut parts = Vec::new();
        let current = &self.conversation.messages[index];
        for (at, part) in current.parts.iter().enumerate() {
            if !matches!(part, Part::ToolResult { .. }) {
                continue;
            }
            let Some((original, was)) = self.discarded.original_output(input, at) else {
                continue;
            };
            let whole: &mut Message = message.get_or_insert_with(|| current.clone());
            if let Part::ToolResult {
                content, layout, ..
            } = &mut whole.parts[at]
            {
                *content = original.to_vec();
                *layout = was;
            }
            parts.push(at);
        }
        Some((message?, parts))
    }

    /// A copy of this state to change apart from it: what was discarded stays with this one.
    pub(crate) fn copy(&self) -> Self {
        Self {
            conversation: self.conversation.clone(),
            counts: self.counts.clone(),
            origin: self.origin.clone(),
            discarded: Discarded::default(),
        }
    }

    /// The features of this state against `budget`.
    pub(crate) fn measure(&self, budget: usize, thresholds: &FeatureThresholds) -> Features {
        Features::measure(&self.conversation, &self.counts, budget, thresholds)
    }

    /// The indices of this state's messages that stand for one of `input` (input indices,
    /// ascending): the input's requests, classified once, found in a later state.
    pub(crate) fn of_input(&self, input: &[usize]) -> Vec<usize> {
        self.origin
            .iter()
            .enumerate()
            .filter(|(_, o)| o.input().is_some_and(|i| input.binary_search(&i).is_ok()))
            .map(|(at, _)| at)
            .collect()
    }

    /// This state's units ([`units::group`]), the input's requests and instruction files,
    /// classified once, found in it.
    pub(crate) fn units(&self, input: &CountedInput) -> Vec<Unit> {
        let requests = self.of_input(&input.requests);
        let instructions = self.of_input(&input.instruction_indices());
        units::group(&self.conversation, &self.counts, &requests, &instructions)
    }

    /// The input indices of the messages of this state's pinned `units`, ascending: which
    /// messages of a later state (the output this one's plan is applied into) are pinned.
    pub(crate) fn pinned_inputs(&self, units: &[Unit]) -> Vec<usize> {
        let mut pinned: Vec<usize> = units
            .iter()
            .filter(|u| u.pinned)
            .flat_map(|u| self.origin[u.messages.clone()].iter())
            .filter_map(|source| source.input())
            .collect();
        pinned.sort_unstable();
        pinned.dedup();
        pinned
    }

    /// Tokens of what can never be removed: this state's messages standing for the input
    /// messages `pinned` (ascending, as [`Applied::pinned_inputs`] gives them), as counted here
    /// (a marker merged into one counted with it), the system prompt and the reply priming.
    pub(crate) fn pinned_tokens(&self, pinned: &[usize]) -> usize {
        let messages: usize = self
            .origin
            .iter()
            .zip(&self.counts.messages)
            .filter(|(source, _)| {
                source
                    .input()
                    .is_some_and(|i| pinned.binary_search(&i).is_ok())
            })
            .map(|(_, tokens)| tokens)
            .sum();
        messages + self.counts.outside + self.counts.priming()
    }

    /// The input messages that no longer appear, as `[start, end)` ranges.
    pub(crate) fn removed(&self, input_messages: usize) -> Vec<[usize; 2]> {
        let mut present = vec![false; input_messages];
        for index in self.origin.iter().filter_map(|s| s.input()) {
            present[index] = true;
        }
        let mut ranges: Vec<[usize; 2]> = Vec::new();
        for (index, _) in present.iter().enumerate().filter(|(_, p)| !**p) {
            match ranges.last_mut() {
                Some(range) if range[1] == index => range[1] = index + 1,
                _ => ranges.push([index, index + 1]),
            }
        }
        ranges
    }
}
