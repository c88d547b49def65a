//! [`Offloader`]: where compressed messages and removed images go, so they can be read back (the
//! reference's `offloader`), and [`FileOffloader`], a directory on disk.

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use towerscope_core::id::fnv1a;
use towerscope_core::{
    AgentError, ContentBlock, DataBlock, DataSource, HintBlock, HintContent, Id, MediaBlock, Msg, ToolOutput,
    ToolResultBlock,
};

use super::read_tool::ReadTool;

/// Stores what compression takes out of the context, so it can be read back (the reference's
/// `offloader`).
///
/// With an offloader ([`AgentBuilder::offloader`](crate::AgentBuilder::offloader)) a compression
/// first stores the messages it summarises, then ends the summary with the reference's
/// reminder, `<system-reminder>The compressed context is offloaded to '{path}', you can refer to
/// it when needed.</system-reminder>`; an image past
/// [`ContextConfig::max_image_num`](towerscope_core::ContextConfig::max_image_num) is stored
/// before it is replaced, and its reminder says where; the part of a tool result cut at
/// `tool_result_limit` is stored and the truncation reminder names the file. A failure to store
/// messages or images fails the step and leaves the context as it was: nothing is dropped that
/// was not stored (a tool result keeps the plain reminder, with a warning).
///
/// Each call names its [`OffloadScope`]: the agent's session id and the user id of its
/// session store's key ([`AgentBuilder::session`](crate::AgentBuilder::session); empty without
/// one), so two users whose session ids repeat never share what was offloaded. An agent
/// without a session store has no user id: give each user's agents a directory of their own
/// (`FileOffloader::new(dir.join(user))`) if their session ids may repeat. User and session
/// ids keep their case in file names, so on a file system that ignores case (macOS, Windows)
/// `Bob` and `bob` share a directory. Files offloaded before they were kept by user stay under
/// `{dir}/sessions`, where [`FileOffloader::read_tool`] and the tool of agents without a user
/// id read them.
///
/// [`FileOffloader`] appends the messages, one JSON message per line, to
/// `{base}/sessions/{session_id}/context.jsonl` (as the reference's workspace does; their
/// inline images and files, and those of their tool results and hints, are written to files of
/// their own, below, and the line names each by its `file://` URL), the cut
/// part of a tool result to `{base}/sessions/{session_id}/tool_result-{id}.txt` (`(1)`, `(2)`, …
/// when the id repeats), and images to `{base}/data/{block_id}-{hash of its bytes}.{ext}`,
/// where `{base}` is the directory for an agent without a user id and `{dir}/users/{user_id}`
/// for one with. [`FileOffloader::read_context`] reads the messages back, and
/// [`FileOffloader::read_tool_for`] is the reference's `Read` tool (text, `cat -n` numbering,
/// `offset` and `limit`) confined to one user's files, for the model to follow the reminder.
///
/// # Example
///
/// ```
/// use towerscope_agent::compress::{FileOffloader, OffloadScope, Offloader};
/// use towerscope_core::{Id, Msg};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let dir = std::env::temp_dir().join(format!("towerscope-offload-doc-{}", std::process::id()));
/// let offloader = FileOffloader::new(&dir);
/// let session = Id::from("s1");
/// let alice = OffloadScope::new("alice", &session);
/// let path = offloader.offload_context(alice, vec![Msg::user("user", "an old message").into()]).await?;
/// assert!(path.ends_with("users/alice/sessions/s1/context.jsonl"));
/// let back = offloader.read_context(alice).await?;
/// assert_eq!(back[0].text_content().as_deref(), Some("an old message"));
/// // Bob's session s1 is his own.
/// assert!(offloader.read_context(OffloadScope::new("bob", &session)).await?.is_empty());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(()) }
/// ```
pub trait Offloader: Send + Sync + 'static {
    /// Stores messages a compression summarises; returns where they are, for the model (the
    /// reference's `offload_context`).
    fn offload_context(
        &self,
        scope: OffloadScope<'_>,
        msgs: Vec<Arc<Msg>>,
    ) -> BoxFuture<'static, Result<String, AgentError>>;

    /// Stores an inline image the context no longer keeps; returns where it is (the
    /// reference's `offload_data_block`).
    fn offload_data_block(
        &self,
        scope: OffloadScope<'_>,
        block: DataBlock,
    ) -> BoxFuture<'static, Result<String, AgentError>>;

    /// Stores the part of a tool result cut at
    /// [`ContextConfig::tool_result_limit`](towerscope_core::ContextConfig::tool_result_limit);
    /// returns where it is (the reference's `offload_tool_result`).
    fn offload_tool_result(
        &self,
        scope: OffloadScope<'_>,
        result: ToolResultBlock,
    ) -> BoxFuture<'static, Result<String, AgentError>>;
}

