//! Writes the synthetic conversations in `data/conversations/`: `cargo run --release --example
//! generate`.
//!
//! Every file is generated from the word lists and templates below by a seeded splitmix64 PRNG,
//! so the output is byte-identical on every run and every machine. Nothing here is recorded or
//! copied: the "projects", people, pages and tool outputs are made up. Each file is parsed and
//! validated with the library before it is written, its name must end with its message count,
//! and the run warns about any file that `data/README.md` does not describe.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value, json};

/// The seed every file's generator is derived from (with the file's name).
const SEED: u64 = 0x00C0_FFEE_2024_0006;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    let folder = root.join("conversations");
    std::fs::create_dir_all(&folder).expect("data/conversations can be created");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap_or_default();
    let mut total_bytes = 0;
    for spec in SPECS {
        let mut rng = Rng::new(SEED ^ fnv1a(spec.name));
        let value = (spec.build)(&mut rng);
        let mut bytes = serde_json::to_vec_pretty(&value).expect("a Value always serializes");
        bytes.push(b'\n');
        let conversation = ctxcompact::format::parse(&bytes, None)
            .unwrap_or_else(|err| panic!("{}: does not parse: {err}", spec.name));
        let problems = ctxcompact::validate(&conversation);
        assert!(problems.is_empty(), "{}: {}", spec.name, problems[0]);
        std::fs::write(folder.join(spec.name), &bytes).expect("data/conversations is writable");
        total_bytes += bytes.len();
        let messages = conversation.messages.len();
        let named = spec.name.trim_end_matches(".json").rsplit('-').next();
        assert_eq!(
            named.and_then(|n| n.parse().ok()),
            Some(messages),
            "{}: the name must end with the message count",
            spec.name
        );
        println!(
            "{:<34} {:>5} messages {:>9} bytes  {}",
            spec.name,
            messages,
            bytes.len(),
            conversation.format.as_str()
        );
        if !readme.contains(spec.name) {
            println!("  note: data/README.md does not describe {}", spec.name);
        }
    }
    println!("{} files, {total_bytes} bytes", SPECS.len());
}

// ---------------------------------------------------------------------------------------------
// Randomness: splitmix64 (Steele, Lea and Flood 2014), the whole of it.

/// A splitmix64 generator: tiny, fast and fully determined by its seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).expect("below n fits usize")
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `pct` percent.
    fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn word(&mut self, items: &[&'static str]) -> &'static str {
        items[self.below(items.len())]
    }

    /// An independent generator for one sub-task, so changing one part leaves others alone.
    fn fork(&mut self) -> Rng {
        Rng::new(self.next())
    }

    /// `n` characters from `alphabet`.
    fn string(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n).map(|_| char::from(*self.pick(alphabet))).collect()
    }
}

/// FNV-1a, to derive a seed from a name.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xCBF2_9CE4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01B3)
    })
}

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const HEX: &[u8] = b"0123456789abcdef";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// ---------------------------------------------------------------------------------------------
// Word lists, written for this generator.

/// The words of one subject: what prose about it is made of.
struct Vocab {
    nouns: &'static [&'static str],
    verbs: &'static [&'static str],
    adjectives: &'static [&'static str],
}

const SOFTWARE: Vocab = Vocab {
    nouns: &[
        "ledger",
        "account",
        "invoice",
        "journal",
        "entry",
        "balance",
        "currency",
        "rate",
        "schedule",
        "report",
        "export",
        "import",
        "cache",
        "session",
        "token",
        "config",
        "parser",
        "index",
        "queue",
        "worker",
        "batch",
        "snapshot",
        "audit",
        "policy",
        "tenant",
        "webhook",
        "payload",
        "record",
        "cursor",
        "shard",
        "migration",
        "handler",
        "request",
        "response",
        "timestamp",
        "checksum",
        "retry",
        "limit",
        "buffer",
        "stream",
    ],
    verbs: &[
        "load",
        "parse",
        "render",
        "validate",
        "merge",
        "split",
        "compute",
        "apply",
        "flush",
        "fetch",
        "store",
        "resolve",
        "normalize",
        "reconcile",
        "schedule",
        "encode",
        "decode",
        "sync",
        "prune",
        "rebuild",
        "serialize",
        "batch",
        "dedupe",
        "index",
        "rotate",
    ],
    adjectives: &[
        "stale",
        "pending",
        "active",
        "partial",
        "nested",
        "empty",
        "duplicate",
        "missing",
        "invalid",
        "rounded",
        "cached",
        "archived",
        "concurrent",
        "legacy",
        "optional",
        "expired",
        "sorted",
        "unbounded",
        "shared",
        "temporary",
    ],
};

const GARDENING: Vocab = Vocab {
    nouns: &[
        "tomato",
        "seedling",
        "compost",
        "mulch",
        "bed",
        "trellis",
        "root",
        "leaf",
        "soil",
        "pepper",
        "basil",
        "watering can",
        "frost",
        "greenhouse",
        "pot",
        "drainage",
        "seed",
        "pruning cut",
        "cucumber",
        "raised bed",
        "hedge",
        "bulb",
        "lawn",
        "worm bin",
    ],
    verbs: &[
        "water",
        "prune",
        "transplant",
        "feed",
        "cover",
        "rotate",
        "harden off",
        "stake",
        "thin",
        "divide",
        "mulch",
        "sow",
        "harvest",
        "loosen",
        "shade",
        "pinch",
    ],
    adjectives: &[
        "leggy",
        "yellowing",
        "shallow",
        "sandy",
        "heavy",
        "damp",
        "sunny",
        "sheltered",
        "young",
        "root-bound",
        "wilted",
        "healthy",
        "compacted",
        "acidic",
        "frost-tender",
    ],
};

const COOKING: Vocab = Vocab {
    nouns: &[
        "dough",
        "sauce",
        "stock",
        "pan",
        "oven",
        "onion",
        "lentil",
        "rice",
        "crust",
        "glaze",
        "marinade",
        "skillet",
        "batter",
        "spice mix",
        "broth",
        "loaf",
        "custard",
        "vinaigrette",
        "dumpling",
        "roux",
        "starter",
        "braise",
        "stew",
        "noodle",
    ],
    verbs: &[
        "simmer", "whisk", "fold", "knead", "season", "reduce", "toast", "rest", "proof", "sear",
        "deglaze", "blanch", "strain", "chill", "temper", "roast",
    ],
    adjectives: &[
        "glossy",
        "tender",
        "crisp",
        "thick",
        "runny",
        "bitter",
        "smoky",
        "bland",
        "sticky",
        "golden",
        "dense",
        "airy",
        "salty",
        "caramelized",
        "lumpy",
    ],
};

const TRAVEL: Vocab = Vocab {
    nouns: &[
        "itinerary",
        "train pass",
        "ferry",
        "hostel",
        "layover",
        "visa",
        "museum",
        "market",
        "backpack",
        "hiking trail",
        "border crossing",
        "night bus",
        "guesthouse",
        "day trip",
        "rail line",
        "harbor",
        "old town",
        "ticket",
        "booking",
        "currency exchange",
    ],
    verbs: &[
        "book",
        "pack",
        "reserve",
        "explore",
        "compare",
        "cancel",
        "reroute",
        "budget",
        "visit",
        "schedule",
        "extend",
        "split",
        "walk",
        "photograph",
    ],
    adjectives: &[
        "crowded",
        "quiet",
        "affordable",
        "remote",
        "seasonal",
        "overnight",
        "refundable",
        "scenic",
        "rainy",
        "flexible",
        "direct",
        "coastal",
        "mountainous",
    ],
};

const ENERGY: Vocab = Vocab {
    nouns: &[
        "battery",
        "cathode",
        "anode",
        "electrolyte",
        "cell",
        "charge cycle",
        "inverter",
        "grid",
        "heat pump",
        "solar array",
        "storage site",
        "separator",
        "capacity",
        "load curve",
        "substation",
        "transmission line",
        "pilot plant",
        "recycling stream",
        "supply chain",
        "thermal runaway",
        "cost curve",
        "duty cycle",
    ],
    verbs: &[
        "store",
        "discharge",
        "degrade",
        "balance",
        "recycle",
        "stabilize",
        "scale",
        "measure",
        "forecast",
        "curtail",
        "dispatch",
        "retrofit",
        "certify",
        "model",
    ],
    adjectives: &[
        "solid-state",
        "sodium-based",
        "grid-scale",
        "residential",
        "intermittent",
        "seasonal",
        "high-density",
        "low-cost",
        "modular",
        "experimental",
        "regional",
        "peak",
    ],
};

/// Sentence templates: `{n}`, `{n2}`, `{n3}` nouns, `{v}`, `{v2}` verbs, `{a}`, `{a2}` adjectives.
const SENTENCES: &[&str] = &[
    "The {a} {n} tends to {v} the {n2} when the {n3} is {a2}.",
    "You can {v} the {n} first, then {v2} the {n2}.",
    "It helps to {v} each {n} separately, so the {n2} stays {a}.",
    "If the {n} looks {a}, {v} it again and check the {n2}.",
    "A {a} {n} and a {a2} {n2} rarely behave the same way.",
    "The main reason is that every {n} has to {v} its own {n2}.",
    "Try not to {v} the {n} too early; the {n2} will settle on its own.",
    "Most of the trouble comes from a {a} {n} next to the {n2}.",
    "In practice, people {v} the {n} once and then leave the {n2} alone.",
    "There is no single rule here, but a {a} {n} is usually the safer choice.",
    "Keep an eye on the {n2}, because a {a} {n} can hide it for a while.",
    "When the {n} is {a}, it is better to {v} the {n2} than to {v2} it.",
    "Nobody agrees on how often to {v} the {n}, and that is fine.",
    "A good test is whether the {n} still feels {a} after you {v} the {n2}.",
    "The {n} matters less than the {n2}, at least at this stage.",
    "Both options {v} the {n}, but only one keeps the {n2} {a}.",
    "This is where a {a2} {n3} makes the difference.",
    "Over a few weeks the {n} will {v} the {n2} without much help.",
    "Write down what you did to the {n}; next time you will {v} it faster.",
    "The cheapest fix is to {v} the {n2} and wait.",
    "Some guides say to {v} the {n} daily, which is more than most need.",
    "Once the {n} is {a}, the rest of the {n2} follows.",
];

