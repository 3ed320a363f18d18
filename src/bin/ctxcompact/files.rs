//! The conversation files a command-line path names: the file itself, or every `.json` and
//! `.jsonl` file below a folder.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};

/// Adds `path` if it is a file, or every `.json` file under it if it is a folder.
pub(crate) fn json_files(path: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    if !path.is_dir() {
        if !path.exists() {
            return Err(anyhow!("{}: no such file or folder", path.display()));
        }
        files.push(path.to_path_buf());
        return Ok(());
    }
    let entries = fs::read_dir(path).with_context(|| format!("{}: cannot list", path.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("{}: cannot list", path.display()))?;
        let child = entry.path();
        if child.is_dir() {
            json_files(&child, files)?;
        } else if child
            .extension()
            .is_some_and(|e| e == "json" || e == "jsonl")
        {
            files.push(child);
        }
    }
    Ok(())
}
