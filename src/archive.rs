//! The archive: the removed history one file away. With an archive directory, each removed span
//! and each message whose tool output was cleared is kept in a file of JSON lines, one message a
//! line in the wire format the output is written in, and the span's marker or the output's
//! placeholder names that file and its lines (`note::reference`).
//!
//! Files are named by content, never by chance or by the clock: a conversation's folder by a
//! hash of its system prompt and the head of its task (which survive every compaction, so a
//! later run of the same session uses the same folder), and each file by a hash of the lines it
//! holds. The same span archived again (the proxy compacts the same history on every request)
//! names the same file with the same lines, so writing it again changes nothing, and a later
//! compaction only adds files beside the earlier ones. Writing is not done here: the run returns
//! the files, and [`write`] is called once the output itself is known to be good.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use crate::conversation::{Conversation, Message, Part, Role};
use crate::format::{to_value, wire};
use crate::hash::ContentHash;
use crate::note;
use crate::recall;
use crate::state::{Applied, Source};

/// Characters of the task that name a conversation: a shortened task keeps at least its first
/// 200 (the planner's `MIN_TASK_CHARS`), and a later run sees the same head.
const TASK_CHARS: usize = 200;

/// Hexadecimal digits of a folder or file name: 48 bits, short in a note and without a
/// collision among the files of one conversation.
const NAME_DIGITS: usize = 12;

/// The archive of one run: where its files go and the input's messages as archive lines.
/// Without a folder (`Options::handles`), each file is named by its handle alone and kept in
/// memory: the caller holds the history whole and recalls from it.
#[derive(Debug, Clone)]
pub(crate) struct Archive {
    /// `DIR/<conversation>`, or none.
    folder: Option<PathBuf>,
    /// The conversation's hash.
    id: ContentHash,
    /// Input message `i` as one line of JSON in the output's wire format.
    lines: Vec<String>,
    /// The hash of each line.
    hashes: Vec<ContentHash>,
}

/// The file a removed span is archived in, as the planner named it in the span's marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpanFile {
    /// The file's path, as the marker names it.
    pub(crate) path: String,
    /// The input messages of the span, in order.
    pub(crate) inputs: Vec<usize>,
    /// The input message kept after the span: the marker is merged into it in formats whose
    /// turns alternate, and the file then ends with it as it was.
    pub(crate) next: Option<usize>,
}

impl Archive {
    /// The archive in `dir` (none: handles alone) of `conversation` (as read), whose task is
    /// message `task`.
    pub(crate) fn new(
        dir: Option<&Path>,
        conversation: &Conversation,
        task: Option<usize>,
    ) -> Self {
        let wire = wire(conversation.format);
        let lines: Vec<String> = conversation
            .messages
            .iter()
            .map(|m| to_value(|out| wire.write_message(m, out)).to_string())
            .collect();
        let hashes = lines
            .iter()
            .map(|line| ContentHash::of(line.as_bytes()))
            .collect();
        let system = conversation
            .system
            .as_ref()
            .or_else(|| {
                conversation
                    .messages
                    .iter()
                    .find(|m| m.role == Role::System)
            })
            .map(Message::text)
            .unwrap_or_default();
        let task_text = task
            .and_then(|t| conversation.messages.get(t))
            .map(Message::text)
            .unwrap_or_default();
        let task_text = match note::marker_len(&task_text) {
            Some(end) => task_text[end..].trim_start(),
            None => task_text.as_str(),
        };
        let head: String = task_text.chars().take(TASK_CHARS).collect();
        let id = ContentHash::of(system.as_bytes()).then(head.as_bytes());
        Self {
            folder: dir.map(|dir| dir.join(id.hex(NAME_DIGITS))),
            id,
            lines,
            hashes,
        }
    }

    /// The file of a removed span of input messages `inputs`, followed by input message `next`.
    pub(crate) fn span_file(&self, inputs: Vec<usize>, next: Option<usize>) -> SpanFile {
        let mut hash = self.id.then(b"span");
        for &i in &inputs {
            hash = hash.then_hash(self.hashes[i]);
        }
        let hash = match next {
            Some(i) => hash.then(b"next").then_hash(self.hashes[i]),
            None => hash,
        };
        SpanFile {
            path: self.path(hash),
            inputs,
            next,
        }
    }

    /// The file of input message `input` alone (a message whose outputs were cleared).
    pub(crate) fn message_file(&self, input: usize) -> String {
        self.path(self.id.then(b"message").then_hash(self.hashes[input]))
    }

    /// A path as long as any file of this archive, to reserve a marker's archive line for.
    pub(crate) fn longest_path(&self) -> String {
        self.path(ContentHash::default())
    }

