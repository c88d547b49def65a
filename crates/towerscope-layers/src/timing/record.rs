//! The timing handle: per-position aggregates and the recent samples.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use towerscope_core::PositionKind;

use crate::position::CallTarget;

/// How a timed call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The call answered, and its stream (if any) ended without an error item.
    Ok,
    /// The call failed, or its stream yielded an error.
    Error,
    /// The caller dropped the call or its stream before the end.
    Dropped,
}

/// One timed call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimingSample {
    /// The position the call went through.
    pub position: PositionKind,
    /// What was called: the model, the tool, or the agent (for `on_reply` and `on_reasoning`).
    pub name: String,
    /// Time until the position answered (the response future resolved).
    pub open: Duration,
    /// Time from the call to the first streamed item; `None` when the answer was not a stream or
    /// the stream yielded nothing.
    pub first_item: Option<Duration>,
    /// Time from the call to its end: the answer for a complete response, the end (or drop) of the
    /// stream for a streamed one.
    pub total: Duration,
    /// How the call ended.
    pub outcome: Outcome,
}

/// Count, sum, minimum and maximum of a set of durations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Aggregate {
    /// How many durations were added.
    pub count: u64,
    /// Their sum.
    pub total: Duration,
    /// The smallest (zero when empty).
    pub min: Duration,
    /// The largest.
    pub max: Duration,
}

impl Aggregate {
    pub(crate) fn add(&mut self, d: Duration) {
        self.min = if self.count == 0 { d } else { self.min.min(d) };
        self.max = self.max.max(d);
        self.total += d;
        self.count += 1;
    }

    /// The mean, or `None` when empty.
    pub fn mean(&self) -> Option<Duration> {
        let count = u32::try_from(self.count).ok().filter(|c| *c > 0)?;
        Some(self.total / count)
    }
}

/// What the timing layer measured on one position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimingStats {
    /// Calls recorded.
    pub count: u64,
    /// Calls that ended with [`Outcome::Error`].
    pub errors: u64,
    /// Calls that ended with [`Outcome::Dropped`].
    pub dropped: u64,
    /// Time until the position answered.
    pub open: Aggregate,
    /// Time to the first streamed item (streamed answers that yielded one).
    pub first_item: Aggregate,
    /// Time to the end of the call (of its stream, for streamed answers).
    pub total: Aggregate,
    /// The most recent samples, oldest first (at most the handle's capacity).
    pub recent: VecDeque<TimingSample>,
}

impl TimingStats {
    fn add(&mut self, sample: TimingSample, capacity: usize) {
        self.count += 1;
        match sample.outcome {
            Outcome::Ok => {}
            Outcome::Error => self.errors += 1,
            Outcome::Dropped => self.dropped += 1,
        }
        self.open.add(sample.open);
        if let Some(first) = sample.first_item {
            self.first_item.add(first);
        }
        self.total.add(sample.total);
        if capacity == 0 {
            return;
        }
        if self.recent.len() == capacity {
            self.recent.pop_front();
        }
        self.recent.push_back(sample);
    }
}

const POSITIONS: [PositionKind; 4] = [
    PositionKind::Reply,
    PositionKind::Reasoning,
    PositionKind::ModelCall,
    PositionKind::Acting,
];

fn slot(position: PositionKind) -> usize {
    POSITIONS.iter().position(|p| *p == position).unwrap_or(0)
}

struct Table {
    capacity: usize,
    stats: [TimingStats; 4],
}

/// The results of a [`TimingLayer`](super::TimingLayer): read them while the agent runs.
///
/// Cloning gives another handle on the same results. See the [module docs](super) for an
/// example.
#[derive(Clone)]
pub struct Timings {
    table: Arc<Mutex<Table>>,
}

impl Timings {
    /// The number of recent samples kept per position by [`Timings::new`].
    pub const DEFAULT_CAPACITY: usize = 64;

    /// An empty handle keeping the last [`DEFAULT_CAPACITY`](Self::DEFAULT_CAPACITY) samples of
    /// each position.
    pub fn new() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }

    /// An empty handle keeping the last `capacity` samples of each position (0: none, only the
    /// aggregates).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            table: Arc::new(Mutex::new(Table {
                capacity,
                stats: Default::default(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of what was measured on `position` (empty for a position the layer does not serve).
    pub fn stats(&self, position: PositionKind) -> TimingStats {
        if !POSITIONS.contains(&position) {
            return TimingStats::default();
        }
        self.lock().stats[slot(position)].clone()
    }

    /// The recent samples of `position`, oldest first.
    pub fn recent(&self, position: PositionKind) -> Vec<TimingSample> {
        self.stats(position).recent.into_iter().collect()
    }

    /// Forgets everything measured so far.
    pub fn reset(&self) {
        let mut table = self.lock();
        table.stats = Default::default();
    }

    pub(crate) fn add(&self, sample: TimingSample) {
        let mut table = self.lock();
        let capacity = table.capacity;
        table.stats[slot(sample.position)].add(sample, capacity);
    }
}

impl Default for Timings {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Timings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = self.lock();
        f.debug_struct("Timings")
            .field("capacity", &table.capacity)
            .field("counts", &table.stats.iter().map(|s| s.count).collect::<Vec<_>>())
            .finish()
    }
}

/// Measures one call from its start; records a sample when finished, or `Dropped` when dropped
/// first.
pub(crate) struct Recorder {
    timings: Timings,
    position: PositionKind,
    target: CallTarget,
    start: Instant,
    open: Option<Duration>,
    first_item: Option<Duration>,
    /// When the last item went out: a drop from then on is no failure, and the call took
    /// until that item.
    answered: Option<Duration>,
    done: bool,
}

impl Recorder {
    pub(crate) fn start(timings: Timings, position: PositionKind, target: CallTarget) -> Self {
        Self {
            timings,
            position,
            target,
            start: Instant::now(),
            open: None,
            first_item: None,
            answered: None,
            done: false,
        }
    }

    /// The position answered.
    pub(crate) fn opened(&mut self) {
        self.open = Some(self.start.elapsed());
    }

    /// A streamed item arrived (only the first one counts).
    pub(crate) fn item(&mut self) {
        if self.first_item.is_none() {
            self.first_item = Some(self.start.elapsed());
        }
    }

    /// The stream's last item went out (the stream may still fail after it).
    pub(crate) fn answered(&mut self) {
        self.answered = Some(self.start.elapsed());
    }

    pub(crate) fn finish(&mut self, outcome: Outcome) {
        self.finish_at(outcome, self.start.elapsed());
    }

    fn finish_at(&mut self, outcome: Outcome, total: Duration) {
        if self.done {
            return;
        }
        self.done = true;
        let open = self.open.unwrap_or(total);
        let sample = TimingSample {
            position: self.position,
            name: self.target.name().to_owned(),
            open,
            first_item: self.first_item,
            total,
            outcome,
        };
        tracing::debug!(
            target: "towerscope::timing",
            position = %sample.position,
            name = %sample.name,
            open_ms = sample.open.as_secs_f64() * 1e3,
            first_item_ms = sample.first_item.map(|d| d.as_secs_f64() * 1e3),
            total_ms = sample.total.as_secs_f64() * 1e3,
            outcome = ?sample.outcome,
            "{} took {:?}",
            self.target,
            sample.total,
        );
        self.timings.add(sample);
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        match self.answered {
            // The consumer had the whole answer and did not read the stream's end.
            Some(at) => self.finish_at(Outcome::Ok, at),
            None => self.finish(Outcome::Dropped),
        }
    }
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("position", &self.position)
            .field("target", &self.target.name())
            .finish_non_exhaustive()
    }
}