const QUESTIONS: &[&str] = &[
    "How should I {v} a {a} {n}?",
    "What is the best way to {v} the {n} without a {n2}?",
    "Can you explain why my {n} keeps getting {a}?",
    "Is it worth it to {v} the {n} every week, or is that overkill?",
    "Compare a {a} {n} with a {a2} {n2} for me.",
    "What would you do with a {a} {n} and not much time?",
    "Give me a short plan to {v} the {n} this weekend.",
    "Why does everyone say to {v} the {n2} before the {n}?",
    "I tried to {v} the {n} and it went {a}. What went wrong?",
    "Any tips for a beginner who wants to {v} a {n}?",
];

const OPENERS: &[&str] = &[
    "Good question.",
    "Short answer: it depends on the {n}.",
    "Here is how I would approach it.",
    "There are a few things going on.",
    "Let me break that down.",
    "That usually comes down to the {n2}.",
    "Sure.",
    "It is a common problem.",
];

const FIRST_NAMES: &[&str] = &[
    "Ada", "Bram", "Chidi", "Dana", "Eero", "Fatima", "Goran", "Hana", "Ines", "Jonas", "Kaito",
    "Lena", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tamar",
];
const LAST_NAMES: &[&str] = &[
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Tanaka",
    "Novak",
    "Alvarez",
    "Brennan",
    "Costa",
    "Dahl",
    "Ekwueme",
    "Fischer",
    "Haddad",
    "Iversen",
    "Kowalski",
    "Marsh",
    "Quirke",
];

fn fill(rng: &mut Rng, template: &str, vocab: &Vocab) -> String {
    let mut out = template.to_string();
    for (key, list) in [
        ("{n3}", vocab.nouns),
        ("{n2}", vocab.nouns),
        ("{n}", vocab.nouns),
        ("{v2}", vocab.verbs),
        ("{v}", vocab.verbs),
        ("{a2}", vocab.adjectives),
        ("{a}", vocab.adjectives),
    ] {
        while let Some(at) = out.find(key) {
            let word = *rng.pick(list);
            out.replace_range(at..at + key.len(), word);
        }
    }
    capitalize(&articles(&out))
}

