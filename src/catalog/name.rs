//! Model names as providers and agents spell them: the lookup key of a name (provider
//! prefixes, runner tags and suffixes taken off, each change named), and the naming rules of
//! the families whose new models appear before any catalog lists them (`claude-…`, `gpt-…`,
//! `gemini-…`), which read a name as a line and a version.
//!
//! A rule reads a name as words and a version: `claude-opus-5-7-20270101` is the `opus` line
//! at 5.7 (the date ignored), `claude-3-5-sonnet` the `sonnet` line at 3.5 (the older order),
//! `gpt-6.2-codex` the `codex` line at 6.2, `gemini-4-flash-preview` the `flash` line at 4.0.
//! Which of the words name the line is decided against the catalog (the longest listed line
//! the words start with), so `gemini-3.5-flash-lite` is the `flash-lite` line and
//! `gpt-5.1-codex-max` the `codex` line with `max` beyond it.

/// A family of model names with a naming rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rule {
    /// Anthropic: `claude-{line}-N[-M]` and the older `claude-N[-M]-{line}`.
    Claude,
    /// OpenAI: `gpt-N[.M][-{line}]`.
    Gpt,
    /// Google: `gemini-N[.M]-{line}`.
    Gemini,
}

impl Rule {
    /// The family's name, as names start with it.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Gpt => "gpt",
            Self::Gemini => "gemini",
        }
    }
}

/// A name read by its family's naming rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Parsed {
    /// The family whose rule read it.
    pub(super) rule: Rule,
    /// Major and minor version (`5-5` and `5.5` are (5, 5); `5` is (5, 0)).
    pub(super) version: (u32, u32),
    /// The words naming the line and any after it, in order (`flash`, `lite`; `codex`, `max`).
    pub(super) words: Vec<String>,
    /// The words read as qualifiers, which name no other model: dates and build numbers,
    /// `v1`, `latest`, `preview`, `exp`.
    pub(super) qualifiers: Vec<String>,
}

impl Parsed {
    /// The version as people write it (`5.7`).
    pub(super) fn version(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }
}

/// Words that qualify a model name without naming another model.
const QUALIFIERS: &[&str] = &["latest", "preview", "exp", "experimental"];

/// Whether `word` qualifies a name: a qualifier word, a number (a date or build), or `vN`.
fn is_qualifier(word: &str) -> bool {
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    QUALIFIERS.contains(&word) || numeric(word) || word.strip_prefix('v').is_some_and(numeric)
}

