//! The crate's structure: its modules import only modules of the layers below them, in the
//! order `docs/architecture.md` lists, and one another without a cycle; no module is over 800
//! lines without its tests, and the README stays short. Read from the source files, as a reader
//! of the code sees them: every item but those gated by `#[cfg(test)]`, wherever they sit.
//!
//! A cycle is looked for between top-level modules (a folder and everything in it is one
//! module, so `format/repair → report → options → format` is a cycle), and between the files
//! of each folder, in the library and in the binary alike.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A tree of modules: each `.rs` file by module path (`format/openai`, `lab`; the root file is
/// `""`), and the text of each.
struct Tree {
    files: BTreeMap<String, String>,
    /// Whether `crate::x` naming no module is an item of the root file (the binary's
    /// `main.rs` holds code) rather than a re-export (the library's `lib.rs` only declares
    /// and re-exports).
    root_has_code: bool,
}

impl Tree {
    /// Reads the files below `dir` (not `skip`), the root file being `root`.
    fn read(dir: &Path, root: &str, skip: Option<&str>, root_has_code: bool) -> Self {
        fn walk(dir: &Path, base: &Path, skip: Option<&str>, out: &mut BTreeMap<String, String>) {
            let mut entries: Vec<PathBuf> = fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            entries.sort();
            for path in entries {
                if path.is_dir() {
                    if path.file_name().and_then(|n| n.to_str()) != skip {
                        walk(&path, base, skip, out);
                    }
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let relative = path.strip_prefix(base).unwrap().with_extension("");
                let mut name = relative.to_string_lossy().replace('\\', "/");
                if let Some(parent) = name.strip_suffix("/mod") {
                    name = parent.to_string();
                }
                out.insert(name, fs::read_to_string(&path).unwrap());
            }
        }
        let mut files = BTreeMap::new();
        walk(dir, dir, skip, &mut files);
        let text = files.remove(root).expect("the root file exists");
        files.insert(String::new(), text);
        Self {
            files,
            root_has_code,
        }
    }

    /// The library, `src/` without the binary.
    fn library() -> Self {
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
        Self::read(&src, "lib", Some("bin"), false)
    }

    /// The binary, `src/bin/ctxcompact/`.
    fn binary() -> Self {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/bin/ctxcompact");
        Self::read(&dir, "main", None, true)
    }

    /// The items the root file re-exports (`pub use options::Options;`), by the module they
    /// come from.
    fn reexports(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for statement in code(&self.files[""]).split(';') {
            let Some(tree) = statement.trim().strip_prefix("pub use ") else {
                continue;
            };
            for path in use_paths(tree.trim_start_matches("crate::")) {
                if let (Some(item), Some(module)) = (path.last(), path.first()) {
                    out.insert(item.clone(), module.clone());
                }
            }
        }
        out
    }

    /// Every file's imports: the module each `crate::`, `super::`, `self::` or (in a file
    /// declaring child modules) `child::` path names, child-to-parent arrows included.
    fn graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        let reexports = self.reexports();
        self.files
            .iter()
            .map(|(name, text)| (name.clone(), self.imports(name, text, &reexports)))
            .collect()
    }

    fn imports(
        &self,
        name: &str,
        text: &str,
        reexports: &BTreeMap<String, String>,
    ) -> BTreeSet<String> {
        let code = code(text);
        let parent = |module: &str| module.rsplit_once('/').map_or("", |(p, _)| p).to_string();
        let join = |base: &str, rest: &str| {
            if base.is_empty() {
                rest.to_string()
            } else {
                format!("{base}/{rest}")
            }
        };
        // The longest module `segments` names below `base`, else `base` itself (an item of it).
        let resolve = |base: &str, segments: &[String]| -> Option<String> {
            let found = (1..=segments.len())
                .rev()
                .map(|k| join(base, &segments[..k].join("/")))
                .find(|candidate| self.files.contains_key(candidate));
            if found.is_some() {
                return found;
            }
            if !base.is_empty() {
                return Some(base.to_string());
            }
            if let Some(module) = segments.first().and_then(|s| reexports.get(s)) {
                return Some(module.clone());
            }
            self.root_has_code.then(String::new)
        };
        let children: BTreeSet<String> = declared_children(&code);
        let mut found = BTreeSet::new();
        for (start, word) in path_starts(&code) {
            let rest = &code[start..];
            for path in use_paths(rest) {
                let target = match word {
                    "crate" => resolve("", &path),
                    "super" => resolve(&parent(name), &path),
                    "self" => resolve(name, &path),
                    child => {
                        let mut full = vec![child.to_string()];
                        full.extend(path);
                        resolve(name, &full)
                    }
                };
                if let Some(target) = target.filter(|t| t != name) {
                    found.insert(target);
                }
            }
        }
        // Paths through a declared child (`args::Cli`, `use config::Config;`).
        for child in &children {
            let needle = format!("{child}::");
            let used = code.match_indices(&needle).any(|(at, _)| {
                !code[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
            });
            if used {
                found.insert(join(name, child));
            }
        }
        found
    }
}

/// A file's code without its test-only items: each item gated by `#[cfg(test)]` (a test module,
/// a helper for tests) is dropped whole, the code after it kept; comments and the contents of
/// string and character literals are blanked, their line breaks kept, so that a path in a doc
/// comment or a `}` in a string is not read as code.
fn code(text: &str) -> String {
    let blank = blanked(text);
    let mut out = String::with_capacity(blank.len());
    let mut rest = blank.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        rest = &rest[item_end(rest)..];
    }
    out.push_str(rest);
    out
}

