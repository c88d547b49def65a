//! [`JsonFileStore`]: one JSON file per session in a directory; the embedded default.

pub(crate) mod replace;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use towerscope_core::AgentError;

use super::SessionDocument;
use super::document::{read, write};
use super::key::{SessionKey, decode, encode};
use super::store::{Expect, SessionStore, StoreFuture, Stored, conflict, satisfies};

/// The longest key a [`JsonFileStore`] takes once encoded (`{user_id}_{session_id}`, each id
/// escaped as the [`SessionKey`] docs say; an escaped byte takes three), in bytes: its
/// temporary files add up to 38 bytes to the name, and most file systems allow 255. A longer
/// key fails its load, the first thing a reply does, before anything runs.
pub const MAX_FILE_KEY_LEN: usize = 217;

/// Sessions as JSON files in one directory: `{user_id}_{session_id}.json`, or
/// `{session_id}.json` without a user id (the reference's `JSONSession` names; ids are encoded,
/// see [`SessionKey`]). Nothing to install; the directory is created on the first save.
///
/// - **Crash safety**: a save writes a temporary file beside the session's, syncs it, renames it
///   over the session's file and syncs the directory, so a crash at any point leaves the old or
///   the new session, never a torn file. A crash can leave a hidden `.….tmp` file, which
///   loading and listing ignore.
/// - **Two processes**: saves and deletes of one session take an advisory lock on
///   `{name}.json.lock` (`flock` on Unix, `LockFileEx` on Windows), so they never interleave,
///   and a save checks the revision under that lock ([`Expect`]): the loser of a race gets
///   [`AgentError::Conflict`]. Loads take no lock (a rename is atomic). A delete of a session
///   that has no file returns `false` without taking the lock, so it creates no file. The lock
///   file of a session that was saved stays after its delete: removing a lock file while
///   another process waits on it would let two writers in.
/// - The file holds the [`SessionDocument`] JSON with its `revision` first, then `bytes`, the
///   length of the rest (a file cut short is refused by a save, not overwritten).
/// - **Names and case**: letters keep their case in file names (the reference's names), so on
///   a file system that ignores case (macOS and Windows by default) ids that differ only in
///   case, `Bob` and `bob`, name the same file and share a session. There, use ids that differ
///   otherwise (uuids do), or `RedisStore` (feature `redis`). A key longer
///   than [`MAX_FILE_KEY_LEN`] once encoded is refused.
///
/// Blocking file I/O runs on tokio's blocking pool (`spawn_blocking`), so the store needs a
/// tokio runtime.
///
/// See [`SessionStore`] for an example.
#[derive(Debug, Clone)]
pub struct JsonFileStore {
    dir: Arc<PathBuf>,
}

impl JsonFileStore {
    /// A store saving into `dir` (created when the first session is saved).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Arc::new(dir.into()),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `key`'s session.
    pub fn path_of(&self, key: &SessionKey) -> PathBuf {
        self.dir.join(format!("{}.json", key.file_stem()))
    }

    fn lock_path(&self, key: &SessionKey) -> PathBuf {
        self.dir.join(format!("{}.json.lock", key.file_stem()))
    }

    fn failed(&self, e: io::Error) -> AgentError {
        AgentError::unavailable(format!("session store {}", self.dir.display()), e)
    }

    /// Refuses a key whose file names would be too long for the file system (a lasting error:
    /// retrying cannot help).
    fn fits(key: &SessionKey) -> Result<(), AgentError> {
        let length = key.file_stem().len();
        if length > MAX_FILE_KEY_LEN {
            return Err(AgentError::validation(format!(
                "session {key}: its file name would be {length} bytes, more than the {MAX_FILE_KEY_LEN} a file \
                 store takes (each byte outside A-Z a-z 0-9 - . takes three); use shorter ids"
            )));
        }
        Ok(())
    }

    fn load_now(&self, key: &SessionKey) -> Result<Option<Stored>, AgentError> {
        Self::fits(key)?;
        let bytes = match fs::read(self.path_of(key)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.failed(e)),
        };
        let (document, revision) = read(&bytes)?;
        Ok(Some(Stored {
            revision: revision.unwrap_or(0),
            document,
        }))
    }

    /// Saves under the session's lock; `body` is the document JSON without a revision.
    fn save_now(&self, key: &SessionKey, body: &[u8], expect: Expect) -> Result<u64, AgentError> {
        Self::fits(key)?;
        fs::create_dir_all(&*self.dir).map_err(|e| self.failed(e))?;
        let _lock = self.lock(key)?;
        let path = self.path_of(key);
        let found = current_revision(&path).map_err(|e| match e.kind() {
            // A file that is not a session is not a passing failure: retrying cannot help.
            io::ErrorKind::InvalidData => AgentError::validation(format!(
                "session {key}: its file {} is not a session document: {e}",
                path.display()
            )),
            _ => self.failed(e),
        })?;
        if !satisfies(expect, found) {
            return Err(conflict(key, expect, found));
        }
        let revision = found.unwrap_or(0).checked_add(1).ok_or_else(|| {
            AgentError::validation(format!("session {key}: its revision cannot grow past {}", u64::MAX))
        })?;
        replace::replace(&path, &with_revision(body, revision)).map_err(|e| self.failed(e))?;
        Ok(revision)
    }

    fn delete_now(&self, key: &SessionKey) -> Result<bool, AgentError> {
        Self::fits(key)?;
        let path = self.path_of(key);
        // No file, nothing to delete, and no lock file made for it: deletes of ids that were
        // never saved leave no trace. A save racing this one is simply ordered after it.
        match fs::symlink_metadata(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(self.failed(e)),
        }
        let _lock = self.lock(key)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.failed(e)),
        }
    }

    fn list_now(&self, user_id: &str) -> Result<Vec<String>, AgentError> {
        let entries = match fs::read_dir(&*self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.failed(e)),
        };
        let prefix = if user_id.is_empty() {
            String::new()
        } else {
            format!("{}_", encode(user_id))
        };
        let mut ids = Vec::new();
        for entry in entries {
            let name = entry.map_err(|e| self.failed(e))?.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            let Some(rest) = stem.strip_prefix(&prefix) else {
                continue;
            };
            // Without a user id, only names without a user part; `_` is always encoded in ids.
            if rest.contains('_') || rest.starts_with('.') {
                continue;
            }
            if let Some(id) = decode(rest) {
                ids.push(id);
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// The exclusive advisory lock of `key`'s session, released when the file is dropped.
    fn lock(&self, key: &SessionKey) -> Result<File, AgentError> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.lock_path(key))
            .map_err(|e| self.failed(e))?;
        fs4::FileExt::lock(&file).map_err(|e| self.failed(e))?;
        Ok(file)
    }

    fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Self) -> Result<T, AgentError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let store = self.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || f(&store))
                .await
                .map_err(|e| AgentError::other(format!("a session file task failed: {e}")))?
        })
    }
}

