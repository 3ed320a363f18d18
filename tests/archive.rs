//! The archive (issue 26, item 4): the output and the archive files give back the input, message
//! for message. Reassembly here reads only what an agent reads — the output's notes and the
//! files they name — and replaces each message whose note names one of the run's files with
//! that file's lines.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use ctxcompact::format::{self, Format};
use ctxcompact::report::Action;
use ctxcompact::{Budget, Compacted, Conversation, Options, Tokenizer, compact};
use serde_json::Value;

/// The words before an archive file's path in a marker or a placeholder.
const ARCHIVED_IN: &str = "archived in ";

/// Every string inside `value`.
fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The paths every note of `message` names, in order, then the handles (a file's name
/// without a folder: `Options::handles`).
pub(crate) fn named_paths(message: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    strings(message, &mut texts);
    let mut paths = Vec::new();
    for text in &texts {
        for (at, _) in text.match_indices(ARCHIVED_IN) {
            let rest = &text[at + ARCHIVED_IN.len()..];
            if let Some(end) = rest.find(", line") {
                paths.push(rest[..end].to_string());
            }
        }
    }
    paths.extend(named_handles(std::slice::from_ref(message)));
    paths
}

/// The messages of a rendered conversation.
pub(crate) fn messages_of(value: &Value, format: Format) -> Vec<Value> {
    match value {
        Value::Array(items) => items.clone(),
        other => other[format.list_key()]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    }
}

/// The output's messages with each one whose note names a file of `files` replaced by that
/// file's lines.
pub(crate) fn reassemble(messages: &[Value], files: &BTreeMap<String, String>) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        let named = named_paths(message);
        match named.iter().find_map(|path| files.get(path)) {
            Some(content) => out.extend(
                content
                    .lines()
                    .map(|line| serde_json::from_str::<Value>(line).unwrap()),
            ),
            None => out.push(message.clone()),
        }
    }
    out
}

/// Whether the output of `compacted` and its archive give back `input` exactly, and every
/// archive file is named by a note of the output; else what differs.
pub(crate) fn reassembles(input: &Conversation, compacted: &Compacted) -> Result<(), String> {
    let files: BTreeMap<String, String> = compacted.archive.iter().cloned().collect();
    let format = input.format;
    let want = messages_of(&format::render(input), format);
    let output = messages_of(&format::render(&compacted.conversation), format);
    let named: Vec<String> = output.iter().flat_map(named_paths).collect();
    if let Some(unnamed) = files.keys().find(|path| !named.contains(path)) {
        return Err(format!("archive file {unnamed} is named by no note"));
    }
    let got = reassemble(&output, &files);
    if got.len() != want.len() {
        return Err(format!(
            "{} messages reassembled, the input has {}",
            got.len(),
            want.len()
        ));
    }
    match got.iter().zip(&want).position(|(a, b)| a != b) {
        Some(at) => Err(format!("message {at} differs from the input's")),
        None => Ok(()),
    }
}

fn options(budget: Budget, dir: &Path) -> Options {
    Options {
        tokenizer: Tokenizer::O200k,
        archive: Some(dir.to_path_buf()),
        ..Options::with_budget(budget)
    }
}

/// The conversations of `data/conversations` and, when present, the real recordings of
/// `../shared/corpus` (its converted recordings and the native logs of `raw/` that read).
fn recordings(with_corpus: bool) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    if !with_corpus {
        for entry in std::fs::read_dir(root.join("data/conversations")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                paths.push(path);
            }
        }
        paths.sort();
        return paths;
    }
    walk(&root.join("../shared/corpus"), &mut paths);
    paths.sort();
    paths
}

/// The `.json` and `.jsonl` files under `dir`, but for folders of invalid recordings.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            // Folders of invalid recordings sit beside the valid ones.
            if !path.ends_with("invalid") {
                walk(&path, out);
            }
        } else if path
            .extension()
            .is_some_and(|e| e == "json" || e == "jsonl")
        {
            out.push(path);
        }
    }
}

