//! [`Cassette`]: one file of recorded interactions, its mode, and what was replayed.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use towerscope_core::AgentError;
use towerscope_core::sequence::{Scoped, Sequence};

use super::diff::{CassetteError, no_match};
use super::file::{self, Interaction, Outcome};
use super::key::RequestKey;
use super::mode::CassetteMode;
use super::redact::HeaderRules;

/// A cassette: a file of recorded HTTP interactions and what to do with a request (see the
/// [module docs](super)). Clones share the file and what was replayed.
#[derive(Clone)]
pub struct Cassette {
    shared: Arc<Shared>,
}

struct Shared {
    path: PathBuf,
    mode: CassetteMode,
    rules: HeaderRules,
    state: Mutex<State>,
    /// The ids and time of [`Cassette::scope`]: one count for all the cassette's scopes.
    sequence: Sequence,
}

#[derive(Default)]
struct State {
    /// The recorded interactions, by number.
    recorded: Vec<Entry>,
    /// The positions in `recorded` of the interactions not played yet, by key, in order.
    unplayed: HashMap<RequestKey, VecDeque<usize>>,
    /// The number of the next recorded interaction.
    next: u32,
    /// Whether the file is to be emptied before the first interaction is written (record
    /// mode: an old recording stays whole until a new one has something to write).
    empty_first: bool,
}

/// A recorded interaction, its key, and whether it was replayed or recorded in this run.
struct Entry {
    interaction: Interaction,
    key: RequestKey,
    played: bool,
}

/// Opens a [`Cassette`] with settings; see [`Cassette::builder`].
#[derive(Debug, Clone)]
pub struct CassetteBuilder {
    path: PathBuf,
    mode: Option<CassetteMode>,
    rules: HeaderRules,
}

impl CassetteBuilder {
    /// The mode, instead of [`TOWERSCOPE_CASSETTE`](super::MODE_VAR) (which is then not read).
    pub fn mode(mut self, mode: CassetteMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Writes this request header's value (by default only the content type, accept, user
    /// agent and the providers' version headers are written; every other value is redacted).
    pub fn keep_header(mut self, name: impl Into<String>) -> Self {
        self.rules.keep.push(name.into().to_ascii_lowercase());
        self
    }

    /// Redacts this header in responses too, and replaces its request value wherever it
    /// appears in what is written (as is done for the API key).
    pub fn redact_header(mut self, name: impl Into<String>) -> Self {
        self.rules.redact.push(name.into().to_ascii_lowercase());
        self
    }

    /// Opens the cassette: in replay and record-missing mode the file is read (in replay it
    /// must exist); in record mode it is emptied when the first interaction is written
    /// (created with its directory if missing), so a run that records nothing (a missing API
    /// key, say) leaves the old recording as it was.
    pub fn open(self) -> Result<Cassette, AgentError> {
        let mode = match self.mode {
            Some(mode) => mode,
            None => CassetteMode::from_env()?,
        };
        let recorded = match mode {
            CassetteMode::Record => Vec::new(),
            CassetteMode::RecordMissing if !self.path.exists() => {
                file::truncate(&self.path)?;
                Vec::new()
            }
            CassetteMode::Replay | CassetteMode::RecordMissing => file::read(&self.path)?,
        };
        let next = recorded
            .iter()
            .map(|i| i.n)
            .max()
            .unwrap_or(0)
            .checked_add(1)
            .ok_or_else(|| {
                AgentError::validation(format!(
                    "cassette {}: interaction numbers are used up (one is {}); record it again",
                    self.path.display(),
                    u32::MAX
                ))
            })?;
        let mut unplayed: HashMap<RequestKey, VecDeque<usize>> = HashMap::new();
        let recorded = recorded
            .into_iter()
            .enumerate()
            .map(|(at, interaction)| {
                let key = RequestKey::of(&interaction.request);
                unplayed.entry(key.clone()).or_default().push_back(at);
                Entry {
                    interaction,
                    key,
                    played: false,
                }
            })
            .collect();
        Ok(Cassette {
            shared: Arc::new(Shared {
                path: self.path,
                mode,
                rules: self.rules,
                sequence: Sequence::new(),
                state: Mutex::new(State {
                    recorded,
                    unplayed,
                    next,
                    empty_first: mode == CassetteMode::Record,
                }),
            }),
        })
    }
}

impl Cassette {
    /// Opens the cassette at `path` in the mode [`TOWERSCOPE_CASSETTE`](super::MODE_VAR) names
    /// (replay when it is unset).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, AgentError> {
        Self::builder(path).open()
    }