    /// The content of a file holding input messages `inputs`: one line each.
    pub(crate) fn content(&self, inputs: impl IntoIterator<Item = usize>) -> String {
        let mut content = String::new();
        for i in inputs {
            content.push_str(&self.lines[i]);
            content.push('\n');
        }
        content
    }

    /// The reference a placeholder or note gives to the file at `path` of `lines` lines: the
    /// file and its handle, or the handle alone without a folder.
    pub(crate) fn reference(&self, path: &str, lines: usize) -> String {
        match self.folder {
            Some(_) => note::reference(path, lines),
            None => note::handle_reference(path),
        }
    }

    /// The line of a marker naming its span's file (`path`, `lines` lines), or its handle
    /// alone without a folder.
    pub(crate) fn line(&self, path: &str, lines: usize) -> String {
        match self.folder {
            Some(_) => note::archive_line(path, lines),
            None => note::handle_line(path),
        }
    }

    /// A file's path: `DIR/<conversation>/<file>.jsonl`, or its handle without a folder.
    fn path(&self, hash: ContentHash) -> String {
        match &self.folder {
            Some(folder) => folder
                .join(format!("{}.jsonl", hash.hex(NAME_DIGITS)))
                .to_string_lossy()
                .into_owned(),
            None => format!("{}/{}", self.id.hex(NAME_DIGITS), hash.hex(NAME_DIGITS)),
        }
    }
}

/// The archive files of a run's output: each removed span's (ending with the message its marker
/// was merged into, as it was, when it was), then each kept message whose cleared outputs' placeholders
/// name its own file.
pub(crate) fn files(
    archive: &Archive,
    spans: &[SpanFile],
    output: &Applied,
) -> Vec<(String, String)> {
    let mut at = Vec::new();
    for (position, source) in output.origin.iter().enumerate() {
        if let Some(input) = source.input() {
            if at.len() <= input {
                at.resize(input + 1, None);
            }
            at[input] = Some(position);
        }
    }
    let mut seen = BTreeSet::new();
    let mut files = Vec::new();
    for span in spans {
        // A marker stands alone just before the span's next message, or was merged into it.
        let merged = span
            .next
            .filter(|&next| match at.get(next).copied().flatten() {
                Some(position) => position == 0 || output.origin[position - 1] != Source::Marker,
                None => false,
            });
        let mut inputs = span.inputs.clone();
        inputs.extend(merged);
        if seen.insert(span.path.clone()) {
            files.push((span.path.clone(), archive.content(inputs)));
        }
    }
    for (message, source) in output.conversation.messages.iter().zip(&output.origin) {
        let Source::Edited(input) = *source else {
            continue;
        };
        if !names_its_archive(message) {
            continue;
        }
        let path = archive.message_file(input);
        if seen.insert(path.clone()) {
            files.push((path, archive.content([input])));
        }
    }
    files
}

/// Whether a message holds a note naming its own archive file: a cleared output's placeholder,
/// or the note of a shortened task.
fn names_its_archive(message: &Message) -> bool {
    message.parts.iter().any(|part| match part {
        // The note is a line of its own: a placeholder's first, or the line standing for a
        // capped output's middle (a gist's lines follow either).
        Part::ToolResult { content, .. } => content.iter().any(|p| {
            matches!(p, Part::Text { text, .. } if text.lines().any(|line| {
                (note::is_cleared_output(line) || note::is_omitted(line))
                    && note::has_reference(line)
            }))
        }),
        Part::Text { text, .. } => note::is_shortened(text) && note::has_reference(text),
        _ => false,
    })
}

/// Writes archive files (path and content): each new file to a temporary file beside it, then
/// all renamed into place; a file already there with the same content is left as it is (but
/// marked used: [`recall::mark_used`]), and
/// one named by its handle alone (no folder) is not written.
/// Returns the files it created.
///
/// # Errors
/// A file already there with other content (never overwritten), or any failure to create a
/// folder or write a file; no file this call created is then left behind.
pub(crate) fn write(files: &[(String, String)]) -> io::Result<Vec<PathBuf>> {
    let mut pending: Vec<(PathBuf, PathBuf)> = Vec::new();
    let cleanup = |pending: &[(PathBuf, PathBuf)]| {
        for (temporary, _) in pending {
            let _ = std::fs::remove_file(temporary);
        }
    };
    for (path, content) in files {
        let path = PathBuf::from(path);
        // A file named by its handle alone (no folder: `Options::handles`) stays in memory.
        if path.extension().is_none_or(|e| e != "jsonl") || pending.iter().any(|(_, p)| *p == path)
        {
            continue;
        }
        let staged = stage(&path, content);
        match staged {
            Ok(Some(temporary)) => pending.push((temporary, path)),
            Ok(None) => {}
            Err(err) => {
                cleanup(&pending);
                return Err(err);
            }
        }
    }
    let mut created = Vec::new();
    for (at, (temporary, path)) in pending.iter().enumerate() {
        if let Err(err) = std::fs::rename(temporary, path) {
            cleanup(&pending[at..]);
            for done in &created {
                let _ = std::fs::remove_file(done);
            }
            return Err(err);
        }
        created.push(path.clone());
    }
    Ok(created)
}