/// Compacts every file at each ratio with an archive; returns the compactions checked, and
/// those that fit only without an archive (its references left no room).
fn check_all(paths: &[PathBuf], dir: &Path) -> (usize, usize) {
    let mut checked = 0;
    let mut only_without = 0;
    let mut failures = Vec::new();
    for path in paths {
        let Ok(input) = format::parse(&std::fs::read(path).unwrap(), None) else {
            continue;
        };
        if !ctxcompact::validate(&input).is_empty() {
            continue;
        }
        for ratio in [0.5, 0.25] {
            let archived = options(Budget::Ratio(ratio), dir);
            let Ok(compacted) = compact(input.clone(), &archived) else {
                let plain = Options {
                    archive: None,
                    ..archived
                };
                only_without += usize::from(compact(input.clone(), &plain).is_ok());
                continue;
            };
            if compacted.report.action != Action::Compacted {
                continue;
            }
            assert!(
                compacted.report.tokens_after <= compacted.report.budget,
                "{}",
                path.display()
            );
            checked += 1;
            if let Err(why) = reassembles(&input, &compacted) {
                failures.push(format!("{} at {ratio}: {why}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    (checked, only_without)
}

#[test]
fn output_and_archive_give_back_every_generated_conversation() {
    let dir = std::env::temp_dir().join(format!("ctxcompact-archive-gen-{}", std::process::id()));
    let (checked, _) = check_all(&recordings(false), &dir);
    assert!(checked >= 20, "only {checked} compactions");
}

#[test]
fn output_and_archive_give_back_every_real_recording() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !root.is_dir() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED archive corpus test: {} not found",
            root.display()
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("ctxcompact-archive-real-{}", std::process::id()));
    let (checked, only_without) = check_all(&recordings(true), &dir);
    let _ = writeln!(
        std::io::stderr(),
        "archive over the corpus: {checked} compactions reassembled exactly; {only_without} fit \
         only without an archive"
    );
    assert!(checked >= 40, "only {checked} compactions");
}

/// Every file and folder below `dir` with its permission bits.
#[cfg(unix)]
fn modes(dir: &Path) -> Vec<(PathBuf, u32)> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        out.push((
            path.clone(),
            path.metadata().unwrap().permissions().mode() & 0o777,
        ));
        if path.is_dir() {
            out.extend(modes(&path));
        }
    }
    out
}

#[cfg(unix)]
#[test]
fn archive_files_and_the_folders_made_for_them_are_the_owners_alone_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt as _;
    let input = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data/conversations/openai-coding-rust-2000.json");
    for umask in ["000", "022", "077"] {
        let work = std::env::temp_dir().join(format!(
            "ctxcompact-archive-modes-{umask}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        // A folder that is there already keeps its mode; the ones made below it are 0700.
        let existing = work.join("existing");
        std::fs::create_dir(&existing).unwrap();
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o755)).unwrap();
        let archive = existing.join("new/archive");
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("umask {umask} && exec \"$@\""))
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_ctxcompact"))
            .args(["compact", "--ratio", "0.5", "--quiet", "--archive"])
            .arg(&archive)
            .arg("-o")
            .arg(work.join("out.json"))
            .arg(&input)
            .status()
            .unwrap();
        assert!(status.success(), "umask {umask}: {status}");
        let mode = |p: &Path| p.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&existing), 0o755, "umask {umask}");
        assert_eq!(mode(&existing.join("new")), 0o700, "umask {umask}");
        assert_eq!(mode(&archive), 0o700, "umask {umask}");
        let found = modes(&archive);
        assert!(
            found.iter().any(|(p, _)| p.is_file()),
            "umask {umask}: no file"
        );
        for (path, bits) in found {
            let want = if path.is_dir() { 0o700 } else { 0o600 };
            assert_eq!(bits, want, "umask {umask}: {}", path.display());
        }
        std::fs::remove_dir_all(&work).unwrap();
    }
}

