//! The library's structure (issue 24): its modules import one another without a cycle, no
//! module is over 800 lines before its tests, and the README stays short. Read from the source
//! files, as a reader of the code sees them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file of the library (not the binary), by module path (`format/openai`, `lab`).
fn library_modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "bin") {
                    walk(&path, root, out);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(root).unwrap().with_extension("");
            let mut name = relative.to_string_lossy().replace('\\', "/");
            if let Some(parent) = name.strip_suffix("/mod") {
                name = parent.to_string();
            }
            if name != "lib" {
                out.insert(name, fs::read_to_string(&path).unwrap());
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = BTreeMap::new();
    walk(&root, &root, &mut modules);
    modules
}

/// The text before a file's unit tests.
fn before_tests(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |at| &text[..at])
}

/// The modules `text` (module `name`) names through `crate::…` paths (in `use` lists too) or,
/// in a submodule, through `super::…`: for each path, the longest module it starts with.
fn imports(name: &str, text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let code: String = before_tests(text)
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let resolve = |path: &[&str]| {
        (1..=path.len())
            .rev()
            .map(|k| path[..k].join("/"))
            .find(|candidate| modules.contains(candidate))
    };
    let mut found = BTreeSet::new();
    let mut add = |path: Vec<&str>| {
        if let Some(module) = resolve(&path) {
            if module != name && !name.starts_with(&format!("{module}/")) {
                found.insert(module);
            }
        }
    };
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '{'))
            .map(str::to_string)
            .collect()
    };
    // `crate::a::b`, and the items of `crate::{a, b::c}` lists.
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(list) = rest.strip_prefix('{') {
            let end = list.find("};").unwrap_or(list.len());
            for item in list[..end].split(',') {
                let item = item.trim().trim_start_matches('{');
                add(item.split("::").map(str::trim).collect());
            }
        } else {
            let path = words(rest).into_iter().next().unwrap_or_default();
            add(path.split("::").filter(|p| !p.contains('{')).collect());
        }
    }
    if let Some((parent, _)) = name.rsplit_once('/') {
        for (at, _) in code.match_indices("super::") {
            let rest = &code[at + "super::".len()..];
            let first: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let sibling = format!("{parent}/{first}");
            if modules.contains(&sibling) && sibling != name {
                found.insert(sibling);
            }
        }
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

#[test]
fn the_library_modules_import_one_another_without_a_cycle() {
    let modules = library_modules();
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|(name, text)| (name.clone(), imports(name, text, &names)))
        .collect();
    // The graph is read at all: the pipeline imports the planner, the planner the digest.
    assert!(graph["compact"].contains("planner"), "{graph:?}");
    assert!(graph["planner"].contains("digest"), "{graph:?}");
    assert_eq!(cycles(&graph), Vec::<Vec<String>>::new(), "{graph:#?}");
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
fn no_library_module_is_over_800_lines_before_its_tests() {
    for (name, text) in library_modules() {
        let lines = before_tests(&text).lines().count();
        assert!(
            lines <= 800,
            "src/{name}.rs: {lines} lines before its tests"
        );
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
