//! The recent starts or token counts of a window, in bounded memory.
//!
//! A sliding log keeps one entry per event, exact but as long as the window is busy: ten
//! million calls a minute were ten million entries. Here, once the log holds [`EXACT`] entries,
//! an event less than a [`GRAIN`]th of the window after the first event of the newest entry is
//! added to that entry, which then leaves the window with its newest event. So the log holds at
//! most about `2 × EXACT` entries, and never counts an event for less than the window: an
//! event counted with later ones is held back at most `window / GRAIN` longer, which only makes
//! the limit stricter. A log that stays under [`EXACT`] entries (any limit of at most that
//! many calls) is exact.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// Entries kept one per event before events close together are merged.
pub(crate) const EXACT: usize = 1024;

/// Events within `window / GRAIN` of an entry's first event share it, past [`EXACT`] entries.
pub(crate) const GRAIN: u32 = 1024;

/// Events that leave the window together: the first and the newest, and how much they count.
#[derive(Debug, Clone, Copy)]
struct Entry {
    first: Instant,
    last: Instant,
    /// Wide, as the total: merged `u64::MAX` counts neither overflow nor saturate.
    count: u128,
}

/// The events of the last `window`, oldest first, with their total.
#[derive(Debug, Default)]
pub(crate) struct WindowLog {
    entries: VecDeque<Entry>,
    /// The sum of the entries' counts, exact: a `u128` holds any number of `u64` counts a window
    /// can hold (a saturated sum forgot the others once the huge one left).
    total: u128,
}

impl WindowLog {
    /// Counts `count` at `now` (or at the newest event's time, if that is later), after
    /// forgetting the events that left the window.
    pub(crate) fn push(&mut self, now: Instant, count: u64, window: Duration) {
        self.prune(now, window);
        // An event read from the clock before a later one was counted is counted at the later
        // one's time: the entries leave in order, none before its events' window ends.
        let now = self.entries.back().map_or(now, |newest| now.max(newest.last));
        if self.entries.len() >= EXACT
            && let Some(newest) = self.entries.back_mut()
            // `<=`: events at one instant share an entry even when a grain rounds to zero.
            && now <= super::limiter::plus(newest.first, window / GRAIN)
        {
            newest.last = now;
            newest.count += u128::from(count);
        } else {
            self.entries.push_back(Entry {
                first: now,
                last: now,
                count: u128::from(count),
            });
        }
        self.total += u128::from(count);
    }

    /// Forgets the events that left the window by `now`.
    pub(crate) fn prune(&mut self, now: Instant, window: Duration) {
        while let Some(oldest) = self.entries.front() {
            if super::limiter::plus(oldest.last, window) > now {
                break;
            }
            self.pop_front();
        }
    }

    /// Forgets the oldest events that do not matter to a limit of `limit`: those whose leaving
    /// would still leave `limit` or more counted.
    pub(crate) fn keep_last(&mut self, limit: u128) {
        while self
            .entries
            .front()
            .is_some_and(|oldest| self.total - oldest.count >= limit)
        {
            self.pop_front();
        }
    }

    fn pop_front(&mut self) {
        if let Some(oldest) = self.entries.pop_front() {
            self.total -= oldest.count;
        }
    }

    /// The total counted.
    pub(crate) fn total(&self) -> u128 {
        self.total
    }

    /// When the total falls under `limit` as events leave the window: `None` when it is under
    /// already.
    pub(crate) fn under_at(&self, limit: u128, window: Duration) -> Option<Instant> {
        let mut total = self.total;
        if total < limit {
            return None;
        }
        for entry in &self.entries {
            total -= entry.count;
            if total < limit {
                return Some(super::limiter::plus(entry.last, window));
            }
        }
        None
    }

    /// How many entries the log holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{EXACT, GRAIN, WindowLog};

    const WINDOW: Duration = Duration::from_secs(60);

    #[test]
    fn a_short_log_is_exact() {
        let t0 = Instant::now();
        let mut log = WindowLog::default();
        for i in 0..EXACT as u64 {
            log.push(t0 + Duration::from_micros(i), 1, WINDOW);
        }
        assert_eq!(log.len(), EXACT);
        // Under a limit of 10, the count falls under it when the 10th newest leaves.
        let mut capped = WindowLog::default();
        for i in 0..100u64 {
            capped.push(t0 + Duration::from_millis(i), 1, WINDOW);
        }
        capped.keep_last(10);
        assert_eq!(capped.len(), 10);
        assert_eq!(
            capped.under_at(10, WINDOW),
            Some(t0 + Duration::from_millis(90) + WINDOW)
        );
        assert_eq!(capped.under_at(11, WINDOW), None);
    }