/// The handles the notes of `messages` name, in order, once each.
fn named_handles(messages: &[Value]) -> Vec<String> {
    let mut handles = Vec::new();
    for message in messages {
        let mut texts = Vec::new();
        strings(message, &mut texts);
        for text in texts {
            for (at, _) in text.match_indices("handle ") {
                let handle: String = text[at + "handle ".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_hexdigit() || *c == '/')
                    .collect();
                if handle.len() == 25 && !handles.contains(&handle) {
                    handles.push(handle);
                }
            }
        }
    }
    handles
}

// See: #53
#[test]
fn handles_without_an_archive_are_recalled_from_the_whole_history() {
    use ctxcompact::recall::RecallError;
    use ctxcompact::request::{Compactor, Handling};
    use serde_json::json;

    // An agent loop: a task, then rounds of a read and its output, each call's body the whole
    // history so far, as a framework adapter sends it.
    let mut messages = vec![
        json!({"role": "system", "content": "You are a careful agent."}),
        json!({"role": "user", "content": "Read the parts and summarise them."}),
    ];
    for i in 0..24 {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{i}"), "type": "function",
             "function": {"name": "read", "arguments": format!("{{\"part\": {i}}}")}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("c{i}"),
            "content": format!("part {i}: {}", "the quick brown fox jumps over the lazy dog. ".repeat(40))}));
        if i == 11 {
            // A request pasting notes: past clearing the outputs, it is removed whole.
            let notes = "Note: every dog here is lazy. ".repeat(300);
            messages
                .push(json!({"role": "user", "content": format!("Also list every dog. {notes}")}));
        }
    }
    let body = |messages: &[Value]| {
        serde_json::to_vec(&json!({"model": "gpt-4o", "messages": messages})).unwrap()
    };
    let settings: ctxcompact::Settings = serde_json::from_value(json!({"handles": true})).unwrap();
    let compactor = Compactor::new(&settings, Some(12_000), 0).unwrap();
    let full = body(&messages);
    let forward = compactor.compact(&full, Format::OpenAi, None, None);
    assert_eq!(
        forward.verdict.action,
        Handling::Compacted,
        "{:?}",
        forward.verdict.reason
    );
    let sent: Value = serde_json::from_slice(forward.body.as_deref().unwrap()).unwrap();
    let sent = sent["messages"].as_array().unwrap();
    let text = serde_json::to_string(sent).unwrap();
    assert!(!text.contains("archived in"), "a note names a file: {text}");
    let handles = named_handles(sent);
    assert!(handles.len() >= 2, "{handles:?}");
    // A later body (the agent went on) gives back what each handle named, as the body held
    // it: replacing each message whose note names a handle with what it names, until none is
    // left (a later compaction's span holds an earlier one's notes), gives back the history.
    let mut later = messages.clone();
    later.push(json!({"role": "assistant", "content": "Recalling."}));
    let recall = |handle: &str| {
        compactor
            .recall(&body(&later), Format::OpenAi, None, handle)
            .unwrap()
    };
    let mut back = sent.clone();
    let mut recalled = 0;
    loop {
        let mut next = Vec::new();
        for message in &back {
            match named_handles(std::slice::from_ref(message)).first() {
                Some(handle) => {
                    recalled += 1;
                    let content = recall(handle);
                    next.extend(
                        content
                            .lines()
                            .map(|l| serde_json::from_str::<Value>(l).unwrap()),
                    );
                }
                None => next.push(message.clone()),
            }
        }
        if next == back {
            break;
        }
        back = next;
    }
    assert_eq!(back, messages);
    assert!(
        recalled > handles.len(),
        "no span held an earlier note: {recalled}"
    );
    // Bad handles are errors that name them; nothing was written anywhere.
    let err = compactor
        .recall(&full, Format::OpenAi, None, "../x")
        .unwrap_err();
    assert!(matches!(err, RecallError::Malformed(_)), "{err}");
    let unknown = "000000000000/000000000000";
    let err = compactor
        .recall(&full, Format::OpenAi, None, unknown)
        .unwrap_err();
    assert!(err.to_string().contains(unknown), "{err}");
    assert!(!Path::new(&handles[0]).exists());
}
