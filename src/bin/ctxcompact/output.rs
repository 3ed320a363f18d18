//! Where results go: standard output or files, written so that nothing is lost, then the
//! summary line and the exit code.
//!
//! Every file is first written in full to a temporary file beside it (a *staged* write); only
//! when the output and the report are both staged are they moved into place. So an error —
//! a full disk, a read-only folder — leaves every file as it was. A file that exists keeps its
//! mode and owner; one with several hard links is rewritten in place so that every link sees
//! the new content; a path that is not a regular file (`/dev/null`, a pipe) is written to
//! directly, and a symlink is written through to its target.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use ctxcompact::report::Action;
use ctxcompact::{Compacted, Report, format};

use crate::flags::{InputArgs, OutputArgs};

/// The exit code of bad input or usage.
pub(crate) const EXIT_BAD_INPUT: u8 = 2;
/// The exit code of a budget that cannot be met.
pub(crate) const EXIT_CANNOT_FIT: u8 = 3;

/// A file written in full to a temporary file, waiting to be moved into place.
pub(crate) struct Staged {
    /// Where it goes (a symlink's target, resolved).
    target: PathBuf,
    /// The path as the user gave it, for messages.
    shown: PathBuf,
    /// The temporary file, or `None` for a path written directly (not a regular file).
    temp: Option<PathBuf>,
}

impl Staged {
    /// Writes `fill`'s bytes for `path`: to a temporary file beside it, or straight into a
    /// path that is not a regular file.
    pub(crate) fn write(
        path: &Path,
        fill: impl FnOnce(&mut io::BufWriter<fs::File>) -> io::Result<()>,
    ) -> Result<Self> {
        check_writable(path)?;
        let cannot = || format!("{}: cannot write", path.display());
        if fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            let device = fs::OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(cannot)?;
            let mut writer = io::BufWriter::new(device);
            fill(&mut writer)
                .and_then(|()| writer.flush())
                .with_context(cannot)?;
            return Ok(Self {
                target: path.to_path_buf(),
                shown: path.to_path_buf(),
                temp: None,
            });
        }
        let target = if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            fs::canonicalize(path).with_context(cannot)?
        } else {
            path.to_path_buf()
        };
        let name = target
            .file_name()
            .ok_or_else(|| anyhow!("{}: not a file path", path.display()))?;
        let temp = target.with_file_name(format!(
            ".{}.ctxcompact-{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let written = fs::File::create(&temp).and_then(|file| {
            let mut writer = io::BufWriter::new(file);
            fill(&mut writer)?;
            writer
                .into_inner()
                .map_err(io::IntoInnerError::into_error)?
                .sync_all()
        });
        if let Err(err) = written {
            let _ = fs::remove_file(&temp);
            return Err(err).with_context(cannot);
        }
        Ok(Self {
            target,
            shown: path.to_path_buf(),
            temp: Some(temp),
        })
    }

    /// Moves the staged file into place, keeping an existing file's mode, owner and links.
    pub(crate) fn commit(mut self) -> Result<()> {
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        let cannot = || format!("{}: cannot write", self.shown.display());
        let result = match fs::metadata(&self.target) {
            Ok(existing) if existing.nlink() > 1 => rewrite(&temp, &self.target),
            Ok(existing) => fs::set_permissions(&temp, existing.permissions())
                .and_then(|()| keep_owner(&temp, &existing))
                .and_then(|()| fs::rename(&temp, &self.target)),
            Err(_) => fs::rename(&temp, &self.target),
        };
        if result.is_err() {
            let _ = fs::remove_file(&temp);
        }
        result.with_context(cannot)
    }
}

impl Drop for Staged {
    /// A staged file that is never committed leaves nothing behind.
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            let _ = fs::remove_file(temp);
        }
    }
}

/// Copies `temp`'s bytes into `target` in place (keeping its inode, so its hard links, mode
/// and owner), then removes `temp`. `fs::copy` would also copy `temp`'s mode.
fn rewrite(temp: &Path, target: &Path) -> io::Result<()> {
    let mut from = fs::File::open(temp)?;
    let mut to = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(target)?;
    io::copy(&mut from, &mut to)?;
    to.sync_all()?;
    fs::remove_file(temp)
}

/// Gives `temp` the owner and group of `existing` when they differ (as root, or for a file of
/// one's own group).
fn keep_owner(temp: &Path, existing: &fs::Metadata) -> io::Result<()> {
    let staged = fs::metadata(temp)?;
    if staged.uid() == existing.uid() && staged.gid() == existing.gid() {
        return Ok(());
    }
    std::os::unix::fs::chown(temp, Some(existing.uid()), Some(existing.gid()))
}

/// Fails when `path` is a folder or its folder does not exist.
pub(crate) fn check_writable(path: &Path) -> Result<()> {
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if path.is_dir() {
        bail!("{}: is a folder, not a file", path.display())
    } else if folder.is_dir() {
        Ok(())
    } else {
        bail!(
            "{}: the folder {} does not exist",
            path.display(),
            folder.display()
        )
    }
}