/// A size bound on an archive folder, so that a long-running writer (the proxy) never fills a
/// disk: past `max` bytes of archive files, the least recently used (written, archived again
/// or recalled: [`recall::mark_used`]) go first. Only the
/// files' own sizes count (not the folders'). Instances sharing a folder each keep it bounded:
/// every sweep reads the folder as it is.
#[derive(Debug)]
pub(crate) struct Bound {
    dir: PathBuf,
    max: u64,
    /// The bytes the folder holds, as of the last sweep plus the files created since (`None`:
    /// not read yet).
    total: std::sync::Mutex<Option<u64>>,
}

impl Bound {
    /// A bound of `max` bytes on the archive folder `dir`.
    pub(crate) fn new(dir: PathBuf, max: u64) -> Self {
        Self {
            dir,
            max,
            total: std::sync::Mutex::new(None),
        }
    }

    /// Counts the files [`write`] just created; past the bound, removes the least recently
    /// used files (and the folders they leave empty) until the folder holds at most nine
    /// tenths of it, so that a sweep is rare. Returns how many files it removed.
    ///
    /// # Errors
    /// A folder that cannot be read; a file that cannot be removed is skipped.
    pub(crate) fn account(&self, created: &[PathBuf]) -> io::Result<usize> {
        let added: u64 = created
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        let mut total = self
            .total
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let known = match *total {
            Some(bytes) => bytes + added,
            None => files_of(&self.dir)?.iter().map(|f| f.2).sum(),
        };
        *total = Some(known);
        if known <= self.max {
            return Ok(0);
        }
        let mut files = files_of(&self.dir)?;
        // Oldest first; the path breaks ties, so that instances remove alike.
        files.sort();
        let mut held: u64 = files.iter().map(|f| f.2).sum();
        let low = self.max / 10 * 9;
        let mut removed = 0;
        for (_, path, size) in files {
            if held <= low {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                held -= size;
                removed += 1;
                if let Some(folder) = path.parent() {
                    // Only an empty folder is removed; one still holding files stays.
                    let _ = std::fs::remove_dir(folder);
                }
            }
        }
        *total = Some(held);
        Ok(removed)
    }
}

/// The archive files in `dir` (`<conversation>/<file>.jsonl`): when each was last used (its
/// modification time), its path and its size. A folder not made yet holds none.
fn files_of(dir: &Path) -> io::Result<Vec<(std::time::SystemTime, PathBuf, u64)>> {
    let mut files = Vec::new();
    let conversations = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(files),
        Err(err) => return Err(err),
    };
    for conversation in conversations {
        let conversation = conversation?.path();
        let Ok(entries) = std::fs::read_dir(&conversation) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            if let Ok(meta) = entry.metadata() {
                let written = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                files.push((written, path, meta.len()));
            }
        }
    }
    Ok(files)
}

/// Writes `content` to a temporary file beside `path`, unless `path` already holds it.
fn stage(path: &Path, content: &str) -> io::Result<Option<PathBuf>> {
    match std::fs::read(path) {
        Ok(existing) if existing == content.as_bytes() => {
            recall::mark_used(path);
            return Ok(None);
        }
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("archive file {} exists with other content", path.display()),
            ));
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    if let Some(folder) = path.parent() {
        create_private_folders(folder)?;
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".tmp{}", std::process::id()));
    let temporary = PathBuf::from(temporary);
    write_private(&temporary, content)?;
    Ok(Some(temporary))
}

/// The mode of archive files: the owner's alone, as agents keep their own transcripts (the
/// removed history may hold keys, `.env` contents or customer data).
const FILE_MODE: u32 = 0o600;
/// The mode of the folders the archive creates for its files.
const FOLDER_MODE: u32 = 0o700;

