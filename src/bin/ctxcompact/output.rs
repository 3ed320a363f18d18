//! Where results go: standard output or files, written so that nothing is lost.
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

use anyhow::{Context, Result, anyhow, bail};

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