/// `text` with its comments and the contents of its string and character literals replaced by
/// blanks (line breaks kept): what is left is code, where braces and paths mean what they say.
fn blanked(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let is_word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_');
    let mut out = String::with_capacity(text.len());
    // Blanks `chars[from..to]` into `out`, keeping line breaks.
    let blank = |out: &mut String, from: usize, to: usize| {
        for c in &chars[from..to.min(chars.len())] {
            out.push(if *c == '\n' { '\n' } else { ' ' });
        }
    };
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        if c == '/' && next == Some('/') {
            let end = chars[at..]
                .iter()
                .position(|c| *c == '\n')
                .map_or(chars.len(), |n| at + n);
            blank(&mut out, at, end);
            at = end;
        } else if c == '/' && next == Some('*') {
            // Block comments nest.
            let (mut end, mut depth) = (at + 2, 1);
            while end < chars.len() && depth > 0 {
                match (chars[end], chars.get(end + 1)) {
                    ('/', Some('*')) => (depth, end) = (depth + 1, end + 2),
                    ('*', Some('/')) => (depth, end) = (depth - 1, end + 2),
                    _ => end += 1,
                }
            }
            blank(&mut out, at, end);
            at = end;
        } else if c == '"' {
            let mut end = at + 1;
            while end < chars.len() && chars[end] != '"' {
                end += if chars[end] == '\\' { 2 } else { 1 };
            }
            out.push('"');
            blank(&mut out, at + 1, end);
            out.push('"');
            at = end + 1;
        } else if c == 'r'
            && !is_word(
                at.checked_sub(1)
                    .and_then(|b| chars.get(b))
                    .filter(|b| **b != 'b'),
            )
            && matches!(next, Some('"' | '#'))
        {
            // A raw string, `r"…"` or `r#"…"#`: it ends at a quote followed by as many hashes.
            let hashes = chars[at + 1..].iter().take_while(|c| **c == '#').count();
            let open = at + 1 + hashes;
            if chars.get(open) != Some(&'"') {
                out.push(c);
                at += 1;
                continue;
            }
            let closing: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let end = (open + 1..chars.len())
                .find(|&i| chars[i..].starts_with(&closing))
                .unwrap_or(chars.len());
            out.push_str("r\"");
            blank(&mut out, open + 1, end);
            out.push('"');
            at = end + closing.len();
        } else if c == '\'' && (next == Some('\\') || chars.get(at + 2) == Some(&'\'')) {
            // A character literal (`'{'`, `'\''`, `'\u{7d}'`); a lifetime (`'a`) is code.
            let mut end = at + 1;
            if next == Some('\\') {
                end += 2;
            }
            while end < chars.len() && chars[end] != '\'' {
                end += 1;
            }
            out.push('\'');
            blank(&mut out, at + 1, end);
            out.push('\'');
            at = end + 1;
        } else {
            out.push(c);
            at += 1;
        }
    }
    out
}

/// Where the item that opens `code` (its attributes first) ends: after the `;` that closes it
/// (`mod tests;`, `use …;`, `const X: T = …;`) or after the brace closing its body
/// (`mod tests { … }`, `fn f() { … }`), braces matched; the end of `code` if it does not close.
fn item_end(code: &str) -> usize {
    let mut depth = 0usize;
    let mut assigns = false;
    for (at, c) in code.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            '}' => {
                depth = depth.saturating_sub(1);
                // A body closes the item; an initialiser's braces (`= S { … };`) do not.
                if depth == 0 && !assigns {
                    return at + 1;
                }
            }
            '=' if depth == 0 => assigns = true,
            ';' if depth == 0 => return at + 1,
            _ => {}
        }
    }
    code.len()
}