/// Whose content an [`Offloader`] stores: the agent's session, and the user of its session
/// store's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffloadScope<'a> {
    /// The user id of the agent's [`SessionKey`](crate::session::SessionKey); empty when the
    /// agent keeps no session or its key names no user.
    pub user_id: &'a str,
    /// The agent's session id.
    pub session_id: &'a Id,
}

impl<'a> OffloadScope<'a> {
    /// The session `session_id` of user `user_id` (empty for none).
    pub fn new(user_id: &'a str, session_id: &'a Id) -> Self {
        Self { user_id, session_id }
    }
}

/// An [`Offloader`] writing into a directory (see [`Offloader`] for the layout).
#[derive(Debug, Clone)]
pub struct FileOffloader {
    dir: PathBuf,
}

impl FileOffloader {
    /// Offloads into `dir` (created when first written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory of a user's files: the offloader's own for no user id,
    /// `{dir}/users/{user_id}` for one.
    pub fn user_dir(&self, user_id: &str) -> PathBuf {
        if user_id.is_empty() {
            self.dir.clone()
        } else {
            self.dir.join("users").join(file_name(user_id))
        }
    }

    /// The directory of a session's files.
    fn session_dir(&self, scope: OffloadScope<'_>) -> PathBuf {
        self.user_dir(scope.user_id)
            .join("sessions")
            .join(file_name(&scope.session_id.to_string()))
    }

    /// The file a session's compressed messages are appended to.
    pub fn context_path(&self, scope: OffloadScope<'_>) -> PathBuf {
        self.session_dir(scope).join("context.jsonl")
    }

    /// The messages offloaded for a session, oldest first (none when nothing was offloaded),
    /// with the content they were given: an image written to a file of its own is read back
    /// inline (its bytes, base64-encoded; one whose file is gone keeps its `file://` URL), so
    /// the messages hold every image of the session in memory.
    pub async fn read_context(&self, scope: OffloadScope<'_>) -> Result<Vec<Msg>, AgentError> {
        let path = self.context_path(scope);
        let data = self.user_dir(scope.user_id).join("data");
        blocking(move || {
            let text = match fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(io_error(&path, &e)),
            };
            // No image was moved for this user if there is no such directory.
            let data = fs::canonicalize(&data).ok();
            // A last line without its line break was cut short (a process killed while it
            // appended): skipped, with a warning, rather than failing the whole file.
            let whole = match text.rfind('\n') {
                Some(end) if end + 1 < text.len() => {
                    tracing::warn!(file = %path.display(), "the last line of an offloaded context was cut short; skipped");
                    &text[..=end]
                }
                None if !text.is_empty() => {
                    tracing::warn!(file = %path.display(), "the only line of an offloaded context was cut short; skipped");
                    ""
                }
                _ => text.as_str(),
            };
            whole
                .lines()
                .filter(|l| !l.trim().is_empty())
                .enumerate()
                .map(|(i, line)| {
                    let mut msg: Msg = serde_json::from_str(line).map_err(|e| {
                        AgentError::State(format!("{}: line {} is not a message: {e}", path.display(), i + 1))
                    })?;
                    if let Some(data) = &data {
                        for_each_data(&mut msg, &mut |block| {
                            read_back(data, block);
                            Ok(())
                        })?;
                    }
                    Ok(msg)
                })
                .collect()
        })
        .await
    }

    /// The reference's `Read` tool, reading only the files of user `user_id` (see
    /// [`user_dir`](Self::user_dir)); give each user's agent its own, so a model cannot read
    /// another user's offloaded messages. For no user id it reads the directory without
    /// `{dir}/users`.
    pub fn read_tool_for(&self, user_id: &str) -> ReadTool {
        let tool = ReadTool::new(self.user_dir(user_id));
        if user_id.is_empty() {
            tool.except(self.dir.join("users"))
        } else {
            tool
        }
    }

    /// The reference's `Read` tool over the whole directory: every user's files (and those
    /// offloaded before files were kept by user, under `{dir}/sessions`). For an application
    /// whose agents keep no user id; otherwise use [`read_tool_for`](Self::read_tool_for).
    pub fn read_tool(&self) -> ReadTool {
        ReadTool::new(self.dir.clone())
    }
}

