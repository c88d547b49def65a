//! Replacing a file so that a crash at any point leaves the old or the new content: write a
//! temporary file beside it, sync it, rename it over the target, sync the directory.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The steps of [`replace_with`], in order (a test fails one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The temporary file was created (empty).
    Created,
    /// Half of the content was written.
    HalfWritten,
    /// All of it was written, not yet synced.
    Written,
    /// It was synced to disk, not yet renamed.
    Synced,
    /// About to rename it over the target.
    Renaming,
}

impl Step {
    #[cfg(test)]
    pub(crate) const ALL: [Step; 5] = [
        Step::Created,
        Step::HalfWritten,
        Step::Written,
        Step::Synced,
        Step::Renaming,
    ];
}

/// Replaces `target` with `bytes` atomically (see the module docs).
pub(crate) fn replace(target: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_with(target, bytes, |_| Ok(()))
}

/// [`replace`], calling `at` after each step; an error from `at` stops the replacement there, as
/// a crash would (the temporary file is removed, unless the process died).
pub(crate) fn replace_with(target: &Path, bytes: &[u8], mut at: impl FnMut(Step) -> io::Result<()>) -> io::Result<()> {
    let tmp = temporary_beside(target)?;
    let result = (|| {
        // Truncated if there: a save killed before its rename left it, and saves of one
        // session are serialised by its lock.
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        at(Step::Created)?;
        let half = bytes.len() / 2;
        file.write_all(&bytes[..half])?;
        at(Step::HalfWritten)?;
        file.write_all(&bytes[half..])?;
        at(Step::Written)?;
        file.sync_all()?;
        at(Step::Synced)?;
        drop(file);
        at(Step::Renaming)?;
        fs::rename(&tmp, target)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(target)
}

/// `.{name}.tmp` beside `target`: hidden, never a session's name, and one per session, so that
/// a save killed before its rename leaves one file, which the next save overwrites (a name per
/// save left one more full copy of the session for every save killed).
fn temporary_beside(target: &Path) -> io::Result<PathBuf> {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the target has no file name"))?;
    Ok(target.with_file_name(format!(".{name}.tmp")))
}

/// Makes the rename durable: syncs the directory that holds `target` (Unix; elsewhere the
/// rename is as durable as the platform makes it).
fn sync_dir(target: &Path) -> io::Result<()> {
    #[cfg(unix)]
    if let Some(dir) = target.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        fs::File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = target;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_replacement_stopped_at_any_step_leaves_the_old_content_and_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!(
            "towerscope-replace-{}-{}",
            std::process::id(),
            fastrand::u32(..)
        ));
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("s.json");
        replace(&target, b"old content").unwrap();
        for step in Step::ALL {
            let err = replace_with(&target, b"new content, longer", |s| {
                if s == step {
                    Err(io::Error::other("crash"))
                } else {
                    Ok(())
                }
            })
            .unwrap_err();
            assert_eq!(err.to_string(), "crash");
            assert_eq!(fs::read(&target).unwrap(), b"old content", "after a stop at {step:?}");
            let names: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(names, ["s.json"], "after a stop at {step:?}");
        }
        replace(&target, b"new").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        fs::remove_dir_all(&dir).unwrap();
    }
}
