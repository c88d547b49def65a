//! Wall-clock time as the reference writes it into hints and compression prompts:
//! `%Y-%m-%dT%H:%M:%S` in a fixed-offset [`Timezone`], read from a [`Clock`] a test can set.
//!
//! # Example
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use towerscope_agent::clock::{Clock, Timezone};
//!
//! let clock = Clock::fixed(UNIX_EPOCH + Duration::from_secs(1_795_248_355));
//! assert_eq!(Timezone::utc().format(clock.now()), "2026-11-21T08:05:55");
//! let shanghai = Timezone::fixed("Asia/Shanghai", 8 * 60);
//! assert_eq!(shanghai.format(clock.now()), "2026-11-21T16:05:55");
//! assert_eq!(shanghai.parse("2026-11-21T16:05:55"), Some(clock.now()));
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where the agent reads the time: the system clock, or a clock a test sets.
#[derive(Clone)]
pub struct Clock(ClockKind);

#[derive(Clone)]
enum ClockKind {
    System,
    Manual(Arc<Mutex<SystemTime>>),
}

impl Clock {
    /// The system clock; inside a [`Sequence`](towerscope_core::sequence::Sequence)'s scope,
    /// the sequence's time.
    pub fn system() -> Self {
        Self(ClockKind::System)
    }

    /// A clock standing at `time` until [`set`](Self::set) or [`advance`](Self::advance) moves
    /// it (clones share it).
    pub fn fixed(time: SystemTime) -> Self {
        Self(ClockKind::Manual(Arc::new(Mutex::new(time))))
    }

    /// The current time.
    pub fn now(&self) -> SystemTime {
        match &self.0 {
            ClockKind::System => towerscope_core::sequence::scoped_time().unwrap_or_else(SystemTime::now),
            ClockKind::Manual(t) => *t.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Sets a fixed clock's time (no effect on the system clock).
    pub fn set(&self, time: SystemTime) {
        if let ClockKind::Manual(t) = &self.0 {
            *t.lock().unwrap_or_else(PoisonError::into_inner) = time;
        }
    }

    /// Moves a fixed clock forward (no effect on the system clock).
    pub fn advance(&self, by: Duration) {
        if let ClockKind::Manual(t) = &self.0 {
            let mut t = t.lock().unwrap_or_else(PoisonError::into_inner);
            *t += by;
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            ClockKind::System => f.write_str("Clock::system"),
            ClockKind::Manual(_) => write!(f, "Clock::fixed({:?})", self.now()),
        }
    }
}

/// A named timezone at a fixed offset from UTC (the reference takes IANA names; without a
/// timezone database, towerscope takes the name and its offset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timezone {
    /// The name written into hints (`UTC`, `Asia/Shanghai`).
    pub name: String,
    /// Minutes east of UTC.
    pub offset_minutes: i32,
}

impl Timezone {
    /// UTC, the reference's default.
    pub fn utc() -> Self {
        Self::fixed("UTC", 0)
    }

    /// A timezone `offset_minutes` east of UTC, written as `name`.
    pub fn fixed(name: impl Into<String>, offset_minutes: i32) -> Self {
        Self {
            name: name.into(),
            offset_minutes,
        }
    }

    /// `time` as `%Y-%m-%dT%H:%M:%S` in this timezone.
    pub fn format(&self, time: SystemTime) -> String {
        self.display(time).to_string()
    }

    /// `time` as `%Y-%m-%dT%H:%M:%S` in this timezone, written where it is displayed (no
    /// allocation).
    pub fn display(&self, time: SystemTime) -> impl fmt::Display + use<> {
        LocalTime(unix_seconds(time) + i64::from(self.offset_minutes) * 60)
    }

    /// Reads a time written by [`format`](Self::format) in this timezone.
    pub fn parse(&self, text: &str) -> Option<SystemTime> {
        let b = text.trim().as_bytes();
        if b.len() != 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
            return None;
        }
        let num =
            |r: std::ops::Range<usize>| -> Option<i64> { std::str::from_utf8(b.get(r)?).ok()?.parse::<i64>().ok() };
        let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (h, min, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) || h > 23 || min > 59 || s > 60 {
            return None;
        }
        let secs = days_from_civil(y, m, d) * 86_400 + h * 3600 + min * 60 + s - i64::from(self.offset_minutes) * 60;
        if secs >= 0 {
            Some(UNIX_EPOCH + Duration::from_secs(secs.unsigned_abs()))
        } else {
            UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))
        }
    }
}

impl Default for Timezone {
    fn default() -> Self {
        Self::utc()
    }
}

/// Seconds since the epoch, in local time.
struct LocalTime(i64);

impl fmt::Display for LocalTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Written digit by digit: hints write the time once per first round.
        let (days, rem) = (self.0.div_euclid(86_400), self.0.rem_euclid(86_400));
        let (y, m, d) = civil_from_days(days);
        if !(0..=9999).contains(&y) {
            return write!(
                f,
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            );
        }
        let mut out = *b"0000-00-00T00:00:00";
        let mut put = |at: usize, width: usize, mut v: i64| {
            for i in (0..width).rev() {
                out[at + i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        };
        put(0, 4, y);
        put(5, 2, m);
        put(8, 2, d);
        put(11, 2, rem / 3600);
        put(14, 2, rem % 3600 / 60);
        put(17, 2, rem % 60);
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

fn unix_seconds(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// Howard Hinnant's `civil_from_days`: days since 1970-01-01 to (year, month, day).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Howard Hinnant's `days_from_civil`.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_across_eras_and_offsets() {
        for secs in [0_i64, 86_399, 951_782_400, 1_795_248_355, 4_102_444_800] {
            let t = UNIX_EPOCH + Duration::from_secs(secs as u64);
            for tz in [Timezone::utc(), Timezone::fixed("x", -330), Timezone::fixed("y", 840)] {
                assert_eq!(tz.parse(&tz.format(t)), Some(t), "{secs} {tz:?}");
            }
        }
        assert_eq!(
            Timezone::utc().format(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00"
        );
        assert_eq!(Timezone::utc().parse("2026-13-01T00:00:00"), None);
        assert_eq!(Timezone::utc().parse("garbage"), None);
    }
}