/// Cuts a last line left without its line break (an append cut short) off `file`, reading it
/// backwards from its end a block at a time (only the torn line is read).
fn cut_torn_tail(file: &mut fs::File) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let len = file.metadata()?.len();
    let mut end = len;
    let mut buf = [0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..usize::try_from(end - start).unwrap_or(0)];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        if end == len && chunk.last() == Some(&b'\n') {
            return Ok(());
        }
        if let Some(i) = chunk.iter().rposition(|b| *b == b'\n') {
            return file.set_len(start + i as u64 + 1);
        }
        end = start;
    }
    file.set_len(0)
}

impl Offloader for FileOffloader {
    fn offload_context(
        &self,
        scope: OffloadScope<'_>,
        msgs: Vec<Arc<Msg>>,
    ) -> BoxFuture<'static, Result<String, AgentError>> {
        let path = self.context_path(scope);
        let data = self.user_dir(scope.user_id).join("data");
        Box::pin(blocking(move || {
            let mut lines = String::new();
            for msg in &msgs {
                let moved = inline_data_to_files(msg, &data)?;
                let line = serde_json::to_string(moved.as_ref().unwrap_or(msg))
                    .map_err(|e| AgentError::State(format!("a message could not be offloaded: {e}")))?;
                lines.push_str(&line);
                lines.push('\n');
            }
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(|e| io_error(parent, &e))?;
            }
            let mut file = OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(&path)
                .map_err(|e| io_error(&path, &e))?;
            // A line an earlier append left torn (a process killed) is cut off first: glued to
            // this one, it would make both unreadable. A write cut short now is undone.
            cut_torn_tail(&mut file).map_err(|e| io_error(&path, &e))?;
            let before = file.metadata().map_err(|e| io_error(&path, &e))?.len();
            if let Err(e) = file.write_all(lines.as_bytes()).and_then(|()| file.sync_data()) {
                let _ = file.set_len(before);
                return Err(io_error(&path, &e));
            }
            Ok(path.display().to_string())
        }))
    }

    fn offload_tool_result(
        &self,
        scope: OffloadScope<'_>,
        result: ToolResultBlock,
    ) -> BoxFuture<'static, Result<String, AgentError>> {
        let base = self.session_dir(scope);
        let data = self.user_dir(scope.user_id).join("data");
        Box::pin(blocking(move || {
            let mut text = String::new();
            match &result.output {
                ToolOutput::Text(t) => text.push_str(t),
                ToolOutput::Blocks(blocks) => {
                    for block in blocks {
                        match block {
                            MediaBlock::Text(t) => text.push_str(&t.text),
                            MediaBlock::Data(d) => {
                                let url = match &d.source {
                                    DataSource::Url { url, .. } => url.clone(),
                                    DataSource::Base64 { .. } => write_data(&data, d)?,
                                };
                                let name = d.name.as_deref().unwrap_or_default();
                                let media_type = d.source.media_type();
                                text.push_str(&format!("<data url='{url}' name='{name}' media_type='{media_type}'/>"));
                            }
                        }
                    }
                }
            }
            fs::create_dir_all(&base).map_err(|e| io_error(&base, &e))?;
            let stem = format!("tool_result-{}", file_name(&result.id.to_string()));
            // A second result of the same id gets (1), (2), … instead of replacing the first;
            // the same result again (a durable reply replayed, a retried step) gets the name it
            // had, so what the context says of it does not change.
            let mut path = base.join(format!("{stem}.txt"));
            let mut index = 1;
            let file = loop {
                match OpenOptions::new().write(true).create_new(true).open(&path) {
                    Ok(file) => break file,
                    Err(e)
                        if e.kind() == std::io::ErrorKind::AlreadyExists
                            && fs::read(&path).is_ok_and(|there| there == text.as_bytes()) =>
                    {
                        return Ok(path.display().to_string());
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && index < 10_000 => {
                        path = base.join(format!("{stem}({index}).txt"));
                        index += 1;
                    }
                    Err(e) => return Err(io_error(&path, &e)),
                }
            };
            let mut file = file;
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_data())
                .map_err(|e| io_error(&path, &e))?;
            Ok(path.display().to_string())
        }))
    }

    fn offload_data_block(
        &self,
        scope: OffloadScope<'_>,
        block: DataBlock,
    ) -> BoxFuture<'static, Result<String, AgentError>> {
        let data = self.user_dir(scope.user_id).join("data");
        Box::pin(blocking(move || write_data(&data, &block)))
    }
}