    #[test]
    fn a_busy_window_holds_a_bounded_log_and_counts_every_event() {
        let t0 = Instant::now();
        let mut log = WindowLog::default();
        // Two million events over a minute: one every 30 µs.
        let events = 2_000_000u64;
        for i in 0..events {
            log.push(t0 + Duration::from_micros(30 * i), 1, WINDOW);
        }
        assert_eq!(log.total(), u128::from(events));
        assert!(log.len() <= 2 * EXACT + 2, "{} entries", log.len());
        // None has left yet at the end of the minute; all have once the newest one has.
        let end = t0 + Duration::from_micros(30 * (events - 1));
        log.prune(end, WINDOW);
        assert_eq!(log.total(), u128::from(events));
        log.prune(end + WINDOW, WINDOW);
        assert_eq!(log.total(), 0);
        assert_eq!(log.len(), 0);
    }

    #[test]
    fn a_merged_entry_leaves_with_its_newest_event() {
        let t0 = Instant::now();
        let mut log = WindowLog::default();
        for _ in 0..EXACT {
            log.push(t0, 1, WINDOW);
        }
        // Merged into the newest entry (a grain is about 58 ms): events at 1 ms and 2 ms.
        let first = t0 + Duration::from_millis(1);
        log.push(first, 1, WINDOW);
        log.push(first + Duration::from_millis(1), 1, WINDOW);
        assert_eq!(log.len(), EXACT);
        // Between the entry's first event's end of window and its newest one's, all three of
        // its events still count.
        log.prune(first + WINDOW + Duration::from_micros(500), WINDOW);
        assert_eq!(log.total(), 3);
        log.prune(first + Duration::from_millis(1) + WINDOW, WINDOW);
        assert_eq!(log.total(), 0);
    }

    #[test]
    fn events_counted_out_of_order_leave_no_earlier_than_the_newest() {
        let t0 = Instant::now();
        let mut log = WindowLog::default();
        for _ in 0..EXACT {
            log.push(t0, 1, WINDOW);
        }
        // Read from the clock at 20 µs, then one read at 10 µs counted after it (a caller that
        // waited for the lock): neither leaves before 20 µs past the window.
        let late = t0 + Duration::from_micros(20);
        log.push(late, 1, WINDOW);
        log.push(t0 + Duration::from_micros(10), 1, WINDOW);
        log.prune(late + WINDOW - Duration::from_micros(1), WINDOW);
        assert_eq!(log.total(), 3, "the two, and the event at 0 of the entry they joined");
        // Unmerged, the same: a new entry is no older than the newest.
        let mut exact = WindowLog::default();
        exact.push(late, 1, WINDOW);
        exact.push(t0, 1, WINDOW);
        exact.prune(late + WINDOW - Duration::from_micros(1), WINDOW);
        assert_eq!(exact.total(), 2);
    }

    #[test]
    fn events_at_one_instant_share_an_entry_even_in_a_window_shorter_than_a_grain() {
        let t0 = Instant::now();
        let window = Duration::from_nanos(100);
        let mut log = WindowLog::default();
        for _ in 0..10 * EXACT {
            log.push(t0, 1, window);
        }
        assert_eq!(log.len(), EXACT);
        assert_eq!(log.total(), 10 * EXACT as u128);
    }

    #[test]
    fn a_merged_event_is_held_back_at_most_a_grain_and_never_less_than_the_window() {
        let t0 = Instant::now();
        let grain = WINDOW / GRAIN;
        let mut log = WindowLog::default();
        let step = Duration::from_micros(100);
        let mut times = Vec::new();
        for i in 0..5 * EXACT as u32 {
            let t = t0 + step * i;
            times.push(t);
            log.push(t, 1, WINDOW);
        }
        // Each event leaves the window no earlier than it should, and at most a grain later.
        for (i, t) in times.iter().enumerate() {
            let counted_after = times.len() - i;
            let limit = counted_after as u128;
            let at = log.under_at(limit, WINDOW).expect("the log counts this many");
            assert!(
                at >= *t + WINDOW,
                "event {i} leaves at {:?}, before its window ends",
                at - t0
            );
            assert!(at <= *t + WINDOW + grain, "event {i} held back past a grain");
        }
    }
}
