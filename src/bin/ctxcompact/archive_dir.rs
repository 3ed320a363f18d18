//! The archive folder of `proxy`, `wrap` and `mcp` when none is given: one per user, in the
//! platform's cache directory (what it holds can be rebuilt from nowhere else, but losing it
//! loses no work: the agent goes on without what it would have recalled).

use std::path::PathBuf;

/// `<cache>/ctxcompact/archive`, where `<cache>` is `$XDG_CACHE_HOME` when it is an absolute
/// path, else the platform's: `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows,
/// `~/.cache` elsewhere. `None` when the environment names no home.
pub(crate) fn default() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let home = || var("HOME");
    let cache = var("XDG_CACHE_HOME").or_else(|| {
        if cfg!(target_os = "macos") {
            home().map(|h| h.join("Library").join("Caches"))
        } else if cfg!(windows) {
            var("LOCALAPPDATA")
        } else {
            home().map(|h| h.join(".cache"))
        }
    })?;
    Some(cache.join("ctxcompact").join("archive"))
}

/// The folder `--archive-dir` gave, else the default; says so when there is none.
pub(crate) fn given_or_default(given: Option<&PathBuf>) -> Option<PathBuf> {
    let dir = given.cloned().or_else(default);
    if dir.is_none() {
        crate::output::say(
            "ctxcompact: no cache directory (neither XDG_CACHE_HOME nor HOME is set): removed \
             history is not archived; pass --archive-dir DIR to archive it",
        );
    }
    dir
}
