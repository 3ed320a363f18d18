//! Instruction files: the `AGENTS.md`, `CLAUDE.md` and `GEMINI.md` content an agent injects into
//! a conversation.
//!
//! An agent puts its project's instruction file in a user turn, in a wrapper of its own: Codex a
//! `# AGENTS.md instructions for {dir}` message (`<user_instructions>` before), Claude Code a
//! `<system-reminder>` block naming `# claudeMd` or `Contents of {path}`, Gemini CLI its
//! `<session_context>` message. The text is machine-written ([`crate::classify`] calls it
//! harness), but it holds the person's standing orders: it is pinned like the system prompt,
//! never removed nor shortened. The wrappers are data, in `data/instructions.json`: one entry per
//! wrapper, with the agent, the file, where the agent's own source writes it, and an example.
//! Instruction files an agent puts in the system prompt (pi, opencode, Gemini CLI's global
//! memory) are pinned as system messages already.
//!
//! A message holding a wrapper is pinned whole, with the unit it belongs to: the other text
//! beside the block (Claude Code's first request, a result carrier's notes) stays with it, and
//! the part holding the block is never the one a shortened task cuts.

use std::sync::LazyLock;

use memchr::memmem;
use serde::Deserialize;

use crate::classify::{Kind, find_open};
use crate::conversation::{Conversation, Role, joined_text};

/// One entry of `data/instructions.json`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Wrapper {
    /// The agent that writes it.
    pub agent: String,
    /// The instruction file it carries (`AGENTS.md`, `CLAUDE.md`, `GEMINI.md`).
    pub file: String,
    /// A `tag` wrapper is a `<tag>…</tag>` block holding one of `holding` (any block when
    /// there are none); a `prefix` one, text that starts with the pattern.
    kind: Kind,
    /// The tag name or the prefix.
    #[serde(rename = "pattern")]
    pub text: String,
    /// Texts one of which a tag's block must hold.
    #[serde(default)]
    holding: Vec<String>,
    /// Where the agent's own source writes it.
    #[allow(dead_code)]
    source: String,
    /// A real-looking example of the text it matches.
    #[allow(dead_code)]
    example: String,
}

/// The shipped wrappers (keep `data/instructions.json` one entry per wrapper).
static WRAPPERS: LazyLock<Vec<Wrapper>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../data/instructions.json"))
        .expect("data/instructions.json is checked by a unit test")
});

impl Wrapper {
    /// Whether `text` holds this wrapper.
    fn is_in(&self, text: &str) -> bool {
        match self.kind {
            Kind::Prefix => text.trim_start().starts_with(&self.text),
            // Most texts hold no tag at all: no search, no copy.
            Kind::Tag if !text.contains('<') => false,
            Kind::Tag => {
                let (open, close) = (format!("<{}", self.text), format!("</{}>", self.text));
                let mut from = 0;
                while let Some(at) = find_open(&text[from..], &open) {
                    let start = from + at;
                    let end = text[start..]
                        .find(close.as_str())
                        .map_or(text.len(), |e| start + e + close.len());
                    let block = &text[start..end];
                    if self.holding.is_empty() || self.holding.iter().any(|h| block.contains(h)) {
                        return true;
                    }
                    from = end;
                }
                false
            }
        }
    }
}

/// The wrapper of the instruction file `text` holds, if it holds one.
pub(crate) fn wrapper_in(text: &str) -> Option<&'static Wrapper> {
    WRAPPERS.iter().find(|w| w.is_in(text))
}

/// Whether `text` holds an instruction file.
pub(crate) fn holds_instructions(text: &str) -> bool {
    wrapper_in(text).is_some()
}

/// Every user message of the conversation that holds an instruction file: its index and the
/// wrapper found, in order.
pub(crate) fn instruction_files(conversation: &Conversation) -> Vec<(usize, &'static Wrapper)> {
    conversation
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
        .filter_map(|(i, m)| wrapper_in(&joined_text(&m.parts)).map(|w| (i, w)))
        .collect()
}

/// How Gemini CLI opens the project context it appends to a tool's output when the tool reads a
/// folder with a GEMINI.md of its own (`JIT_CONTEXT_PREFIX`, packages/core/src/tools/jit-context.ts;
/// keep in sync).
const OUTPUT_CONTEXT_START: &str = "\n--- Newly Discovered Project Context ---\n";
/// How it closes it (`JIT_CONTEXT_SUFFIX`).
const OUTPUT_CONTEXT_END: &str = "\n--- End Project Context ---";

/// A search for [`OUTPUT_CONTEXT_START`], built once: every cleared output is searched whole.
static OUTPUT_CONTEXT: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(OUTPUT_CONTEXT_START));