/// `msg` with each inline data block (its own, those of its tool results and of its hints)
/// written to a file under `data` and named by that file's `file://` URL (as the reference
/// does, with a path), so the JSONL file holds no image bytes; `None` when it has no inline
/// data. A block whose base64 does not decode stays inline: its bytes cannot be written, and
/// the compression must not fail on it.
fn inline_data_to_files(msg: &Msg, data: &Path) -> Result<Option<Msg>, AgentError> {
    if !any_data(msg, |block| matches!(block.source, DataSource::Base64 { .. })) {
        return Ok(None);
    }
    let mut moved = msg.clone();
    for_each_data(&mut moved, &mut |block| {
        if let DataSource::Base64 { media_type, .. } = &block.source
            && let Some(bytes) = block.source.decode_bytes()
        {
            let path = write_bytes(data, block, media_type, &bytes)?;
            let media_type = media_type.clone();
            block.source = DataSource::Url {
                url: file_url(&path),
                media_type,
            };
        }
        Ok(())
    })?;
    Ok(Some(moved))
}

/// An image read back inline from its `file://` URL when the URL names a file directly in
/// `data` (the canonical path of the user's image directory: an URL a message brought itself,
/// naming any other file, is left as it is, as is one whose file is gone).
fn read_back(data: &Path, block: &mut DataBlock) {
    let DataSource::Url { url, media_type } = &block.source else {
        return;
    };
    let Some(path) = path_of_file_url(url) else {
        return;
    };
    // The canonical path is the one checked and the one read.
    let Ok(path) = fs::canonicalize(&path) else {
        return;
    };
    if path.parent() != Some(data) {
        return;
    }
    if let Ok(bytes) = fs::read(&path) {
        block.source = DataSource::inline(&bytes, media_type.clone());
    }
}