/// Whether two paths name the same file: the same inode when both exist, else the same
/// canonical folder and name.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(ma), Ok(mb)) = (fs::metadata(a), fs::metadata(b)) {
        return ma.dev() == mb.dev() && ma.ino() == mb.ino();
    }
    let canonical = |p: &Path| -> Option<PathBuf> {
        let folder = p.parent().filter(|f| !f.as_os_str().is_empty());
        let folder = fs::canonicalize(folder.unwrap_or(Path::new("."))).ok()?;
        Some(folder.join(p.file_name()?))
    };
    canonical(a).is_some_and(|ca| canonical(b).is_some_and(|cb| ca == cb))
}

/// Leaves a conversation the process is done with to be reclaimed at exit with the rest of
/// its memory: freeing its many small allocations one by one takes a few percent of a run.
pub(crate) fn exit_without_freeing(conversation: impl Sized) {
    std::mem::forget(conversation);
}

/// Writes the output conversation and the report, both staged in full before either is moved
/// into place, then the summary line; a changed output must first read back as it was read
/// ([`Compacted::check_reads_back`]). With `archive`, the compaction's archive files are
/// written once both are staged, and removed again when they cannot be moved into place.
pub(crate) fn emit(
    compacted: &Compacted,
    summary: &str,
    input: &InputArgs,
    output: &OutputArgs,
    archive: bool,
) -> Result<ExitCode> {
    let Compacted {
        conversation,
        report,
        ..
    } = compacted;
    compacted
        .check_reads_back(input.format.format())
        .with_context(|| input.file.clone())?;
    let report_json = to_json(report);
    let staged_report = match output.report.as_deref() {
        None | Some("-") => None,
        Some(path) => Some(Staged::write(Path::new(path), |file| {
            file.write_all(report_json.as_bytes())
        })?),
    };
    let staged_output = match destination(input, output) {
        None => {
            let mut stdout = io::BufWriter::new(io::stdout().lock());
            format::write(conversation, &mut stdout)?;
            stdout.flush()?;
            None
        }
        Some(path) => Some(Staged::write(path, |file| {
            format::write(conversation, file)
        })?),
    };
    // The report on standard error is written before any file is moved into place: a report
    // that cannot be written is an error, and leaves the files as they were.
    if output.report.as_deref() == Some("-") {
        let mut stderr = io::stderr().lock();
        stderr
            .write_all(report_json.as_bytes())
            .and_then(|()| stderr.flush())
            .context("standard error: cannot write the report")?;
    }
    let created = if archive {
        compacted
            .write_archive()
            .context("cannot write the archive")?
    } else {
        Vec::new()
    };
    let committed = staged_output
        .map_or(Ok(()), Staged::commit)
        .and_then(|()| staged_report.map_or(Ok(()), Staged::commit));
    if let Err(err) = committed {
        for path in &created {
            let _ = fs::remove_file(path);
        }
        return Err(err);
    }
    if output.report.as_deref() != Some("-") && !output.quiet {
        say(&format!("ctxcompact: {summary}"));
    }
    debug_assert!(
        report.action != Action::CannotFit,
        "cannot_fit is an error, never emitted"
    );
    Ok(ExitCode::SUCCESS)
}

/// The file the output goes to: `-o FILE`, the input with `--in-place`, or `None` for
/// standard output (also `-o -`).
pub(crate) fn destination<'a>(input: &'a InputArgs, output: &'a OutputArgs) -> Option<&'a Path> {
    if output.in_place {
        return Some(Path::new(&input.file));
    }
    output.path.as_deref().filter(|p| *p != Path::new("-"))
}

/// The report as pretty JSON, one line ending it.
pub(crate) fn to_json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report).expect("a report always serializes");
    text.push('\n');
    text
}

/// Fails early, before any work, when an output path cannot be written or two of the input,
/// the output and the report are the same file.
pub(crate) fn check_paths(input: &InputArgs, output: &OutputArgs) -> Result<()> {
    if output.in_place && input.file == "-" {
        bail!("--in-place needs an input file, not standard input");
    }
    let input_path = (input.file != "-").then(|| Path::new(&input.file));
    let output_path = destination(input, output);
    let report_path = output
        .report
        .as_deref()
        .filter(|r| *r != "-")
        .map(Path::new);
    for path in [output_path, report_path].into_iter().flatten() {
        check_writable(path)?;
    }
    // Devices and pipes (`/dev/null`) may take any number of writers.
    let clash = |a: Option<&Path>, b: Option<&Path>| {
        a.zip(b)
            .is_some_and(|(a, b)| !fs::metadata(a).is_ok_and(|m| !m.is_file()) && same_file(a, b))
    };
    if !output.in_place && clash(output_path, input_path) {
        bail!(
            "{}: -o names the input file; replacing the input is a lossy edit: pass --in-place to do it",
            input.file
        );
    }
    if clash(report_path, input_path) {
        bail!("{}: --report names the input file", input.file);
    }
    if clash(report_path, output_path) {
        bail!(
            "{}: --report names the output file",
            report_path.map_or(String::new(), |p| p.display().to_string())
        );
    }
    Ok(())
}

/// Prints a line on standard error; a standard error that cannot be written is ignored.
pub(crate) fn say(line: &str) {
    let _ = writeln!(io::stderr(), "{line}");
}