/// The instruction file a tool's output carries at its end, if any: Gemini CLI's project
/// context, from its opening line through its closing one. A cleared output keeps it.
pub(crate) fn carried_in_output(text: &str) -> Option<&str> {
    let start = OUTPUT_CONTEXT.find(text.as_bytes())?;
    let end = text[start..]
        .find(OUTPUT_CONTEXT_END)
        .map_or(text.len(), |at| start + at + OUTPUT_CONTEXT_END.len());
    Some(&text[start..end])
}

/// The paths the instruction files of `text` are named by, in order: Codex's `for {dir}`,
/// Claude Code's `Contents of {path}`, Gemini CLI's `--- Context from: {path} ---`.
pub(crate) fn paths_named(text: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for line in text.lines().map(str::trim) {
        let path = if let Some(rest) = line.strip_prefix("# AGENTS.md instructions for ") {
            Some(rest)
        } else if let Some(rest) = line.strip_prefix("Contents of ") {
            let end = rest.find(" (").unwrap_or(rest.len());
            Some(rest[..end].trim_end_matches(':'))
        } else {
            line.strip_prefix("--- Context from: ")
                .and_then(|rest| rest.strip_suffix(" ---"))
        };
        if let Some(path) = path.filter(|p| !p.is_empty()) {
            if !paths.iter().any(|p| p == path) {
                paths.push(path.to_string());
            }
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_example_holds_its_own_wrapper() {
        assert!(WRAPPERS.len() >= 5);
        for wrapper in WRAPPERS.iter() {
            assert!(wrapper.is_in(&wrapper.example), "{}", wrapper.example);
            assert!(!wrapper.source.is_empty() && !wrapper.file.is_empty());
        }
    }

    #[test]
    fn a_reminder_is_an_instruction_file_only_when_it_carries_one() {
        let project = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nCodebase and user instructions are shown below.\n\nContents of /repo/CLAUDE.md (project instructions, checked into the codebase):\n\nNever push.\n</system-reminder>\nFix the login bug.";
        assert_eq!(
            wrapper_in(project).map(|w| w.file.as_str()),
            Some("CLAUDE.md")
        );
        let nested =
            "<system-reminder>\nContents of /repo/src/CLAUDE.md:\n\nUse tabs.\n</system-reminder>";
        assert!(holds_instructions(nested));
        assert!(!holds_instructions(
            "<system-reminder>Files changed.</system-reminder>\nPlease fix it."
        ));
        assert!(!holds_instructions(
            "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"
        ));
        assert!(!holds_instructions(
            "Please read AGENTS.md and CLAUDE.md first."
        ));
    }

    #[test]
    fn gemini_clis_context_at_the_end_of_an_output_is_found_whole() {
        let output = "line 1\nline 2\n\n--- Newly Discovered Project Context ---\n--- Context from: src/GEMINI.md ---\nUse tabs.\n--- End of Context from: src/GEMINI.md ---\n--- End Project Context ---";
        assert_eq!(
            carried_in_output(output),
            Some(&output[output.find("\n--- Newly").unwrap()..])
        );
        assert_eq!(carried_in_output("line 1\nline 2"), None);
    }

    #[test]
    fn codex_and_gemini_cli_wrappers_are_found_and_name_their_paths() {
        let codex = "# AGENTS.md instructions for /home/u/p\n\n<INSTRUCTIONS>\nRun fmt.\n</INSTRUCTIONS>\n<environment_context>\n</environment_context>";
        assert_eq!(wrapper_in(codex).map(|w| w.agent.as_str()), Some("codex"));
        assert_eq!(paths_named(codex), ["/home/u/p"]);
        assert!(holds_instructions(
            "# AGENTS.md instructions\n\n<INSTRUCTIONS>\nThese AGENTS.md instructions replace all previously provided AGENTS.md instructions.\n</INSTRUCTIONS>"
        ));
        let gemini = "<session_context>\nThis is the Gemini CLI.\n--- Context from: /p/GEMINI.md ---\nx\n--- End of Context from: /p/GEMINI.md ---\n</session_context>";
        assert_eq!(
            wrapper_in(gemini).map(|w| w.file.as_str()),
            Some("GEMINI.md")
        );
        assert_eq!(paths_named(gemini), ["/p/GEMINI.md"]);
        let claude = "<system-reminder>\nContents of /r/CLAUDE.md (project instructions, checked into the codebase):\n\nx\n</system-reminder>";
        assert_eq!(paths_named(claude), ["/r/CLAUDE.md"]);
    }
}