impl SessionStore for JsonFileStore {
    fn load<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, Option<Stored>> {
        let key = key.clone();
        self.blocking(move |s| s.load_now(&key))
    }

    fn save<'a>(&'a self, key: &'a SessionKey, document: &'a SessionDocument, expect: Expect) -> StoreFuture<'a, u64> {
        let body = match write(document, None) {
            Ok(body) => body,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let key = key.clone();
        self.blocking(move |s| s.save_now(&key, &body, expect))
    }

    fn delete<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, bool> {
        let key = key.clone();
        self.blocking(move |s| s.delete_now(&key))
    }

    fn list<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Vec<String>> {
        let user_id = user_id.to_owned();
        self.blocking(move |s| s.list_now(&user_id))
    }
}

/// `body` (`{"version":…}`) with `"revision":N` first, then `"bytes":L`, the body's length:
/// the file's length is then known from its head, and a file cut short is told from a whole
/// one by its size.
fn with_revision(body: &[u8], revision: u64) -> Vec<u8> {
    let head = format!("{{\"revision\":{revision},\"bytes\":{},", body.len());
    let mut out = Vec::with_capacity(head.len() + body.len());
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(body.get(1..).unwrap_or_default());
    out
}

/// The revision of the session file at `path`: read from its first bytes when it starts as
/// this store writes it and is as long as its head says (a file cut short, by hand or by a
/// copy, has its head and not its length: it is read whole, and refused, so a save does not
/// overwrite it; a file written before the head held the length must end as a document does),
/// otherwise from the whole document; `None` when there is no file.
fn current_revision(path: &Path) -> io::Result<Option<u64>> {
    use std::io::{Seek, SeekFrom};
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut head = [0u8; 80];
    let n = read_up_to(&mut file, &mut head)?;
    if let Some(parsed) = parse_head(&head[..n]) {
        let len = file.seek(SeekFrom::End(0))?;
        let whole = match parsed.body_bytes {
            Some(body) => {
                (parsed.head_len as u64)
                    .checked_add(body)
                    .and_then(|l| l.checked_sub(1))
                    == Some(len)
            }
            None => {
                let mut tail = [0u8; 8];
                file.seek(SeekFrom::Start(len.saturating_sub(tail.len() as u64)))?;
                let m = read_up_to(&mut file, &mut tail)?;
                tail[..m].trim_ascii_end().ends_with(b"}")
            }
        };
        if whole {
            return Ok(Some(parsed.revision));
        }
    }
    let bytes = fs::read(path)?;
    match read(&bytes) {
        Ok((_, revision)) => Ok(Some(revision.unwrap_or(0))),
        Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            m => n += m,
        }
    }
    Ok(n)
}

/// What a file's head says: `{"revision":N,` and, in files written since, `"bytes":L,`.
#[derive(Debug, PartialEq)]
struct Head {
    revision: u64,
    body_bytes: Option<u64>,
    /// The head's length, up to the `,` after the last of these fields.
    head_len: usize,
}

/// `{"revision":N,` then `"bytes":L,` (when there) from the start of a file.
fn parse_head(head: &[u8]) -> Option<Head> {
    fn number(text: &[u8]) -> Option<(u64, usize)> {
        let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || text.get(digits) != Some(&b',') {
            return None;
        }
        let n = std::str::from_utf8(&text[..digits]).ok()?.parse().ok()?;
        Some((n, digits + 1))
    }
    const REVISION: &[u8] = b"{\"revision\":";
    const BYTES: &[u8] = b"\"bytes\":";
    let (revision, used) = number(head.strip_prefix(REVISION)?)?;
    let mut head_len = REVISION.len() + used;
    let body_bytes = match head[head_len..].strip_prefix(BYTES).and_then(number) {
        Some((bytes, used)) => {
            head_len += BYTES.len() + used;
            Some(bytes)
        }
        None => None,
    };
    Some(Head {
        revision,
        body_bytes,
        head_len,
    })
}

#[cfg(test)]
mod tests;