/// The modules a file declares (`mod args;`, `pub(crate) mod relay;`).
fn declared_children(code: &str) -> BTreeSet<String> {
    code.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("pub(crate) mod "))
                .or_else(|| line.strip_prefix("mod "))?;
            rest.strip_suffix(';').map(str::to_string)
        })
        .collect()
}

/// Where each `crate::`, `super::` or `self::` path's remainder starts, with its first word.
fn path_starts(code: &str) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    for word in ["crate", "super", "self"] {
        let needle = format!("{word}::");
        for (at, _) in code.match_indices(&needle) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
                continue;
            }
            out.push((at + needle.len(), word));
        }
    }
    out
}

/// The paths a use tree (or a plain path) at the start of `text` names, each as its segments:
/// `a::{b, c::{d, e}}` gives `[a, b]`, `[a, c, d]`, `[a, c, e]`; `self` in a list names the
/// prefix itself.
fn use_paths(text: &str) -> Vec<Vec<String>> {
    fn tree(chars: &[char], at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let mut path = prefix.to_vec();
        loop {
            while chars.get(*at).is_some_and(|c| c.is_whitespace()) {
                *at += 1;
            }
            if chars.get(*at) == Some(&'{') {
                *at += 1;
                loop {
                    tree(chars, at, &path, out);
                    while chars.get(*at).is_some_and(|c| c.is_whitespace()) {
                        *at += 1;
                    }
                    match chars.get(*at) {
                        Some(',') => *at += 1,
                        Some('}') => {
                            *at += 1;
                            break;
                        }
                        _ => break,
                    }
                    while chars.get(*at).is_some_and(|c| c.is_whitespace()) {
                        *at += 1;
                    }
                    if chars.get(*at) == Some(&'}') {
                        *at += 1;
                        break;
                    }
                }
                return;
            }
            let start = *at;
            while chars
                .get(*at)
                .is_some_and(|c| c.is_alphanumeric() || *c == '_')
            {
                *at += 1;
            }
            let word: String = chars[start..*at].iter().collect();
            match word.as_str() {
                "" | "self" => {}
                _ => path.push(word),
            }
            if chars.get(*at) == Some(&':') && chars.get(*at + 1) == Some(&':') {
                *at += 2;
                continue;
            }
            break;
        }
        out.push(path);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    tree(&chars, &mut 0, &[], &mut out);
    out
}

/// The graph seen at one level: each module collapsed by `level` (to its top-level module, or
/// to its child of one folder), arrows between distinct collapsed modules only.
fn collapsed(
    graph: &BTreeMap<String, BTreeSet<String>>,
    level: impl Fn(&str) -> Option<String>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in graph {
        let Some(from) = level(from) else { continue };
        out.entry(from.clone()).or_default();
        for to in tos {
            if let Some(to) = level(to).filter(|to| *to != from) {
                out.entry(to.clone()).or_default();
                out.get_mut(&from).unwrap().insert(to);
            }
        }
    }
    out
}

/// The cycles of a tree's graph: between top-level modules, then between the files of each
/// folder; each named by its level (`top` or the folder) and its modules.
fn tree_cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<(String, Vec<String>)> {
    let top = |module: &str| Some(module.split('/').next().unwrap_or("").to_string());
    let mut found: Vec<(String, Vec<String>)> = cycles(&collapsed(graph, top))
        .into_iter()
        .map(|c| ("top".to_string(), c))
        .collect();
    let folders: BTreeSet<String> = graph
        .keys()
        .filter_map(|m| m.rsplit_once('/').map(|(p, _)| p.to_string()))
        .collect();
    for folder in folders {
        let prefix = format!("{folder}/");
        let child = |module: &str| {
            let rest = module.strip_prefix(&prefix)?;
            Some(rest.split('/').next().unwrap_or(rest).to_string())
        };
        found.extend(
            cycles(&collapsed(graph, child))
                .into_iter()
                .map(|c| (folder.clone(), c)),
        );
    }
    found
}

/// The cycles of a graph (its strongly connected components of two or more modules).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Kosaraju: finish order on the graph, then components on the reversed graph.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        seen: &mut BTreeSet<String>,
        out: &mut Vec<String>,
    ) {
        if !seen.insert(node.to_string()) {
            return;
        }
        for next in &graph[node] {
            visit(next, graph, seen, out);
        }
        out.push(node.to_string());
    }
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    for node in graph.keys() {
        visit(node, graph, &mut seen, &mut order);
    }
    let mut reversed: BTreeMap<String, BTreeSet<String>> =
        graph.keys().map(|k| (k.clone(), BTreeSet::new())).collect();
    for (from, tos) in graph {
        for to in tos {
            reversed.get_mut(to).unwrap().insert(from.clone());
        }
    }
    let mut seen = BTreeSet::new();
    let mut found = Vec::new();
    for node in order.iter().rev() {
        let mut component = Vec::new();
        visit(node, &reversed, &mut seen, &mut component);
        if component.len() > 1 {
            component.sort();
            found.push(component);
        }
    }
    found
}