/// Whether a data block of `msg` (its own, a tool result's, a hint's) is one `test` accepts.
fn any_data(msg: &Msg, test: impl Fn(&DataBlock) -> bool) -> bool {
    let in_media = |blocks: &[MediaBlock]| blocks.iter().any(|b| matches!(b, MediaBlock::Data(d) if test(d)));
    msg.content.iter().any(|block| match block {
        ContentBlock::Data(d) => test(d),
        ContentBlock::ToolResult(ToolResultBlock {
            output: ToolOutput::Blocks(blocks),
            ..
        }) => in_media(blocks),
        ContentBlock::Hint(HintBlock {
            hint: HintContent::Blocks(blocks),
            ..
        }) => in_media(blocks),
        _ => false,
    })
}

/// Runs `f` on each data block of `msg` (its own, a tool result's, a hint's), in order.
fn for_each_data(msg: &mut Msg, f: &mut dyn FnMut(&mut DataBlock) -> Result<(), AgentError>) -> Result<(), AgentError> {
    for block in &mut msg.content {
        let media = match block {
            ContentBlock::Data(d) => {
                f(d)?;
                continue;
            }
            ContentBlock::ToolResult(ToolResultBlock {
                output: ToolOutput::Blocks(blocks),
                ..
            })
            | ContentBlock::Hint(HintBlock {
                hint: HintContent::Blocks(blocks),
                ..
            }) => blocks,
            _ => continue,
        };
        for block in media {
            if let MediaBlock::Data(d) = block {
                f(d)?;
            }
        }
    }
    Ok(())
}

/// The `file://` URL of `path` (made absolute; bytes other than letters, digits, `-._~/`
/// percent-encoded).
fn file_url(path: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let bytes = os_bytes(absolute.as_os_str());
    let mut url = String::with_capacity(bytes.len() + 7);
    url.push_str("file://");
    for &byte in bytes.iter() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}

/// The path of a `file://` URL [`file_url`] wrote; `None` for any other URL.
fn path_of_file_url(url: &str) -> Option<PathBuf> {
    path_from_bytes(crate::session::percent_decode(url.strip_prefix("file://")?)?)
}

/// A path's bytes: on Unix its own (a name need not be UTF-8), elsewhere its UTF-8 text.
#[cfg(unix)]
fn os_bytes(path: &std::ffi::OsStr) -> std::borrow::Cow<'_, [u8]> {
    std::borrow::Cow::Borrowed(std::os::unix::ffi::OsStrExt::as_bytes(path))
}

#[cfg(not(unix))]
fn os_bytes(path: &std::ffi::OsStr) -> std::borrow::Cow<'_, [u8]> {
    match path.to_string_lossy() {
        std::borrow::Cow::Borrowed(text) => std::borrow::Cow::Borrowed(text.as_bytes()),
        std::borrow::Cow::Owned(text) => std::borrow::Cow::Owned(text.into_bytes()),
    }
}

#[cfg(unix)]
fn path_from_bytes(bytes: Vec<u8>) -> Option<PathBuf> {
    Some(PathBuf::from(
        <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes),
    ))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: Vec<u8>) -> Option<PathBuf> {
    String::from_utf8(bytes).ok().map(PathBuf::from)
}

/// Writes an inline data block's bytes under `data`; returns the file's path.
fn write_data(data: &Path, block: &DataBlock) -> Result<String, AgentError> {
    let DataSource::Base64 { media_type, .. } = &block.source else {
        return Err(AgentError::State("only inline data is offloaded".to_owned()));
    };
    let Some(bytes) = block.source.decode_bytes() else {
        return Err(AgentError::State(format!(
            "the data block {} is not valid base64",
            block.id
        )));
    };
    write_bytes(data, block, media_type, &bytes).map(|path| path.display().to_string())
}