/// "a" before a vowel becomes "an".
fn articles(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let mut out = Vec::with_capacity(words.len());
    for (i, word) in words.iter().enumerate() {
        let vowel = words
            .get(i + 1)
            .and_then(|next| next.chars().next())
            .is_some_and(|c| "aeiouAEIOU".contains(c));
        out.push(match *word {
            "a" if vowel => "an",
            "A" if vowel => "An",
            other => other,
        });
    }
    out.join(" ")
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn sentence(rng: &mut Rng, vocab: &Vocab) -> String {
    let template = *rng.pick(SENTENCES);
    fill(rng, template, vocab)
}

fn paragraph(rng: &mut Rng, vocab: &Vocab, sentences: usize) -> String {
    let parts: Vec<String> = (0..sentences).map(|_| sentence(rng, vocab)).collect();
    parts.join(" ")
}

fn paragraph_between(rng: &mut Rng, vocab: &Vocab, lo: usize, hi: usize) -> String {
    let sentences = rng.range(lo, hi);
    paragraph(rng, vocab, sentences)
}

fn question(rng: &mut Rng, vocab: &Vocab) -> String {
    let template = *rng.pick(QUESTIONS);
    fill(rng, template, vocab)
}

/// A chat answer: an opener, paragraphs, sometimes numbered steps or a bullet list.
fn answer(rng: &mut Rng, vocab: &Vocab, size: usize) -> String {
    let opener = *rng.pick(OPENERS);
    let mut out = fill(rng, opener, vocab);
    out.push_str("\n\n");
    out.push_str(&paragraph_between(rng, vocab, 2, 4));
    for _ in 0..size {
        out.push_str("\n\n");
        match rng.below(3) {
            0 => {
                for step in 1..=rng.range(3, 7) {
                    let _ = writeln!(out, "{step}. {}", sentence(rng, vocab));
                }
                out.pop();
            }
            1 => {
                for _ in 0..rng.range(2, 5) {
                    let verb = rng.word(vocab.verbs);
                    let noun = rng.word(vocab.nouns);
                    let _ = writeln!(
                        out,
                        "- **{}** the {noun}: {}",
                        capitalize(verb),
                        sentence(rng, vocab)
                    );
                }
                out.pop();
            }
            _ => out.push_str(&paragraph_between(rng, vocab, 3, 6)),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// A made-up code base: files, code, and what tools print about it.

#[derive(Clone, Copy, PartialEq)]
enum Lang {
    Rust,
    Python,
}

/// A project an agent works on: its name, language and files.
struct Project {
    name: String,
    lang: Lang,
    files: Vec<String>,
    tests: Vec<String>,
}

const PROJECT_NAMES: &[&str] = &[
    "ledgerline",
    "tidepool",
    "quillstack",
    "brambleway",
    "copperfield",
    "nimbusctl",
    "saltmarsh",
    "orchardkit",
    "lanternfs",
    "ridgeback",
];

impl Project {
    fn new(rng: &mut Rng, lang: Lang) -> Self {
        let name = (*rng.pick(PROJECT_NAMES)).to_string();
        let mut nouns: Vec<&str> = SOFTWARE.nouns.to_vec();
        let mut files = Vec::new();
        let mut tests = Vec::new();
        for _ in 0..rng.range(14, 24) {
            let noun = nouns.remove(rng.below(nouns.len()));
            let (file, test) = match lang {
                Lang::Rust => (
                    if rng.chance(30) {
                        format!("src/{noun}/mod.rs")
                    } else {
                        format!("src/{noun}.rs")
                    },
                    format!("tests/{noun}.rs"),
                ),
                Lang::Python => (format!("{name}/{noun}.py"), format!("tests/test_{noun}.py")),
            };
            files.push(file);
            if rng.chance(60) {
                tests.push(test);
            }
        }
        files.sort();
        tests.sort();
        Self {
            name,
            lang,
            files,
            tests,
        }
    }

    fn module_of(path: &str) -> &str {
        let stem = path.rsplit('/').next().unwrap_or(path);
        let stem = stem.split('.').next().unwrap_or(stem);
        if stem == "mod" {
            path.split('/').nth(1).unwrap_or(stem)
        } else {
            stem.trim_start_matches("test_")
        }
    }

    fn any_file(&self, rng: &mut Rng) -> String {
        rng.pick(&self.files).clone()
    }

    fn test_name(&self, rng: &mut Rng) -> String {
        let noun = rng.word(SOFTWARE.nouns);
        let verb = rng.word(SOFTWARE.verbs);
        let adjective = rng.word(SOFTWARE.adjectives);
        let case = match rng.below(4) {
            0 => format!("{verb}_keeps_{adjective}_{noun}"),
            1 => format!("{verb}_rejects_{adjective}_{noun}"),
            2 => format!("{noun}_{verb}_is_idempotent"),
            _ => format!("{adjective}_{noun}_survives_{verb}"),
        };
        match self.lang {
            Lang::Rust => format!("{noun}::tests::{case}"),
            Lang::Python => format!("test_{case}"),
        }
    }
}

fn camel(word: &str) -> String {
    word.split([' ', '_', '-']).map(capitalize).collect()
}

fn ident(rng: &mut Rng) -> String {
    format!(
        "{}_{}",
        rng.word(SOFTWARE.adjectives),
        rng.word(SOFTWARE.nouns)
    )
    .replace(' ', "_")
}

fn function_name(rng: &mut Rng) -> String {
    format!("{}_{}", rng.word(SOFTWARE.verbs), rng.word(SOFTWARE.nouns))
}

/// The source of one file at one version: deterministic in (path, version).
fn source(project: &Project, path: &str, version: u64) -> Vec<String> {
    let mut rng = Rng::new(fnv1a(path) ^ version.wrapping_mul(0x2545_F491_4F6C_DD1D));
    match project.lang {
        Lang::Rust => rust_source(&mut rng, project, path),
        Lang::Python => python_source(&mut rng, project, path),
    }
}

fn rust_source(rng: &mut Rng, project: &Project, path: &str) -> Vec<String> {
    let module = Project::module_of(path);
    let ty = camel(module);
    let mut lines = vec![format!("//! {}", sentence(rng, &SOFTWARE)), String::new()];
    for _ in 0..rng.range(2, 5) {
        let other = Project::module_of(&project.any_file(rng)).to_string();
        lines.push(format!("use crate::{other}::{};", camel(&other)));
    }
    lines.push("use std::collections::BTreeMap;".into());
    lines.push(String::new());
    lines.push(format!("/// {}", sentence(rng, &SOFTWARE)));
    lines.push("#[derive(Debug, Clone, PartialEq)]".into());
    lines.push(format!("pub struct {ty} {{"));
    let fields: Vec<String> = (0..rng.range(2, 5)).map(|_| ident(rng)).collect();
    for field in &fields {
        let kind = *rng.pick(&[
            "u64",
            "String",
            "Vec<Entry>",
            "Option<Rate>",
            "BTreeMap<String, u64>",
            "bool",
        ]);
        lines.push(format!("    pub {field}: {kind},"));
    }
    lines.push("}".into());
    lines.push(String::new());
    lines.push(format!("impl {ty} {{"));
    for _ in 0..rng.range(2, 6) {
        let name = function_name(rng);
        let arg = ident(rng);
        let field = rng.pick(&fields).clone();
        lines.push(format!("    /// {}", sentence(rng, &SOFTWARE)));
        lines.push(format!(
            "    pub fn {name}(&self, {arg}: &{}) -> Result<{}, Error> {{",
            camel(rng.word(SOFTWARE.nouns)),
            camel(rng.word(SOFTWARE.nouns))
        ));
        for _ in 0..rng.range(2, 7) {
            let var = ident(rng);
            let line = match rng.below(6) {
                0 => format!(
                    "        let {var} = self.{field}.{}(&{arg})?;",
                    rng.word(SOFTWARE.verbs)
                ),
                1 => format!(
                    "        if {arg}.{}.is_empty() {{\n            return Err(Error::{}({arg}.id));\n        }}",
                    ident(rng),
                    camel(&ident(rng))
                ),
                2 => format!(
                    "        for {var} in self.{field}.iter().filter(|e| e.{}) {{\n            total += {var}.{};\n        }}",
                    ident(rng),
                    ident(rng)
                ),
                3 => format!("        // {}", sentence(rng, &SOFTWARE)),
                4 => format!(
                    "        let {var} = match {arg}.{} {{\n            Some(v) => v,\n            None => return Ok(Default::default()),\n        }};",
                    ident(rng)
                ),
                _ => format!(
                    "        debug_assert!({arg}.{} <= {});",
                    ident(rng),
                    rng.range(2, 4096)
                ),
            };
            lines.extend(line.lines().map(String::from));
        }
        lines.push(format!(
            "        Ok({}::from({arg}))",
            camel(rng.word(SOFTWARE.nouns))
        ));
        lines.push("    }".into());
        lines.push(String::new());
    }
    lines.pop();
    lines.push("}".into());
    if rng.chance(60) {
        lines.push(String::new());
        lines.push("#[cfg(test)]".into());
        lines.push("mod tests {".into());
        lines.push("    use super::*;".into());
        for _ in 0..rng.range(2, 6) {
            let case = project.test_name(rng);
            let case = case.rsplit("::").next().unwrap_or(&case).to_string();
            lines.push(String::new());
            lines.push("    #[test]".into());
            lines.push(format!("    fn {case}() {{"));
            lines.push(format!("        let {} = {ty}::default();", ident(rng)));
            lines.push(format!(
                "        assert_eq!({}(&input), {});",
                function_name(rng),
                rng.range(0, 99)
            ));
            lines.push("    }".into());
        }
        lines.push("}".into());
    }
    lines
}

fn python_source(rng: &mut Rng, project: &Project, path: &str) -> Vec<String> {
    let module = Project::module_of(path);
    let ty = camel(module);
    let mut lines = vec![
        format!("\"\"\"{}\"\"\"", sentence(rng, &SOFTWARE)),
        String::new(),
    ];
    lines.push("from __future__ import annotations".into());
    lines.push(String::new());
    lines.push("from dataclasses import dataclass, field".into());
    for _ in 0..rng.range(1, 4) {
        let other = Project::module_of(&project.any_file(rng)).to_string();
        lines.push(format!(
            "from {}.{other} import {}",
            project.name,
            camel(&other)
        ));
    }
    lines.push(String::new());
    lines.push(String::new());
    lines.push("@dataclass".into());
    lines.push(format!("class {ty}:"));
    lines.push(format!("    \"\"\"{}\"\"\"", sentence(rng, &SOFTWARE)));
    lines.push(String::new());
    let fields: Vec<String> = (0..rng.range(2, 5)).map(|_| ident(rng)).collect();
    for name in &fields {
        let kind = *rng.pick(&[
            "int = 0",
            "str = \"\"",
            "list[Entry] = field(default_factory=list)",
            "Rate | None = None",
            "bool = False",
        ]);
        lines.push(format!("    {name}: {kind}"));
    }
    for _ in 0..rng.range(2, 6) {
        let name = function_name(rng);
        let arg = ident(rng);
        let field = rng.pick(&fields).clone();
        lines.push(String::new());
        lines.push(format!(
            "    def {name}(self, {arg}: {}) -> {}:",
            camel(rng.word(SOFTWARE.nouns)),
            camel(rng.word(SOFTWARE.nouns))
        ));
        lines.push(format!("        \"\"\"{}\"\"\"", sentence(rng, &SOFTWARE)));
        for _ in 0..rng.range(2, 8) {
            let var = ident(rng);
            let line = match rng.below(5) {
                0 => format!(
                    "        {var} = self.{field}.{}({arg})",
                    rng.word(SOFTWARE.verbs)
                ),
                1 => format!(
                    "        if not {arg}.{}:\n            raise ValueError(f\"{} {{{arg}.id}}\")",
                    ident(rng),
                    sentence(rng, &SOFTWARE).trim_end_matches('.')
                ),
                2 => format!(
                    "        for {var} in self.{field}:\n            if {var}.{}:\n                total += {var}.{}",
                    ident(rng),
                    ident(rng)
                ),
                3 => format!("        # {}", sentence(rng, &SOFTWARE)),
                _ => format!(
                    "        assert {arg}.{} <= {}",
                    ident(rng),
                    rng.range(2, 4096)
                ),
            };
            lines.extend(line.lines().map(String::from));
        }
        lines.push(format!(
            "        return {}.from_{}({arg})",
            camel(rng.word(SOFTWARE.nouns)),
            rng.word(SOFTWARE.nouns).replace(' ', "_")
        ));
    }
    lines
}

/// `cat -n`-style numbered lines, as file-reading tools print them.
fn numbered(lines: &[String], from: usize) -> String {
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let _ = writeln!(out, "{:>6}\t{line}", from + i + 1);
    }
    out
}

fn grep_output(rng: &mut Rng, project: &Project) -> String {
    let mut out = String::new();
    for _ in 0..rng.range(0, 25) {
        let path = project.any_file(rng);
        let lines = source(project, &path, 0);
        let at = rng.below(lines.len());
        let _ = writeln!(out, "{path}:{}:{}", at + 1, lines[at]);
    }
    if out.is_empty() {
        out.push_str("No matches found");
    }
    out
}

fn list_dir(project: &Project) -> String {
    let mut out = format!("{}/\n", project.name);
    let manifest = match project.lang {
        Lang::Rust => ["Cargo.toml", "Cargo.lock", "README.md"],
        Lang::Python => ["pyproject.toml", "uv.lock", "README.md"],
    };
    for file in manifest {
        let _ = writeln!(out, "  {file}");
    }
    for path in project.files.iter().chain(&project.tests) {
        let _ = writeln!(out, "  {path}");
    }
    out
}

/// A test run: passing, or failing with the failures' output.
fn test_output(rng: &mut Rng, project: &Project, failures: usize) -> String {
    let count = rng.range(10, 50);
    match project.lang {
        Lang::Rust => cargo_test(rng, project, count, failures),
        Lang::Python => pytest(rng, project, count, failures),
    }
}

/// What `cargo test` prints.
fn cargo_test(rng: &mut Rng, project: &Project, count: usize, failures: usize) -> String {
    let names: Vec<String> = (0..count).map(|_| project.test_name(rng)).collect();
    let failed: Vec<&String> = names.iter().take(failures).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "   Compiling {} v0.{}.{} (/home/dev/{})",
        project.name,
        rng.range(1, 9),
        rng.range(0, 20),
        project.name
    );
    let _ = writeln!(
        out,
        "    Finished `test` profile [unoptimized + debuginfo] target(s) in {}.{:02}s",
        rng.range(2, 40),
        rng.below(100)
    );
    let _ = writeln!(
        out,
        "     Running unittests src/lib.rs (target/debug/deps/{}-{})\n",
        project.name,
        rng.string(HEX, 16)
    );
    let _ = writeln!(out, "running {count} tests");
    for name in &names {
        let verdict = if failed.contains(&name) {
            "FAILED"
        } else {
            "ok"
        };
        let _ = writeln!(out, "test {name} ... {verdict}");
    }
    if failed.is_empty() {
        let _ = writeln!(
            out,
            "\ntest result: ok. {count} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.{:02}s",
            rng.below(100)
        );
        return out;
    }
    out.push_str("\nfailures:\n");
    for name in &failed {
        let file = project.any_file(rng);
        let _ = write!(
            out,
            "\n---- {name} stdout ----\n\nthread '{name}' panicked at {file}:{}:{}:\nassertion `left == right` failed\n  left: {}\n right: {}\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
            rng.range(10, 400),
            rng.range(5, 30),
            rng.range(0, 50),
            rng.range(0, 50)
        );
    }
    out.push_str("\n\nfailures:\n");
    for name in &failed {
        let _ = writeln!(out, "    {name}");
    }
    let _ = writeln!(
        out,
        "\ntest result: FAILED. {} passed; {} failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.{:02}s\n\nerror: test failed, to rerun pass `--lib`",
        count - failed.len(),
        failed.len(),
        rng.below(100)
    );
    out
}

/// What `pytest` prints.
fn pytest(rng: &mut Rng, project: &Project, count: usize, failures: usize) -> String {
    let names: Vec<String> = (0..count).map(|_| project.test_name(rng)).collect();
    let failed: Vec<&String> = names.iter().take(failures).collect();
    let mut out = String::new();
    out.push_str(
        "============================= test session starts ==============================\n",
    );
    let _ = writeln!(
        out,
        "platform linux -- Python 3.12.{}, pytest-8.{}.0, pluggy-1.5.0\nrootdir: /home/dev/{}\ncollected {count} items\n",
        rng.range(1, 8),
        rng.range(0, 3),
        project.name
    );
    let mut done = 0;
    for test in &project.tests {
        let n = rng.range(4, 30).min(count - done);
        if n == 0 {
            break;
        }
        done += n;
        let dots: String = (0..n)
            .map(|i| {
                if i < failures && rng.chance(30) {
                    'F'
                } else {
                    '.'
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "{test} {dots:<52} [{:>3}%]",
            (done * 100 / count).min(100)
        );
    }
    if failed.is_empty() {
        let _ = writeln!(
            out,
            "\n============================== {count} passed in {}.{:02}s ==============================",
            rng.range(1, 30),
            rng.below(100)
        );
        return out;
    }
    out.push_str(
        "\n=================================== FAILURES ===================================\n",
    );
    for name in &failed {
        let test = rng.pick(&project.tests).clone();
        let _ = write!(
            out,
            "_______________________________ {name} _______________________________\n\n    def {name}():\n        {} = {}()\n>       assert {}.{} == {}\nE       AssertionError: assert {} == {}\n\n{test}:{}: AssertionError\n",
            ident(rng),
            function_name(rng),
            ident(rng),
            ident(rng),
            rng.range(0, 50),
            rng.range(0, 50),
            rng.range(0, 50),
            rng.range(5, 300)
        );
    }
    out.push_str(
        "=========================== short test summary info ============================\n",
    );
    for name in &failed {
        let _ = writeln!(
            out,
            "FAILED {}::{name} - AssertionError",
            rng.pick(&project.tests)
        );
    }
    let _ = writeln!(
        out,
        "========================= {} failed, {} passed in {}.{:02}s =========================",
        failed.len(),
        count - failed.len(),
        rng.range(1, 30),
        rng.below(100)
    );
    out
}

/// A build with errors (Rust) or an import failure (Python).
fn build_errors(rng: &mut Rng, project: &Project) -> String {
    let mut out = String::new();
    match project.lang {
        Lang::Rust => {
            let _ = writeln!(
                out,
                "   Compiling {} v0.{}.0 (/home/dev/{})",
                project.name,
                rng.range(1, 9),
                project.name
            );
            let errors = rng.range(1, 4);
            for _ in 0..errors {
                let file = project.any_file(rng);
                let lines = source(project, &file, 0);
                let at = rng.below(lines.len());
                let _ = write!(
                    out,
                    "error[E0{}]: mismatched types\n  --> {file}:{}:{}\n   |\n{:>3} | {}\n   |     ^^^^^^^ expected `{}`, found `{}`\n\n",
                    rng.pick(&["308", "599", "425", "382", "061"]),
                    at + 1,
                    rng.range(5, 40),
                    at + 1,
                    lines[at],
                    camel(rng.word(SOFTWARE.nouns)),
                    camel(rng.word(SOFTWARE.nouns))
                );
            }
            let _ = writeln!(
                out,
                "error: could not compile `{}` (lib) due to {errors} previous errors",
                project.name
            );
        }
        Lang::Python => {
            let file = project.any_file(rng);
            let _ = write!(
                out,
                "Traceback (most recent call last):\n  File \"/home/dev/{}/{file}\", line {}, in <module>\n    from {}.{} import {}\nImportError: cannot import name '{}' from partially initialized module\n",
                project.name,
                rng.range(1, 30),
                project.name,
                rng.word(SOFTWARE.nouns),
                camel(rng.word(SOFTWARE.nouns)),
                camel(rng.word(SOFTWARE.nouns))
            );
        }
    }
    out
}

fn diff_output(rng: &mut Rng, project: &Project, files: usize) -> String {
    let mut out = String::new();
    for _ in 0..files {
        let path = project.any_file(rng);
        let lines = source(project, &path, 0);
        let at = rng.below(lines.len().saturating_sub(8).max(1));
        let _ = write!(
            out,
            "diff --git a/{path} b/{path}\nindex {}..{} 100644\n--- a/{path}\n+++ b/{path}\n@@ -{},7 +{},8 @@\n",
            rng.string(HEX, 7),
            rng.string(HEX, 7),
            at + 1,
            at + 1
        );
        for (i, line) in lines.iter().skip(at).take(7).enumerate() {
            if i == 3 {
                let _ = writeln!(out, "-{line}");
                let _ = writeln!(
                    out,
                    "+{}",
                    line.replace("self", "&self").replace("Ok(", "Ok(Some(")
                );
                let _ = writeln!(out, "+        // {}", sentence(rng, &SOFTWARE));
            } else {
                let _ = writeln!(out, " {line}");
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The neutral script that renderers turn into either wire format.

/// One tool call and what it returned.
struct Call {
    name: &'static str,
    args: Value,
    output: String,
    is_error: bool,
}

/// A step of a conversation, before it has a wire format.
enum Turn {
    /// A system message (OpenAI: in place; Anthropic: only the first, as top-level `system`).
    System(String),
    /// An OpenAI `developer` message.
    Developer(String),
    /// A user turn, with an optional image.
    User { text: String, image: bool },
    /// An assistant reply, with optional thinking.
    Assistant {
        text: String,
        thinking: Option<String>,
    },
    /// An assistant message with calls (and optional text and thinking), plus the results.
    Round {
        text: Option<String>,
        thinking: Option<String>,
        calls: Vec<Call>,
    },
}

/// A script under construction, counting messages as the target format will.
struct Script {
    turns: Vec<Turn>,
    anthropic: bool,
    messages: usize,
}

impl Script {
    fn new(anthropic: bool) -> Self {
        Self {
            turns: Vec::new(),
            anthropic,
            messages: 0,
        }
    }

    fn push(&mut self, turn: Turn) {
        self.messages += match (&turn, self.anthropic) {
            (Turn::System(_), true) => 0,
            (Turn::Round { .. }, true) => 2,
            (Turn::Round { calls, .. }, false) => 1 + calls.len(),
            (Turn::User { .. }, true) if matches!(self.turns.last(), Some(Turn::Round { .. })) => 0,
            _ => 1,
        };
        self.turns.push(turn);
    }

    fn system(&mut self, text: String) {
        self.push(Turn::System(text));
    }

    fn user(&mut self, text: String) {
        self.push(Turn::User { text, image: false });
    }

    fn assistant(&mut self, text: String) {
        self.push(Turn::Assistant {
            text,
            thinking: None,
        });
    }

    /// A round of a single call.
    fn tool(
        &mut self,
        text: Option<&str>,
        name: &'static str,
        args: Value,
        output: String,
        is_error: bool,
    ) {
        let call = call(name, args, output, is_error);
        self.round(text.map(String::from), vec![call]);
    }

    fn round(&mut self, text: Option<String>, calls: Vec<Call>) {
        self.push(Turn::Round {
            text,
            thinking: None,
            calls,
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Agent tools.

/// A tool an agent can call: its name, description and parameters.
struct Tool {
    name: &'static str,
    description: &'static str,
    params: &'static [(&'static str, &'static str, &'static str)],
}

const CODING_TOOLS: &[Tool] = &[
    Tool {
        name: "read_file",
        description: "Read a file of the workspace, with line numbers.",
        params: &[
            ("path", "string", "Path relative to the workspace root."),
            ("offset", "integer", "First line to read (1-based)."),
            ("limit", "integer", "How many lines to read."),
        ],
    },
    Tool {
        name: "grep",
        description: "Search file contents with a regular expression.",
        params: &[
            ("pattern", "string", "The regular expression."),
            ("path", "string", "Folder or file to search."),
        ],
    },
    Tool {
        name: "list_dir",
        description: "List the files under a folder.",
        params: &[("path", "string", "The folder.")],
    },
    Tool {
        name: "edit_file",
        description: "Replace one exact occurrence of old_text with new_text in a file.",
        params: &[
            ("path", "string", "The file."),
            (
                "old_text",
                "string",
                "Text to replace; must occur exactly once.",
            ),
            ("new_text", "string", "Replacement text."),
        ],
    },
    Tool {
        name: "run_tests",
        description: "Run the test suite, or the tests matching a filter.",
        params: &[("filter", "string", "Only tests whose name contains this.")],
    },
    Tool {
        name: "bash",
        description: "Run a shell command in the workspace and return its output.",
        params: &[("command", "string", "The command line.")],
    },
];

const RESEARCH_TOOLS: &[Tool] = &[
    Tool {
        name: "web_search",
        description: "Search the web; returns titles, addresses and snippets.",
        params: &[("query", "string", "The search query.")],
    },
    Tool {
        name: "fetch_url",
        description: "Fetch a page and return its text.",
        params: &[("url", "string", "The address to fetch.")],
    },
];

const SUPPORT_TOOLS: &[Tool] = &[
    Tool {
        name: "find_customer",
        description: "Look up a customer by email or name.",
        params: &[("query", "string", "Email address or full name.")],
    },
    Tool {
        name: "get_order",
        description: "Get an order with its items and shipments.",
        params: &[("order_id", "string", "The order id, e.g. #W1234567.")],
    },
    Tool {
        name: "update_address",
        description: "Change the shipping address of an order that has not shipped.",
        params: &[
            ("order_id", "string", "The order id."),
            ("address", "string", "The new address, one line."),
        ],
    },
    Tool {
        name: "refund_item",
        description: "Refund one item of a delivered order.",
        params: &[
            ("order_id", "string", "The order id."),
            ("item_id", "string", "The item id."),
            ("reason", "string", "Why."),
        ],
    },
];

fn tool_schema(tool: &Tool) -> Value {
    let mut properties = Map::new();
    for (name, kind, description) in tool.params {
        properties.insert(
            (*name).into(),
            json!({"type": kind, "description": description}),
        );
    }
    let required: Vec<&str> = tool.params.iter().take(1).map(|p| p.0).collect();
    json!({"type": "object", "properties": properties, "required": required})
}

fn openai_tools(tools: &[Tool]) -> Value {
    tools
        .iter()
        .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": tool_schema(t)}}))
        .collect()
}

fn anthropic_tools(tools: &[Tool]) -> Value {
    tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": tool_schema(t)}))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Coding-agent sessions.

/// How a coding session behaves.
#[derive(Clone, Copy)]
struct Coding {
    lang: Lang,
    /// Target message count.
    messages: usize,
    /// Percent of exploration steps that read several files in one parallel round.
    parallel: u64,
    /// Percent of test runs that fail.
    failures: u64,
    /// Percent of edits and commands that fail and are retried.
    errors: u64,
    /// Percent of assistant turns with a thinking block (Anthropic).
    thinking: u64,
    /// Percent of follow-up user turns with text beside the results (Anthropic: merged).
    interjections: u64,
}

fn coding_system(rng: &mut Rng, project: &Project) -> String {
    let lang = match project.lang {
        Lang::Rust => "Rust",
        Lang::Python => "Python",
    };
    let mut out = format!(
        "You are a coding agent working in the `{}` repository ({lang}). You can read and edit files, search, run the tests and run shell commands through the tools you are given.\n\n# Rules\n",
        project.name
    );
    let rules = [
        "Read a file before you edit it, and keep edits small.",
        "Run the tests after every change that could affect them.",
        "Never commit, push or rewrite history unless the user asks.",
        "When a command fails, read its output before you try again.",
        "Prefer the project's own helpers over new dependencies.",
        "Say what you changed and why at the end of each task, in a few lines.",
        "If the request is ambiguous, ask one short question instead of guessing.",
        "Do not print secrets or tokens found in the workspace.",
    ];
    for (i, rule) in rules.iter().enumerate() {
        let _ = writeln!(out, "{}. {rule}", i + 1);
    }
    out.push_str("\n# Project notes\n");
    for _ in 0..rng.range(3, 8) {
        let _ = writeln!(out, "- {}", sentence(rng, &SOFTWARE));
    }
    out
}

fn task(rng: &mut Rng, project: &Project) -> String {
    let noun = rng.word(SOFTWARE.nouns);
    let adjective = rng.word(SOFTWARE.adjectives);
    let verb = rng.word(SOFTWARE.verbs);
    let file = project.any_file(rng);
    let templates = [
        format!(
            "The {noun} {verb} step drops {adjective} entries. Can you find out why and fix it? Add a test that fails before the fix."
        ),
        format!(
            "Please add a `{verb}_{noun}` function next to the others in {file}, with tests. It should skip {adjective} records."
        ),
        format!(
            "Tests started failing after the last merge, something around {noun} handling. Can you get the suite green again without disabling anything?"
        ),
        format!(
            "Refactor {file} so that {noun} validation happens in one place. Keep behaviour the same and keep the tests passing."
        ),
        format!(
            "We need {adjective} {noun}s to be rejected with a clear error instead of a panic. Where is that handled today?"
        ),
        format!(
            "Can you speed up the {noun} {verb} path? It is quadratic on large inputs. Benchmarks are not needed, just a sane algorithm and tests."
        ),
    ];
    rng.pick(&templates).clone()
}

fn followup(rng: &mut Rng, project: &Project) -> String {
    let noun = rng.word(SOFTWARE.nouns);
    let file = project.any_file(rng);
    let templates = [
        format!(
            "Thanks. While you are there, can you also look at how {file} handles an empty {noun}?"
        ),
        "That works. Can you also run the whole suite once more to be sure?".to_string(),
        format!(
            "Hm, I still see the {noun} issue locally. Did you check the case with two {noun}s?"
        ),
        format!("Good. Next: the {noun} export should sort its output. Same rules as before."),
        "Please keep the public API as it is, other crates use it.".to_string(),
        format!("Can you explain in two lines what the {noun} fix changed?"),
        format!("Looks fine. Now add a note to the README about the new {noun} behaviour."),
        "Stop there for a moment: why did that test fail the first time?".to_string(),
    ];
    rng.pick(&templates).clone()
}

fn narration(rng: &mut Rng, what: &str) -> String {
    let templates = [
        format!("Let me look at {what}."),
        format!("I'll check {what} next."),
        format!("Now {what}."),
        format!("To understand this I need {what}."),
    ];
    rng.pick(&templates).clone()
}

fn read_call(rng: &mut Rng, project: &Project, path: &str, version: u64) -> Call {
    let lines = source(project, path, version);
    let (offset, take) = if lines.len() > 50 && rng.chance(75) {
        let start = rng.below(lines.len() - 25);
        (start, rng.range(25, 60))
    } else {
        (0, lines.len())
    };
    let shown: Vec<String> = lines.iter().skip(offset).take(take).cloned().collect();
    let args = if offset > 0 {
        json!({"path": path, "offset": offset + 1, "limit": take})
    } else {
        json!({"path": path})
    };
    Call {
        name: "read_file",
        args,
        output: numbered(&shown, offset),
        is_error: false,
    }
}

fn call(name: &'static str, args: Value, output: String, is_error: bool) -> Call {
    Call {
        name,
        args,
        output,
        is_error,
    }
}

/// One sub-task: explore, edit, test until green (or give up), summarise.
fn coding_episode(
    rng: &mut Rng,
    project: &Project,
    script: &mut Script,
    style: Coding,
    limit: usize,
    version: &mut u64,
) {
    let Some(target) = explore(rng, project, script, style, limit, *version) else {
        return;
    };
    edit(rng, project, script, style, &target, version);
    if !test_until_green(rng, project, script, style, limit, &target, version) {
        return;
    }
    if rng.chance(30) {
        let files = rng.range(1, 3);
        let diff = diff_output(rng, project, files);
        script.tool(None, "bash", json!({"command": "git diff"}), diff, false);
    }
    let summary = format!(
        "Done. {}\n\n- {}\n- {}\n\nThe tests pass.",
        sentence(rng, &SOFTWARE),
        sentence(rng, &SOFTWARE),
        sentence(rng, &SOFTWARE)
    );
    let thinking =
        (script.anthropic && rng.chance(style.thinking)).then(|| paragraph(rng, &SOFTWARE, 3));
    script.push(Turn::Assistant {
        text: summary,
        thinking,
    });
}

/// A search, then reads (sometimes in parallel); the file to edit, unless the limit came first.
fn explore(
    rng: &mut Rng,
    project: &Project,
    script: &mut Script,
    style: Coding,
    limit: usize,
    version: u64,
) -> Option<String> {
    let pattern = function_name(rng);
    let grep = grep_output(rng, project);
    let mut calls = vec![call(
        "grep",
        json!({"pattern": pattern, "path": "."}),
        grep,
        false,
    )];
    if rng.chance(20) {
        calls.push(call(
            "list_dir",
            json!({"path": "."}),
            list_dir(project),
            false,
        ));
    }
    let what = format!("where `{pattern}` is used");
    script.round(Some(narration(rng, &what)), calls);
    let files: Vec<String> = (0..rng.range(1, 4))
        .map(|_| project.any_file(rng))
        .collect();
    if rng.chance(style.parallel) && files.len() > 1 {
        let calls = files
            .iter()
            .map(|f| read_call(rng, project, f, version))
            .collect();
        script.round(None, calls);
    } else {
        for file in &files {
            if script.messages >= limit {
                return None;
            }
            let call = read_call(rng, project, file, version);
            let text = rng.chance(50).then(|| narration(rng, &format!("`{file}`")));
            script.round(text, vec![call]);
        }
    }
    Some(files[0].clone())
}

/// One edit of `target`, with a failed attempt first and a broken build after, now and then.
fn edit(
    rng: &mut Rng,
    project: &Project,
    script: &mut Script,
    style: Coding,
    target: &str,
    version: &mut u64,
) {
    let old = source(project, target, *version);
    let old_text = old[rng.below(old.len())].trim().to_string();
    let new_text = format!("{old_text} // {}", rng.word(SOFTWARE.adjectives));
    let edited = format!("Edited {target}: 1 replacement.");
    if rng.chance(style.errors) {
        let wrong = format!("{old_text}  ");
        let args = json!({"path": target, "old_text": wrong, "new_text": new_text});
        let output = format!(
            "Error: old_text not found in {target}. Read the file again: it may have changed."
        );
        script.tool(
            Some("I'll make the change."),
            "edit_file",
            args,
            output,
            true,
        );
        let reread = read_call(rng, project, target, *version);
        let text = "The text did not match; re-reading the file.".to_string();
        script.round(Some(text), vec![reread]);
    }
    *version += 1;
    let args = json!({"path": target, "old_text": old_text, "new_text": new_text});
    script.tool(None, "edit_file", args, edited.clone(), false);
    if rng.chance(style.errors) {
        let command = match project.lang {
            Lang::Rust => "cargo build 2>&1 | tail -n 40",
            Lang::Python => "python -m compileall -q .",
        };
        let errors = build_errors(rng, project);
        script.tool(None, "bash", json!({"command": command}), errors, true);
        *version += 1;
        let args = json!({"path": target, "old_text": new_text, "new_text": old_text});
        let text = Some("That broke the build; fixing the types.");
        script.tool(text, "edit_file", args, edited, false);
    }
}

/// Runs the tests, fixing and rerunning on failure, three runs at most; false when the limit
/// came first.
fn test_until_green(
    rng: &mut Rng,
    project: &Project,
    script: &mut Script,
    style: Coding,
    limit: usize,
    target: &str,
    version: &mut u64,
) -> bool {
    for attempt in 0..3 {
        if script.messages >= limit {
            return false;
        }
        let failing = attempt < 2 && rng.chance(style.failures);
        let failures = if failing { rng.range(1, 4) } else { 0 };
        let filter = if rng.chance(50) {
            Project::module_of(target).to_string()
        } else {
            String::new()
        };
        let text = (attempt > 0).then_some("Running the tests again.");
        let output = test_output(rng, project, failures);
        script.tool(
            text,
            "run_tests",
            json!({"filter": filter}),
            output,
            failing,
        );
        if !failing {
            break;
        }
        let file = project.any_file(rng);
        let why = format!(
            "The failure points at `{file}`; {}",
            sentence(rng, &SOFTWARE).to_lowercase()
        );
        let read = read_call(rng, project, &file, *version);
        script.round(Some(why), vec![read]);
        *version += 1;
        let lines = source(project, &file, *version);
        let line = lines[rng.below(lines.len())].trim().to_string();
        let args = json!({"path": file, "old_text": line, "new_text": format!("{line} // fixed")});
        let edited = format!("Edited {file}: 1 replacement.");
        script.tool(None, "edit_file", args, edited, false);
    }
    true
}

fn coding_script(rng: &mut Rng, style: Coding, anthropic: bool) -> Script {
    let project = Project::new(rng, style.lang);
    let mut script = Script::new(anthropic);
    script.system(coding_system(rng, &project));
    script.user(task(rng, &project));
    let limit = style.messages.saturating_sub(20).max(4);
    let mut version = 0;
    while script.messages < limit {
        let mut episode = rng.fork();
        coding_episode(
            &mut episode,
            &project,
            &mut script,
            style,
            limit,
            &mut version,
        );
        if script.messages >= limit {
            break;
        }
        if matches!(script.turns.last(), Some(Turn::Round { .. })) {
            script.assistant(sentence(rng, &SOFTWARE));
        }
        script.user(followup(rng, &project));
        if rng.chance(style.interjections) {
            // A user remark right after a tool round (Anthropic: beside the results).
            let file = project.any_file(rng);
            let call = read_call(rng, &project, &file, version);
            script.round(Some("Checking that file first.".into()), vec![call]);
            script.user(format!("Also: {}", followup(rng, &project).to_lowercase()));
        }
    }
    if matches!(script.turns.last(), Some(Turn::Round { .. })) {
        script.assistant("That completes the change; the tests pass.".into());
    }
    pad(
        rng,
        &mut script,
        style.messages,
        &|rng| followup(rng, &project),
        &|rng| sentence(rng, &SOFTWARE),
    );
    script
}

/// Adds user and assistant turns, alternating, until the script has exactly `target` messages.
fn pad(
    rng: &mut Rng,
    script: &mut Script,
    target: usize,
    user: &dyn Fn(&mut Rng) -> String,
    assistant: &dyn Fn(&mut Rng) -> String,
) {
    assert!(
        script.messages <= target,
        "the script has {} messages, more than {target}",
        script.messages
    );
    while script.messages < target {
        if matches!(
            script.turns.last(),
            Some(Turn::Assistant { .. } | Turn::System(_) | Turn::Developer(_))
        ) {
            script.user(user(rng));
        } else {
            script.assistant(assistant(rng));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Research, support, chat.

fn search_results(rng: &mut Rng, vocab: &Vocab, query: &str) -> String {
    let mut out = format!("Results for \"{query}\":\n\n");
    for i in 1..=rng.range(6, 10) {
        let noun = rng.word(vocab.nouns).replace(' ', "-");
        let _ = write!(
            out,
            "{i}. {}\n   https://{}.example.org/{noun}/{}\n   {}\n\n",
            capitalize(&format!(
                "{} {} and the {} {}",
                rng.word(vocab.adjectives),
                rng.word(vocab.nouns),
                rng.word(vocab.adjectives),
                rng.word(vocab.nouns)
            )),
            rng.pick(&[
                "journal",
                "lab",
                "review",
                "notes",
                "institute",
                "wiki",
                "digest"
            ]),
            rng.string(HEX, 8),
            sentence(rng, vocab)
        );
    }
    out
}

/// A long fetched page: title, sections of prose, a table now and then.
fn page(rng: &mut Rng, vocab: &Vocab, chars: usize) -> String {
    let mut out = format!(
        "# {}\n\n",
        capitalize(&format!(
            "{} {}: a field guide",
            rng.word(vocab.adjectives),
            rng.word(vocab.nouns)
        ))
    );
    let mut section = 1;
    while out.len() < chars {
        let _ = write!(
            out,
            "## {section}. {}\n\n",
            capitalize(&format!(
                "{} {}",
                rng.word(vocab.adjectives),
                rng.word(vocab.nouns)
            ))
        );
        for _ in 0..rng.range(2, 6) {
            out.push_str(&paragraph_between(rng, vocab, 4, 9));
            out.push_str("\n\n");
        }
        if rng.chance(35) {
            out.push_str("| variant | share (%) | cost index | notes |\n|---|---|---|---|\n");
            for _ in 0..rng.range(4, 12) {
                let _ = writeln!(
                    out,
                    "| {} {} | {}.{} | {} | {} |",
                    rng.word(vocab.adjectives),
                    rng.word(vocab.nouns),
                    rng.range(1, 80),
                    rng.below(10),
                    rng.range(40, 250),
                    rng.word(vocab.adjectives)
                );
            }
            out.push('\n');
        }
        section += 1;
    }
    out
}

fn research_script(
    rng: &mut Rng,
    anthropic: bool,
    messages: usize,
    fetches: usize,
    page_chars: usize,
) -> Script {
    let vocab = &ENERGY;
    let mut script = Script::new(anthropic);
    script.system("You are a research assistant. Search the web, read the primary sources, and answer with a structured report that cites every source by its address. Say when sources disagree.".into());
    let topic = format!("{} {}", rng.word(vocab.adjectives), rng.word(vocab.nouns));
    script.user(format!("I need a briefing on {topic}: where the technology stands, what it costs, and the open problems. Use recent sources."));
    for i in 0..fetches {
        let queries: Vec<String> = (0..rng.range(1, 3))
            .map(|_| {
                format!(
                    "{topic} {} {}",
                    rng.word(vocab.verbs),
                    rng.word(vocab.nouns)
                )
            })
            .collect();
        let calls = queries
            .iter()
            .map(|q| {
                call(
                    "web_search",
                    json!({"query": q}),
                    search_results(rng, vocab, q),
                    false,
                )
            })
            .collect();
        script.round(
            Some(if i == 0 {
                "I'll start with a broad search.".into()
            } else {
                "Searching for the next angle.".into()
            }),
            calls,
        );
        let url = format!(
            "https://{}.example.org/{}/{}",
            rng.pick(&["journal", "lab", "review", "institute"]),
            rng.word(vocab.nouns).replace(' ', "-"),
            rng.string(HEX, 8)
        );
        let size = rng.range(page_chars / 2, page_chars * 3 / 2);
        let failed = rng.chance(15);
        let output = if failed {
            format!("Error: {url} returned HTTP 503 (service unavailable)")
        } else {
            page(rng, vocab, size)
        };
        script.round(
            Some("This source looks most relevant; reading it in full.".into()),
            vec![call("fetch_url", json!({"url": url}), output, failed)],
        );
        if i + 1 < fetches && rng.chance(40) {
            script.assistant(format!(
                "Notes so far: {}",
                paragraph_between(rng, vocab, 3, 6)
            ));
            script.user(format!(
                "Good. Also look into {} {}.",
                rng.word(vocab.adjectives),
                rng.word(vocab.nouns)
            ));
        }
    }
    let mut report = format!("# Briefing: {topic}\n\n");
    for heading in [
        "Where it stands",
        "Costs",
        "Open problems",
        "Sources that disagree",
    ] {
        let _ = write!(
            report,
            "## {heading}\n\n{}\n\n",
            paragraph_between(rng, vocab, 4, 8)
        );
    }
    script.assistant(report);
    script.user("Thanks. Which of these sources would you trust least, and why?".into());
    pad(
        rng,
        &mut script,
        messages,
        &|rng| question(rng, &ENERGY),
        &|rng| answer(rng, &ENERGY, 1),
    );
    script
}

fn support_script(rng: &mut Rng, turns: usize) -> Script {
    let mut script = Script::new(false);
    let mut system = String::from(
        "You are the support agent of an online store for outdoor gear. Verify the customer's identity before you read or change an order. You may change an address only before shipping, and refund only delivered items. Confirm every change with the customer before you make it.\n\n# Policy\n",
    );
    for i in 1..=12 {
        let _ = writeln!(system, "{i}. {}", sentence(rng, &TRAVEL));
    }
    script.system(system);
    let name = format!("{} {}", rng.word(FIRST_NAMES), rng.word(LAST_NAMES));
    let email = format!(
        "{}.{}@example.com",
        name.split(' ').next().unwrap_or("x").to_lowercase(),
        rng.range(10, 99)
    );
    script.user(format!(
        "Hi, I'm {name} and I have a problem with an order."
    ));
    script.assistant(
        "I can help with that. Could you give me the email address on your account?".into(),
    );
    script.user(format!("It's {email}."));
    let customer = json!({"customer_id": format!("c_{}", rng.string(HEX, 10)), "name": name, "email": email, "orders": (0..rng.range(2, 6)).map(|_| format!("#W{}", rng.range(1_000_000, 9_999_999))).collect::<Vec<_>>()});
    script.round(
        None,
        vec![call(
            "find_customer",
            json!({"query": email}),
            customer.to_string(),
            false,
        )],
    );
    let orders: Vec<String> = customer["orders"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o.as_str().map(String::from))
        .collect();
    let first = name.split(' ').next().unwrap_or("").to_string();
    while script.messages + 10 <= turns {
        support_refund(rng, &mut script, &first, &orders);
    }
    pad(
        rng,
        &mut script,
        turns,
        &|rng| {
            format!(
                "One more question: {}",
                question(rng, &TRAVEL).to_lowercase()
            )
        },
        &|rng| format!("{} Anything else?", sentence(rng, &TRAVEL)),
    );
    script
}

/// One order looked up and one item refunded (or not), with the customer's turns.
fn support_refund(rng: &mut Rng, script: &mut Script, first: &str, orders: &[String]) {
    let order = rng.pick(orders).clone();
    script.assistant(format!(
        "Thanks, {first}. Which order is it about? I see {}.",
        orders.join(", ")
    ));
    script.user(format!(
        "{order}. {}",
        fill(rng, "The {n} arrived {a} and I want to {v} it.", &TRAVEL)
    ));
    let items: Vec<Value> = (0..rng.range(1, 5)).map(|_| json!({"item_id": rng.string(HEX, 10), "name": format!("{} {}", rng.word(TRAVEL.adjectives), rng.word(TRAVEL.nouns)), "price": rng.range(900, 40_000) as f64 / 100.0, "status": *rng.pick(&["delivered", "pending", "shipped"])})).collect();
    let record = json!({"order_id": order, "status": *rng.pick(&["delivered", "pending", "processed"]), "items": items, "address": format!("{} {} Street, Springfield", rng.range(1, 999), rng.word(LAST_NAMES))});
    let shown = serde_json::to_string_pretty(&record).unwrap_or_default();
    script.tool(None, "get_order", json!({"order_id": order}), shown, false);
    let item = record["items"][0]["item_id"]
        .as_str()
        .unwrap_or("")
        .to_string();
    script.assistant(format!(
        "I found {order}. {} Shall I refund item {item}?",
        sentence(rng, &TRAVEL)
    ));
    script.user("Yes, please go ahead.".into());
    let ok = rng.chance(80);
    let output = if ok {
        json!({"refund_id": format!("r_{}", rng.string(HEX, 8)), "amount": record["items"][0]["price"], "status": "issued"}).to_string()
    } else {
        "Error: item is not delivered yet; refunds need a delivered item".into()
    };
    let args = json!({"order_id": order, "item_id": item, "reason": "damaged on arrival"});
    script.tool(None, "refund_item", args, output, !ok);
    script.assistant(if ok { "The refund is issued; it takes 5 to 7 business days to appear. Anything else?".into() } else { "I could not refund it: the item is not marked delivered yet. I can change the address instead, if that helps. Anything else?".into() });
    script.user(if rng.chance(60) {
        "Yes, one more order.".into()
    } else {
        "No, that's all, thanks.".into()
    });
}

fn chat_script(
    rng: &mut Rng,
    anthropic: bool,
    messages: usize,
    vocabs: &[&Vocab],
    answer_size: usize,
) -> Script {
    let mut script = Script::new(anthropic);
    script.system("You are a friendly assistant. Answer clearly, use lists when they help, and keep answers practical.".into());
    let mut vocab = *rng.pick(vocabs);
    while script.messages + 2 <= messages {
        if rng.chance(15) {
            vocab = *rng.pick(vocabs);
        }
        let text = if rng.chance(20) {
            format!("{} {}", sentence(rng, vocab), question(rng, vocab))
        } else {
            question(rng, vocab)
        };
        script.user(text);
        let size = rng.range(0, answer_size);
        script.assistant(answer(rng, vocab, size));
    }
    if script.messages < messages {
        script.user(question(rng, vocab));
    }
    script
}

// ---------------------------------------------------------------------------------------------
// Rendering.

struct Ids {
    seen: BTreeSet<String>,
}

impl Ids {
    fn fresh(&mut self, rng: &mut Rng, anthropic: bool) -> String {
        loop {
            let id = if anthropic {
                format!("toolu_01{}", rng.string(BASE62, 22))
            } else {
                format!("call_{}", rng.string(BASE62, 24))
            };
            if self.seen.insert(id.clone()) {
                return id;
            }
        }
    }
}

fn image_data(rng: &mut Rng) -> String {
    rng.string(BASE64, 1200)
}

/// An OpenAI Chat Completions request body.
fn render_openai(
    rng: &mut Rng,
    model: &str,
    script: &Script,
    tools: &[Tool],
    extra: &[(&str, Value)],
) -> Value {
    let mut ids = Ids {
        seen: BTreeSet::new(),
    };
    let mut messages = Vec::new();
    for turn in &script.turns {
        match turn {
            Turn::System(text) => messages.push(json!({"role": "system", "content": text})),
            Turn::Developer(text) => messages.push(json!({"role": "developer", "content": text})),
            Turn::User { text, image: false } => messages.push(json!({"role": "user", "content": text})),
            Turn::User { text, image: true } => messages.push(json!({"role": "user", "content": [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", image_data(rng)), "detail": "low"}}
            ]})),
            Turn::Assistant { text, .. } => messages.push(json!({"role": "assistant", "content": text})),
            Turn::Round { text, calls, .. } => {
                let ids: Vec<String> = calls.iter().map(|_| ids.fresh(rng, false)).collect();
                let tool_calls: Vec<Value> = calls
                    .iter()
                    .zip(&ids)
                    .map(|(c, id)| json!({"id": id, "type": "function", "function": {"name": c.name, "arguments": c.args.to_string()}}))
                    .collect();
                messages.push(json!({"role": "assistant", "content": text, "tool_calls": tool_calls}));
                for (c, id) in calls.iter().zip(&ids) {
                    messages.push(json!({"role": "tool", "tool_call_id": id, "content": c.output}));
                }
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.into()));
    body.insert("messages".into(), Value::Array(messages));
    if !tools.is_empty() {
        body.insert("tools".into(), openai_tools(tools));
    }
    for (key, value) in extra {
        body.insert((*key).into(), value.clone());
    }
    Value::Object(body)
}

/// An Anthropic Messages request body; a user turn right after a tool round joins the message
/// that carries the round's results, as the API requires.
fn render_anthropic(
    rng: &mut Rng,
    model: &str,
    script: &Script,
    tools: &[Tool],
    system: Value,
) -> Value {
    let mut ids = Ids {
        seen: BTreeSet::new(),
    };
    let mut messages: Vec<Value> = Vec::new();
    let mut after_round = false;
    for turn in &script.turns {
        match turn {
            Turn::System(_) | Turn::Developer(_) => {}
            Turn::User { text, image } => {
                let mut blocks = vec![json!({"type": "text", "text": text})];
                if *image {
                    blocks.push(json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image_data(rng)}}));
                }
                if after_round {
                    let last = messages.last_mut().expect("a round was rendered");
                    last["content"]
                        .as_array_mut()
                        .expect("result blocks")
                        .extend(blocks);
                } else if *image || rng.chance(30) {
                    messages.push(json!({"role": "user", "content": blocks}));
                } else {
                    messages.push(json!({"role": "user", "content": text}));
                }
            }
            Turn::Assistant { text, thinking } => {
                let content = match thinking {
                    Some(thought) => json!([
                        {"type": "thinking", "thinking": thought, "signature": rng.string(BASE64, 88)},
                        {"type": "text", "text": text}
                    ]),
                    None if rng.chance(50) => json!([{"type": "text", "text": text}]),
                    None => json!(text),
                };
                messages.push(json!({"role": "assistant", "content": content}));
            }
            Turn::Round {
                text,
                thinking,
                calls,
            } => {
                let mut blocks = Vec::new();
                if let Some(thought) = thinking {
                    blocks.push(json!({"type": "thinking", "thinking": thought, "signature": rng.string(BASE64, 88)}));
                }
                if let Some(text) = text {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                let mut results = Vec::new();
                for c in calls {
                    let id = ids.fresh(rng, true);
                    blocks.push(
                        json!({"type": "tool_use", "id": id, "name": c.name, "input": c.args}),
                    );
                    let content = if rng.chance(30) {
                        json!([{"type": "text", "text": c.output}])
                    } else {
                        json!(c.output)
                    };
                    let mut result =
                        json!({"type": "tool_result", "tool_use_id": id, "content": content});
                    if c.is_error {
                        result["is_error"] = Value::Bool(true);
                    }
                    results.push(result);
                }
                messages.push(json!({"role": "assistant", "content": blocks}));
                messages.push(json!({"role": "user", "content": results}));
            }
        }
        after_round = matches!(turn, Turn::Round { .. });
    }
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.into()));
    body.insert("max_tokens".into(), json!(8192));
    body.insert("system".into(), system);
    if !tools.is_empty() {
        body.insert("tools".into(), anthropic_tools(tools));
    }
    body.insert("messages".into(), Value::Array(messages));
    Value::Object(body)
}

/// The first system turn's text (Anthropic's top-level `system`).
fn system_text(script: &Script) -> String {
    match script.turns.first() {
        Some(Turn::System(text)) => text.clone(),
        _ => String::new(),
    }
}

/// Adds a thinking block to a share of the rounds (Anthropic extended thinking).
fn think(rng: &mut Rng, script: &mut Script, pct: u64) {
    for turn in &mut script.turns {
        if let Turn::Round { thinking, .. } = turn {
            if rng.chance(pct) {
                *thinking = Some(paragraph_between(rng, &SOFTWARE, 2, 6));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The files.

/// One generated file: its name and how it is built.
struct Spec {
    name: &'static str,
    build: fn(&mut Rng) -> Value,
}

const DEFAULT: Coding = Coding {
    lang: Lang::Rust,
    messages: 200,
    parallel: 30,
    failures: 35,
    errors: 15,
    thinking: 0,
    interjections: 10,
};

fn openai_coding(rng: &mut Rng, style: Coding) -> Value {
    let script = coding_script(rng, style, false);
    render_openai(
        rng,
        "gpt-4.1",
        &script,
        CODING_TOOLS,
        &[("temperature", json!(0.2))],
    )
}

fn anthropic_coding(rng: &mut Rng, style: Coding) -> Value {
    let mut script = coding_script(rng, style, true);
    think(rng, &mut script, style.thinking);
    let system = json!(system_text(&script));
    render_anthropic(rng, "claude-sonnet-4-5", &script, CODING_TOOLS, system)
}

/// A system prompt of many numbered policy sections (for the system-heavy files).
fn long_policy(rng: &mut Rng, sections: usize) -> String {
    let mut out = String::from(
        "You are the assistant of a travel agency. Follow every section below exactly.\n",
    );
    for s in 1..=sections {
        let _ = write!(
            out,
            "\n## Section {s}: {}\n",
            capitalize(&format!(
                "{} {}",
                rng.word(TRAVEL.adjectives),
                rng.word(TRAVEL.nouns)
            ))
        );
        for r in 1..=rng.range(4, 9) {
            let _ = writeln!(out, "{s}.{r} {}", sentence(rng, &TRAVEL));
        }
    }
    out
}

const SPECS: &[Spec] = &[
    Spec {
        name: "openai-coding-rust-2000.json",
        build: |rng| {
            openai_coding(
                rng,
                Coding {
                    messages: 2000,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "openai-coding-python-500.json",
        build: |rng| {
            openai_coding(
                rng,
                Coding {
                    lang: Lang::Python,
                    messages: 500,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "openai-coding-parallel-200.json",
        build: |rng| {
            openai_coding(
                rng,
                Coding {
                    messages: 200,
                    parallel: 90,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "openai-coding-failures-150.json",
        build: |rng| {
            openai_coding(
                rng,
                Coding {
                    lang: Lang::Python,
                    messages: 150,
                    failures: 80,
                    errors: 60,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "openai-coding-rust-60.json",
        build: |rng| {
            openai_coding(
                rng,
                Coding {
                    messages: 60,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "openai-research-40.json",
        build: |rng| {
            let script = research_script(rng, false, 40, 6, 45_000);
            render_openai(rng, "gpt-4o", &script, RESEARCH_TOOLS, &[])
        },
    },
    Spec {
        name: "openai-chat-600.json",
        build: |rng| {
            let script = chat_script(rng, false, 600, &[&GARDENING, &COOKING, &TRAVEL], 3);
            render_openai(rng, "gpt-4o-mini", &script, &[], &[])
        },
    },
    Spec {
        name: "openai-chat-120.json",
        build: |rng| {
            let script = chat_script(rng, false, 120, &[&COOKING], 4);
            render_openai(rng, "gpt-4o", &script, &[], &[])
        },
    },
    Spec {
        name: "openai-chat-10.json",
        build: |rng| {
            let script = chat_script(rng, false, 10, &[&GARDENING], 2);
            render_openai(rng, "gpt-4o-mini", &script, &[], &[])
        },
    },
    Spec {
        name: "openai-system-heavy-20.json",
        build: |rng| {
            let mut script = chat_script(rng, false, 20, &[&TRAVEL], 2);
            script.turns[0] = Turn::System(long_policy(rng, 60));
            render_openai(rng, "gpt-4.1-mini", &script, &[], &[])
        },
    },
    Spec {
        name: "openai-multi-system-150.json",
        build: |rng| {
            let script = chat_script(rng, false, 137, &[&TRAVEL, &COOKING], 2);
            let mut turns = Vec::new();
            for (i, turn) in script.turns.into_iter().enumerate() {
                if i > 0 && i % 12 == 1 {
                    let note = format!(
                        "Memory retrieved for this user: {}",
                        paragraph_between(rng, &TRAVEL, 2, 5)
                    );
                    turns.push(if rng.chance(50) {
                        Turn::System(note)
                    } else {
                        Turn::Developer(note)
                    });
                }
                turns.push(turn);
            }
            turns.insert(1, Turn::Developer(long_policy(rng, 8)));
            let script = Script {
                turns,
                anthropic: false,
                messages: 0,
            };
            render_openai(rng, "gpt-4o", &script, &[], &[])
        },
    },
    Spec {
        name: "openai-support-90.json",
        build: |rng| {
            let script = support_script(rng, 90);
            render_openai(
                rng,
                "gpt-4o",
                &script,
                SUPPORT_TOOLS,
                &[("tool_choice", json!("auto"))],
            )
        },
    },
    Spec {
        name: "openai-tools-12.json",
        build: |rng| {
            openai_coding(
                rng,
                Coding {
                    messages: 12,
                    parallel: 100,
                    failures: 0,
                    errors: 0,
                    interjections: 0,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "openai-images-30.json",
        build: |rng| {
            let mut script = chat_script(rng, false, 30, &[&GARDENING], 2);
            for turn in &mut script.turns {
                if let Turn::User { image, .. } = turn {
                    *image = rng.chance(40);
                }
            }
            render_openai(rng, "gpt-4o", &script, &[], &[])
        },
    },
    Spec {
        name: "openai-tail-heavy-25.json",
        build: |rng| {
            let mut script = chat_script(rng, false, 21, &[&SOFTWARE], 1);
            let project = Project::new(rng, Lang::Rust);
            let log = test_output(rng, &project, 12)
                + &build_errors(rng, &project)
                + &test_output(rng, &project, 20);
            script.user(format!(
                "Here is the full log from CI, what is going on?\n\n```\n{log}```"
            ));
            script.assistant(answer(rng, &SOFTWARE, 6));
            script.user(format!(
                "And this one from the nightly run:\n\n```\n{}```",
                test_output(rng, &project, 30)
            ));
            script.assistant(answer(rng, &SOFTWARE, 2));
            render_openai(rng, "gpt-4.1", &script, &[], &[])
        },
    },
    Spec {
        name: "openai-long-messages-50.json",
        build: |rng| {
            let script = chat_script(rng, false, 50, &[&ENERGY], 14);
            render_openai(rng, "gpt-4.1", &script, &[], &[])
        },
    },
    Spec {
        name: "anthropic-coding-rust-800.json",
        build: |rng| {
            anthropic_coding(
                rng,
                Coding {
                    messages: 800,
                    thinking: 10,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "anthropic-coding-python-300.json",
        build: |rng| {
            anthropic_coding(
                rng,
                Coding {
                    lang: Lang::Python,
                    messages: 300,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "anthropic-coding-thinking-200.json",
        build: |rng| {
            anthropic_coding(
                rng,
                Coding {
                    messages: 200,
                    thinking: 70,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "anthropic-coding-errors-120.json",
        build: |rng| {
            anthropic_coding(
                rng,
                Coding {
                    messages: 120,
                    failures: 80,
                    errors: 70,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "anthropic-research-30.json",
        build: |rng| {
            let script = research_script(rng, true, 30, 5, 50_000);
            let system = json!(system_text(&script));
            render_anthropic(rng, "claude-opus-4-1", &script, RESEARCH_TOOLS, system)
        },
    },
    Spec {
        name: "anthropic-chat-400.json",
        build: |rng| {
            let script = chat_script(rng, true, 400, &[&COOKING, &GARDENING, &TRAVEL], 3);
            let system = json!(system_text(&script));
            render_anthropic(rng, "claude-haiku-4-5", &script, &[], system)
        },
    },
    Spec {
        name: "anthropic-chat-10.json",
        build: |rng| {
            let script = chat_script(rng, true, 10, &[&TRAVEL], 2);
            let system = json!(system_text(&script));
            render_anthropic(rng, "claude-haiku-4-5", &script, &[], system)
        },
    },
    Spec {
        name: "anthropic-system-blocks-40.json",
        build: |rng| {
            let script = chat_script(rng, true, 40, &[&TRAVEL], 3);
            let system = json!([
                {"type": "text", "text": system_text(&script)},
                {"type": "text", "text": long_policy(rng, 30), "cache_control": {"type": "ephemeral"}}
            ]);
            render_anthropic(rng, "claude-sonnet-4-5", &script, &[], system)
        },
    },
    Spec {
        name: "anthropic-mixed-results-80.json",
        build: |rng| {
            anthropic_coding(
                rng,
                Coding {
                    messages: 80,
                    interjections: 90,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "anthropic-tools-14.json",
        build: |rng| {
            anthropic_coding(
                rng,
                Coding {
                    messages: 14,
                    parallel: 100,
                    failures: 0,
                    errors: 0,
                    interjections: 0,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "anthropic-coding-parallel-200.json",
        build: |rng| {
            anthropic_coding(
                rng,
                Coding {
                    lang: Lang::Python,
                    messages: 200,
                    parallel: 95,
                    ..DEFAULT
                },
            )
        },
    },
    Spec {
        name: "anthropic-images-20.json",
        build: |rng| {
            let mut script = chat_script(rng, true, 20, &[&GARDENING, &COOKING], 2);
            for turn in &mut script.turns {
                if let Turn::User { image, .. } = turn {
                    *image = rng.chance(50);
                }
            }
            let system = json!(system_text(&script));
            render_anthropic(rng, "claude-sonnet-4-5", &script, &[], system)
        },
    },
    Spec {
        name: "anthropic-coding-rust-60.json",
        build: |rng| {
            anthropic_coding(
                rng,
                Coding {
                    messages: 60,
                    thinking: 30,
                    ..DEFAULT
                },
            )
        },
    },
];