/// The library's top-level modules in the order `docs/architecture.md` lists them, bottom to
/// top: the lines of the first `text` block under its "Layers" heading that open with a layer's
/// number.
fn documented_order() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    let text = fs::read_to_string(path).unwrap();
    let layers = text
        .split("\n## Layers\n")
        .nth(1)
        .expect("the Layers section");
    let block = layers.split("```text\n").nth(1).expect("the layers' block");
    let block = &block[..block.find("```").expect("the block's end")];
    block
        .lines()
        .filter_map(|line| {
            let (layer, modules) = line.split_once(' ')?;
            layer.parse::<usize>().ok()?;
            Some(modules.split_whitespace().map(str::to_string))
        })
        .flatten()
        .collect()
}

/// The imports between top-level modules that go up the order (to a module listed after the
/// importing one), as `(from, to)`; a module the order does not list imports from nowhere and
/// is imported by nothing without being named here. The root file, which declares every module,
/// is not checked.
fn upward_imports(
    graph: &BTreeMap<String, BTreeSet<String>>,
    order: &[String],
) -> Vec<(String, String)> {
    let top = |module: &str| Some(module.split('/').next().unwrap_or("").to_string());
    let rank = |module: &str| order.iter().position(|m| m == module);
    let mut found = Vec::new();
    for (from, tos) in collapsed(graph, top).iter().filter(|(f, _)| !f.is_empty()) {
        for to in tos.iter().filter(|to| !to.is_empty()) {
            match (rank(from), rank(to)) {
                (Some(a), Some(b)) if b < a => {}
                _ => found.push((from.clone(), to.clone())),
            }
        }
    }
    found
}

/// Adds `line` to the code of `module` in `tree`, at its top.
fn plant(tree: &mut Tree, module: &str, line: &str) {
    let text = tree.files.get_mut(module).expect("the module exists");
    text.insert_str(0, &format!("{line}\n"));
}

#[test]
fn the_library_modules_import_one_another_without_a_cycle() {
    let graph = Tree::library().graph();
    // The graph is read at all: the pipeline imports the planner, the planner the digest, a
    // child its parent's sibling and its parent, and a re-exported item its module.
    assert!(graph["compact"].contains("planner"), "{graph:?}");
    assert!(graph["planner"].contains("digest"), "{graph:?}");
    assert!(graph["strategy/tools"].contains("state"), "{graph:?}");
    assert!(graph["digest/render"].contains("digest"), "{graph:?}");
    assert!(graph[""].contains("options"), "{graph:?}");
    assert!(graph["proxy/serve"].contains("proxy/relay"), "{graph:?}");
    assert_eq!(tree_cycles(&graph), Vec::new(), "{graph:#?}");
}

#[test]
fn the_library_modules_import_only_modules_listed_below_them() {
    let library = Tree::library();
    let order = documented_order();
    // The order names every top-level module once, and only those.
    let modules: BTreeSet<String> = library
        .files
        .keys()
        .map(|m| m.split('/').next().unwrap_or("").to_string())
        .filter(|m| !m.is_empty())
        .collect();
    let listed: BTreeSet<String> = order.iter().cloned().collect();
    assert_eq!(listed.len(), order.len(), "{order:?}");
    assert_eq!(listed, modules);
    assert_eq!(upward_imports(&library.graph(), &order), Vec::new());
}

#[test]
fn a_planted_upward_import_fails_the_order_check() {
    // The hasher, in the lowest layer, importing the error type: no cycle, as errors do not
    // hash, but an import up the order.
    let mut library = Tree::library();
    plant(&mut library, "hash", "use crate::error::Error;");
    let graph = library.graph();
    assert_eq!(tree_cycles(&graph), Vec::new());
    assert_eq!(
        upward_imports(&graph, &documented_order()),
        vec![("hash".to_string(), "error".to_string())]
    );
}