/// Writes `bytes`, the decoded data of `block`, under `data`; returns the file's path. It is
/// replaced atomically as a file store's session is (`session::file`'s temporary file, sync and
/// rename), so its name never shows a partial file; one already there that holds other bytes
/// (cut short by a crash before this rule) is written again.
fn write_bytes(data: &Path, block: &DataBlock, media_type: &str, bytes: &[u8]) -> Result<PathBuf, AgentError> {
    // Named by the block's id and its bytes: block ids may come from clients, and a different
    // image under an id already written gets its own file (the same image is written once).
    let path = data.join(format!(
        "{}-{:016x}.{}",
        file_name(&block.id.to_string()),
        fnv1a(bytes),
        extension(media_type)
    ));
    fs::create_dir_all(data).map_err(|e| io_error(data, &e))?;
    if !fs::read(&path).is_ok_and(|there| there == bytes) {
        crate::session::replace_file(&path, bytes).map_err(|e| io_error(&path, &e))?;
    }
    Ok(path)
}

/// Runs blocking file work on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AgentError> + Send + 'static,
) -> Result<T, AgentError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AgentError::State(format!("the offloader's file work failed: {e}")))?
}

fn io_error(path: &Path, e: &std::io::Error) -> AgentError {
    AgentError::State(format!("{}: {e}", path.display()))
}

/// A file name that stays inside its directory whatever the id holds, and that two different
/// ids do not share: letters, digits, `-` and `_` stay (so the names given before stay the
/// same), every other byte is written `~XX` (its hex value), so `conv.1` and `conv_1` are
/// different names. A long id keeps its first 96 characters and adds `~~` and a hash of the
/// whole id (`~~` is in no encoded byte).
fn file_name(id: &str) -> String {
    let mut name = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            name.push(char::from(byte));
        } else {
            name.push_str(&format!("~{byte:02x}"));
        }
    }
    if name.is_empty() {
        return "~".to_owned();
    }
    if name.len() > 128 {
        // Cut on a boundary of the encoding: every character is ASCII, and `~XX` is not split.
        let mut cut = 96;
        while name.as_bytes()[cut - 1] == b'~' || name.as_bytes().get(cut - 2) == Some(&b'~') {
            cut -= 1;
        }
        name.truncate(cut);
        name.push_str(&format!("~~{:016x}", fnv1a(id.as_bytes())));
    }
    name
}

fn extension(media_type: &str) -> &'static str {
    match media_type {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path's `file://` URL names it again, whatever bytes it holds (a name need not be
    /// UTF-8 on Unix); other URLs name no file.
    #[test]
    fn file_urls_round_trip() {
        let plain = Path::new("/tmp/off load/data/a~1%.png");
        assert_eq!(file_url(plain), "file:///tmp/off%20load/data/a~1%25.png");
        assert_eq!(path_of_file_url(&file_url(plain)).as_deref(), Some(plain));
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let odd = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/d\xff/x.png"));
            assert_eq!(path_of_file_url(&file_url(odd)).as_deref(), Some(odd));
        }
        assert_eq!(path_of_file_url("https://example.invalid/a.png"), None);
        assert_eq!(path_of_file_url("file:///a%zz"), None);
    }

    #[test]
    fn ids_never_leave_the_directory() {
        assert_eq!(file_name("../../etc/passwd"), "~2e~2e~2f~2e~2e~2fetc~2fpasswd");
        assert_eq!(file_name(""), "~");
        // The names given before this encoding, for ids of letters, digits, `-` and `_`.
        assert_eq!(file_name("abc-1_2"), "abc-1_2");
    }

    /// Two different ids never share a file name (the sessions `conv.1` and `conv_1` shared a
    /// directory, and read each other's offloaded messages).
    #[test]
    fn different_ids_get_different_names() {
        let long = |tail: &str| format!("{}{tail}", "x".repeat(200));
        let ids = [
            "conv.1",
            "conv_1",
            "conv 1",
            "会话1",
            "对话1",
            "_",
            "",
            "~",
            &long("a"),
            &long("b"),
            &long("_é"),
        ];
        let names: std::collections::HashSet<String> = ids.iter().map(|id| file_name(id)).collect();
        assert_eq!(names.len(), ids.len(), "{names:?}");
        assert!(
            names.iter().all(|n| n.len() <= 128 && !n.contains(['/', '.', '\\'])),
            "{names:?}"
        );
    }
}