/// A version word: `N` or `N.M` (at most three digits each, so that a date is none).
fn version(word: &str) -> Option<(u32, u32)> {
    let number = |s: &str| {
        (!s.is_empty() && s.len() <= 3 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match word.split_once('.') {
        Some((major, minor)) => Some((number(major)?, number(minor)?)),
        None => Some((number(word)?, 0)),
    }
}

/// A minor version written as a word of its own (`claude-opus-4-5`): one or two digits.
fn minor(word: &str) -> Option<u32> {
    (matches!(word.len(), 1 | 2) && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
}

/// Reads a lowercase lookup key by its family's naming rule; `None` when no rule reads it.
pub(super) fn parse(key: &str) -> Option<Parsed> {
    let tokens: Vec<&str> = key.split('-').collect();
    let is_word = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_lowercase());
    let (rule, version, mut line, rest): (Rule, (u32, u32), Vec<&str>, &[&str]) =
        match tokens.as_slice() {
            ["claude", word, major, rest @ ..] if is_word(word) => {
                let (major, minor_at) = (version(major)?, usize::from(!major.contains('.')));
                match rest
                    .first()
                    .copied()
                    .and_then(minor)
                    .filter(|_| minor_at == 1)
                {
                    Some(m) => (Rule::Claude, (major.0, m), vec![*word], &rest[1..]),
                    None => (Rule::Claude, major, vec![*word], rest),
                }
            }
            ["claude", major, rest @ ..] => {
                let major = version(major)?;
                let (version, rest) = match rest.first().copied().and_then(minor) {
                    Some(m) if major.1 == 0 => ((major.0, m), &rest[1..]),
                    _ => (major, rest),
                };
                let (word, rest) = rest.split_first()?;
                is_word(word).then_some(())?;
                (Rule::Claude, version, vec![*word], rest)
            }
            ["gpt", major, rest @ ..] => (Rule::Gpt, version(major)?, Vec::new(), rest),
            ["gemini", major, rest @ ..] => (Rule::Gemini, version(major)?, Vec::new(), rest),
            _ => return None,
        };
    let (qualifiers, words): (Vec<&str>, Vec<&str>) =
        rest.iter().copied().partition(|w| is_qualifier(w));
    line.extend(words);
    if line.iter().any(|w| w.is_empty()) {
        return None;
    }
    Some(Parsed {
        rule,
        version,
        words: line.into_iter().map(str::to_string).collect(),
        qualifiers: qualifiers.into_iter().map(str::to_string).collect(),
    })
}

/// Provider words that cloud catalogs put before a model name with a dot
/// (`anthropic.claude-…` on Bedrock, optionally after a region: `us.anthropic.claude-…`).
const DOTTED_PROVIDERS: &[&str] = &[
    "anthropic",
    "meta",
    "mistral",
    "amazon",
    "cohere",
    "deepseek",
    "qwen",
    "openai",
    "google",
];

/// The longest region word before a dotted provider (`us.`, `eu.`, `apac.`, `global.`,
/// `us-gov.` in Bedrock's inference-profile ids).
const REGION_LEN: usize = 6;

/// Claude Code's tag for a model's 1M-token context (`claude-sonnet-4-6[1m]`).
const ONE_MILLION_TAG: &str = "[1m]";

/// The lookup key of a model name, and what was changed to get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModelKey {
    /// Lowercased, everything up to the last `/` dropped, a Bedrock provider prefix, a runner
    /// tag (`:…`) or version (`@…`) and Claude Code's `[1m]` tag dropped.
    pub(crate) full: String,
    /// `key` without the suffixes that name no other model (`-latest`, `-v1`).
    pub(crate) bare: String,
    /// Each change, in order, as the resolution text names it.
    pub(crate) changes: Vec<String>,
    /// Whether the name carried `[1m]`.
    pub(crate) one_million: bool,
}

impl ModelKey {
    /// The key of `name`.
    pub(crate) fn of(name: &str) -> Self {
        let mut changes = Vec::new();
        let mut key = name.trim();
        if let Some(slash) = key.rfind('/') {
            changes.push(format!("prefix `{}` stripped", &key[..=slash]));
            key = &key[slash + 1..];
        }
        let one_million = key.len() >= ONE_MILLION_TAG.len()
            && key[key.len() - ONE_MILLION_TAG.len()..].eq_ignore_ascii_case(ONE_MILLION_TAG);
        if one_million {
            key = &key[..key.len() - ONE_MILLION_TAG.len()];
            changes.push(format!(
                "Claude Code's 1M-context tag `{ONE_MILLION_TAG}` read"
            ));
        }
        if let Some(cut) = key.find([':', '@']) {
            changes.push(format!("tag `{}` stripped", &key[cut..]));
            key = &key[..cut];
        }
        let lower = key.to_lowercase();
        let mut key = lower.as_str();
        let mut dotted = key.split('.');
        let first = dotted.next().unwrap_or_default();
        let second = dotted.next().unwrap_or_default();
        let provider_at = if DOTTED_PROVIDERS.contains(&first) {
            Some(first.len() + 1)
        } else if first.len() <= REGION_LEN && DOTTED_PROVIDERS.contains(&second) {
            Some(first.len() + second.len() + 2)
        } else {
            None
        };
        if let Some(cut) = provider_at.filter(|&cut| cut < key.len()) {
            changes.push(format!("prefix `{}` stripped", &key[..cut]));
            key = &key[cut..];
        }
        if name.chars().any(char::is_uppercase) {
            changes.push("case ignored".into());
        }
        let mut bare = key;
        while let Some((head, last)) = bare.rsplit_once('-') {
            let named =
                last == "latest" || last.strip_prefix('v').is_some_and(|n| minor(n).is_some());
            if !named || head.is_empty() {
                break;
            }
            bare = head;
        }
        Self {
            full: key.to_string(),
            bare: bare.to_string(),
            changes,
            one_million,
        }
    }

    /// The key and its changes, as the resolution text opens.
    pub(crate) fn said(&self) -> String {
        if self.changes.is_empty() {
            format!("`{}`", self.full)
        } else {
            format!("`{}` ({})", self.full, self.changes.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(key: &str) -> Option<(Rule, (u32, u32), String, String)> {
        parse(key).map(|p| (p.rule, p.version, p.words.join("-"), p.qualifiers.join("-")))
    }

    #[test]
    fn each_rule_reads_line_version_and_qualifiers() {
        let cases = [
            (
                "claude-opus-5-7-20270101",
                Rule::Claude,
                (5, 7),
                "opus",
                "20270101",
            ),
            (
                "claude-opus-4-20250514",
                Rule::Claude,
                (4, 0),
                "opus",
                "20250514",
            ),
            ("claude-sonnet-5-1-v1", Rule::Claude, (5, 1), "sonnet", "v1"),
            ("claude-opus-4.5", Rule::Claude, (4, 5), "opus", ""),
            (
                "claude-3-5-sonnet-20241022",
                Rule::Claude,
                (3, 5),
                "sonnet",
                "20241022",
            ),
            (
                "claude-3-opus-latest",
                Rule::Claude,
                (3, 0),
                "opus",
                "latest",
            ),
            ("gpt-6.2-codex", Rule::Gpt, (6, 2), "codex", ""),
            (
                "gpt-4.1-mini-2025-04-14",
                Rule::Gpt,
                (4, 1),
                "mini",
                "2025-04-14",
            ),
            ("gpt-4-0613", Rule::Gpt, (4, 0), "", "0613"),
            (
                "gemini-4-flash-preview",
                Rule::Gemini,
                (4, 0),
                "flash",
                "preview",
            ),
            (
                "gemini-2.5-flash-lite-preview-09-2025",
                Rule::Gemini,
                (2, 5),
                "flash-lite",
                "preview-09-2025",
            ),
        ];
        for (key, rule, version, words, qualifiers) in cases {
            let expected = Some((rule, version, words.to_string(), qualifiers.to_string()));
            assert_eq!(read(key), expected, "{key}");
        }
        for none in [
            "gpt-4o",
            "gpt-oss-120b",
            "claude-2",
            "gemini-exp-1206",
            "foo-1",
            "o3",
        ] {
            assert_eq!(read(none), None, "{none}");
        }
    }

    #[test]
    fn a_key_drops_prefixes_tags_and_suffixes_and_says_so() {
        let key = ModelKey::of("us.anthropic.claude-sonnet-5-1-v1:0");
        assert_eq!(
            (key.full.as_str(), key.bare.as_str()),
            ("claude-sonnet-5-1-v1", "claude-sonnet-5-1")
        );
        assert_eq!(
            key.changes,
            ["tag `:0` stripped", "prefix `us.anthropic.` stripped"]
        );
        let global = ModelKey::of("global.anthropic.claude-sonnet-4-5-20250929-v1:0");
        assert_eq!(global.bare, "claude-sonnet-4-5-20250929");
        let key = ModelKey::of("claude-opus-5-5[1M]");
        assert!(key.one_million);
        assert_eq!(key.full, "claude-opus-5-5");
        assert_eq!(
            ModelKey::of("gpt-daybreak-blue-latest").bare,
            "gpt-daybreak-blue"
        );
        assert_eq!(ModelKey::of("claude-opus-4-1").bare, "claude-opus-4-1");
    }
}