#[test]
fn the_binary_modules_import_one_another_without_a_cycle() {
    let graph = Tree::binary().graph();
    assert!(graph[""].contains("args"), "{graph:?}");
    assert!(graph["proxy"].contains("flags"), "{graph:?}");
    assert_eq!(tree_cycles(&graph), Vec::new(), "{graph:#?}");
}

#[test]
fn a_planted_cycle_fails_the_check_at_each_level() {
    // A file deep in a folder importing a module above that imports the folder.
    let mut library = Tree::library();
    plant(
        &mut library,
        "format/repair",
        "use crate::compact::Compacted;",
    );
    let found = tree_cycles(&library.graph());
    assert!(
        found.iter().any(|(level, c)| level == "top"
            && c.contains(&"format".into())
            && c.contains(&"compact".into())),
        "{found:?}"
    );
    // A subcommand's module naming an item of `main.rs`, which declares it.
    let mut binary = Tree::binary();
    plant(&mut binary, "args", "use crate::some_function_of_main;");
    let found = tree_cycles(&binary.graph());
    assert!(
        found
            .iter()
            .any(|(level, c)| level == "top" && c.contains(&String::new())),
        "{found:?}"
    );
    // Two files of one folder importing each other.
    let mut library = Tree::library();
    plant(&mut library, "proxy/route", "use super::serve::Event;");
    plant(&mut library, "proxy/config", "use super::route::Route;");
    let found = tree_cycles(&library.graph());
    assert!(
        found
            .iter()
            .any(|(level, c)| level == "proxy" && c.contains(&"route".into())),
        "{found:?}"
    );
}

#[test]
fn a_cycle_is_found_where_there_is_one() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(str::to_string).collect()))
    .collect();
    assert_eq!(cycles(&graph), vec![vec!["a", "b", "c"]]);
}

#[test]
fn an_import_after_a_test_item_is_read_and_the_test_items_are_not() {
    // See: #54. A test module, braces in its strings, characters and comments, then production
    // code: a test-only helper, and an import below both.
    let text = r##"
use crate::hash::Hasher;

#[cfg(test)]
mod tests {
    use crate::format::Format;
    const OPEN: &str = "{ /* not a comment */";
    const RAW: &str = r#"}" { "#;
    fn brace() -> char { '{' }
    // a } in a comment
    /* nested /* } */ } */
    fn lifetime<'a>(s: &'a str) -> &'a str { s }
}

#[cfg(test)]
#[path = "x_tests.rs"]
mod more_tests;

#[cfg(test)]
fn for_tests() -> crate::report::Report { todo!() }

use crate::budget::Budget;
// use crate::catalog::Model;
const URL: &str = "crate::select::https://x";
"##;
    let files = [
        "", "hash", "budget", "format", "report", "catalog", "select", "state",
    ]
    .into_iter()
    .map(|m| (m.to_string(), String::new()))
    .chain([("state".to_string(), text.to_string())])
    .collect();
    let tree = Tree {
        files,
        root_has_code: false,
    };
    let imports = &tree.graph()["state"];
    assert_eq!(
        imports,
        &BTreeSet::from(["hash".to_string(), "budget".to_string()])
    );
    // What is left is the production code, comments and string contents blanked.
    let kept: Vec<String> = code(text)
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect();
    assert_eq!(
        kept,
        [
            "use crate::hash::Hasher;",
            "use crate::budget::Budget;",
            "const URL: &str = \" \";",
        ]
    );
}

#[test]
fn use_trees_name_every_path() {
    assert_eq!(
        use_paths("a::{b, c::{d, self}, e}::x;"),
        vec![
            vec!["a", "b"],
            vec!["a", "c", "d"],
            vec!["a", "c"],
            vec!["a", "e"]
        ]
    );
    assert_eq!(
        use_paths("report::Repair {"),
        vec![vec!["report", "Repair"]]
    );
}

#[test]
fn no_module_is_over_800_lines_without_its_tests() {
    for (dir, tree) in [
        ("src", Tree::library()),
        ("src/bin/ctxcompact", Tree::binary()),
    ] {
        for (name, text) in tree.files {
            let lines = code(&text).lines().count();
            assert!(
                lines <= 800,
                "{dir}/{name}.rs: {lines} lines without its tests"
            );
        }
    }
}

#[test]
fn the_readme_stays_short_and_links_every_docs_page() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.len() <= 12 * 1024,
        "README.md: {} bytes",
        readme.len()
    );
    for entry in fs::read_dir(root.join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            readme.contains(&format!("](docs/{name})")),
            "README.md does not link docs/{name}"
        );
    }
    // The two commands of the quick start.
    assert!(readme.contains("cargo run --release -- bench data/conversations\ncargo test\n"));
}