    /// A builder for the cassette at `path`.
    pub fn builder(path: impl AsRef<Path>) -> CassetteBuilder {
        CassetteBuilder {
            path: path.as_ref().to_path_buf(),
            mode: None,
            rules: HeaderRules::default(),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The mode.
    pub fn mode(&self) -> CassetteMode {
        self.shared.mode
    }

    /// `future` with counted ids and a fixed time (see
    /// [`Sequence`](towerscope_core::sequence::Sequence)): wrap a reply in it and its events
    /// and stored messages are the same on every run.
    ///
    /// The ids count from 1 across all of this cassette's scopes (and its clones'), so the turns
    /// of a conversation, each in a scope of its own, get ids of their own; scopes polled at
    /// once interleave their ids as they are scheduled, so run them one after another. Make the reply inside
    /// the `async` block (`cassette.scope(async { agent.reply(msg).await })`): a reply made
    /// outside, as in `cassette.scope(agent.reply(msg))`, drew its id when it was made.
    pub fn scope<F: Future>(&self, future: F) -> Scoped<F> {
        self.shared.sequence.scope(future)
    }

    /// How many interactions the cassette holds.
    pub fn len(&self) -> usize {
        self.lock().recorded.len()
    }

    /// Whether the cassette holds no interaction.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The numbers of the recorded interactions no request was answered with yet: a test can
    /// check that the agent made every call it made when recorded.
    pub fn unplayed(&self) -> Vec<u32> {
        let state = self.lock();
        state
            .recorded
            .iter()
            .filter(|entry| !entry.played)
            .map(|entry| entry.interaction.n)
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn rules(&self) -> &HeaderRules {
        &self.shared.rules
    }

    /// The recorded interaction that answers `key` (now played); `Ok(None)` when the request
    /// is to be sent and recorded; an error in replay mode when none answers it.
    pub(crate) fn lookup(&self, key: &RequestKey) -> Result<Option<Outcome>, CassetteError> {
        if self.shared.mode == CassetteMode::Record {
            return Ok(None);
        }
        let mut state = self.lock();
        let found = state.unplayed.get_mut(key).and_then(VecDeque::pop_front);
        if let Some(entry) = found.and_then(|at| state.recorded.get_mut(at)) {
            entry.played = true;
            return Ok(Some(entry.interaction.outcome.clone()));
        }
        if self.shared.mode == CassetteMode::RecordMissing {
            return Ok(None);
        }
        let recorded: Vec<(u32, &RequestKey, bool)> = state
            .recorded
            .iter()
            .map(|entry| (entry.interaction.n, &entry.key, entry.played))
            .collect();
        Err(no_match(self.shared.path.clone(), self.shared.mode, key, &recorded))
    }

    /// The number of a request about to be recorded.
    pub(crate) fn begin(&self) -> u32 {
        let mut state = self.lock();
        let n = state.next;
        // At `u32::MAX` the numbers are used up: the file refuses to open again (`open`).
        state.next = state.next.saturating_add(1);
        n
    }

    /// Writes a finished interaction; a failure to write is logged, the caller's response
    /// goes on.
    pub(crate) fn finish(&self, interaction: Interaction) {
        {
            let mut state = self.lock();
            if state.empty_first {
                if let Err(err) = file::truncate(&self.shared.path) {
                    tracing::error!(cassette = %self.shared.path.display(), error = %err, "could not record an interaction");
                    return;
                }
                state.empty_first = false;
            }
        }
        if let Err(err) = file::append(&self.shared.path, &interaction) {
            tracing::error!(cassette = %self.shared.path.display(), error = %err, "could not record an interaction");
            return;
        }
        let key = RequestKey::of(&interaction.request);
        self.lock().recorded.push(Entry {
            interaction,
            key,
            played: true,
        });
    }
}

impl fmt::Debug for Cassette {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cassette")
            .field("path", &self.shared.path)
            .field("mode", &self.shared.mode)
            .field("interactions", &self.len())
            .finish()
    }
}