/// Creates `folder` and its missing ancestors, each created one of mode [`FOLDER_MODE`]
/// whatever the umask; folders already there keep their mode.
fn create_private_folders(folder: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(folder);
    while let Some(dir) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        missing.push(dir);
        at = dir.parent();
    }
    for dir in missing.into_iter().rev() {
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, FOLDER_MODE);
        match builder.create(dir) {
            Ok(()) => set_mode(dir, FOLDER_MODE)?,
            // Another writer made it in between: its mode is that writer's.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Writes `content` to a new file of mode [`FILE_MODE`] whatever the umask (a stale file of
/// the same name is replaced).
fn write_private(path: &Path, content: &str) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, FILE_MODE);
    let mut file = options.open(path)?;
    set_mode(path, FILE_MODE)?;
    io::Write::write_all(&mut file, content.as_bytes())
}

/// Sets a path's permission bits exactly (the umask narrows the mode given at creation, and
/// may take the owner's own bits).
#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Permission bits are Unix's: elsewhere a file and folder are the platform's default.
#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::parse_value;
    use serde_json::json;

    fn conversation(extra: &str) -> Conversation {
        parse_value(
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "fix the parser"},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": extra},
            ]),
            None,
        )
        .unwrap()
    }

    #[test]
    fn a_conversation_keeps_its_folder_as_it_grows_and_files_are_named_by_content() {
        let dir = Some(Path::new("/archive"));
        let first = Archive::new(dir, &conversation("and the tests"), Some(1));
        let later = Archive::new(dir, &conversation("something else"), Some(1));
        assert_eq!(first.folder, later.folder);
        assert_eq!(first.message_file(2), later.message_file(2));
        assert_ne!(first.message_file(3), later.message_file(3));
        let span = first.span_file(vec![1, 2], Some(3));
        assert_ne!(span.path, later.span_file(vec![1, 2], Some(3)).path);
        assert!(span.path.starts_with("/archive/"));
        assert_eq!(Path::new(&span.path).extension().unwrap(), "jsonl");
        assert_eq!(
            first.content([1, 2]),
            "{\"role\":\"user\",\"content\":\"fix the parser\"}\n\
             {\"role\":\"assistant\",\"content\":\"done\"}\n"
        );
        assert_eq!(first.longest_path().len(), span.path.len());
    }

    #[test]
    fn writing_again_changes_nothing_and_other_content_is_never_overwritten() {
        let dir =
            std::env::temp_dir().join(format!("ctxcompact-archive-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("c").join("a.jsonl").to_string_lossy().into_owned();
        let other = dir.join("c").join("b.jsonl").to_string_lossy().into_owned();
        let files = vec![(path.clone(), "{}\n".to_string())];
        assert_eq!(write(&files).unwrap(), vec![PathBuf::from(&path)]);
        assert_eq!(write(&files).unwrap(), Vec::<PathBuf>::new());
        // A clash leaves the file as it was, and the new file of the same call is not kept.
        let clash = vec![
            (other.clone(), "[]\n".to_string()),
            (path.clone(), "{\"x\":1}\n".to_string()),
        ];
        let err = write(&clash).unwrap_err();
        assert!(
            err.to_string().contains("exists with other content"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        assert!(!Path::new(&other).exists());
        let left: Vec<_> = std::fs::read_dir(dir.join("c")).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_bound_removes_the_least_recently_used_files_first() {
        let dir =
            std::env::temp_dir().join(format!("ctxcompact-bound-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // Files named as handles name them: `<conversation>/<file>`, 12 hex digits each.
        let names = [
            "0000000000a1",
            "0000000000a2",
            "0000000000a3",
            "0000000000a4",
        ];
        let path = |name: &str| dir.join("0123456789ab").join(format!("{name}.jsonl"));
        let files: Vec<(String, String)> = names
            .iter()
            .map(|n| (path(n).to_string_lossy().into_owned(), "x".repeat(100)))
            .collect();
        write(&files).unwrap();
        // Written in this order, a minute apart, an hour ago.
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for (k, (file, _)) in files.iter().enumerate() {
            let at = hour_ago + std::time::Duration::from_secs(60 * k as u64);
            let handle = std::fs::OpenOptions::new().append(true).open(file).unwrap();
            handle.set_modified(at).unwrap();
        }
        // The second archived again with the same content, the third recalled: both used since
        // the last was written.
        assert!(write(&files[1..2]).unwrap().is_empty());
        crate::recall::recall(&dir, "0123456789ab/0000000000a3").unwrap();
        // Room for two files: the two least recently used go, the first and the last written.
        let bound = Bound::new(dir.clone(), 250);
        assert_eq!(bound.account(&[]).unwrap(), 2);
        let left: Vec<bool> = names.iter().map(|n| path(n).exists()).collect();
        assert_eq!(left, [false, true, true, false]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
