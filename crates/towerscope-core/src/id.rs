//! Ids and timestamps for messages, blocks and events.
//!
//! [`new_id`] returns 32 lowercase hex characters shaped like Python's `uuid4().hex` (a random
//! version-4 UUID without dashes); [`now_timestamp`] returns the current UTC time in the shape of
//! Python's `datetime.now().isoformat()`: `2026-11-21T08:05:55.123456`, without an offset, and
//! without the fraction when the microseconds are zero (as Python prints it).
//!
//! Both are cheap: the id comes from the thread-local `fastrand` generator and a hand-rolled hex
//! encoder, the timestamp from [`SystemTime`] and a civil-date conversion, with no formatting
//! machinery. Neither is meant for security: an id is unique, not secret.
//!
//! For deterministic tests, [`set_id_factory`] and [`set_timestamp_factory`] replace the
//! generators for the whole process (as `set_id_factory` does in the reference), and
//! [`reset_factories`] restores the defaults. While no factory is installed the only extra cost
//! is one atomic load.
//!
//! # Example
//!
//! ```
//! use towerscope_core::id::{new_id, now_timestamp};
//!
//! let id = new_id();
//! assert_eq!(id.len(), 32);
//! assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
//!
//! let ts = now_timestamp();
//! assert_eq!(&ts[4..5], "-");
//! assert_eq!(&ts[10..11], "T");
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// A process-wide generator of ids or timestamps.
type Factory = Arc<dyn Fn() -> String + Send + Sync>;

/// One overridable generator: a flag for the cheap check, the factory behind a lock.
struct Slot {
    installed: AtomicBool,
    factory: RwLock<Option<Factory>>,
}

impl Slot {
    const fn new() -> Self {
        Self {
            installed: AtomicBool::new(false),
            factory: RwLock::new(None),
        }
    }

    /// The installed factory, if any. The lock is released before the factory runs, so a
    /// factory may itself call [`new_id`] or install another factory.
    fn get(&self) -> Option<Factory> {
        if !self.installed.load(Ordering::Acquire) {
            return None;
        }
        self.factory.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set(&self, factory: Option<Factory>) {
        let mut guard = self.factory.write().unwrap_or_else(PoisonError::into_inner);
        self.installed.store(factory.is_some(), Ordering::Release);
        *guard = factory;
    }
}

static IDS: Slot = Slot::new();
static TIMESTAMPS: Slot = Slot::new();

/// A new unique id: 32 lowercase hex characters, a random UUID v4 without dashes.
///
/// Returns the installed factory's value instead when [`set_id_factory`] was called.
pub fn new_id() -> String {
    match IDS.get() {
        Some(factory) => factory(),
        None => random_id(),
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SS.ffffff` (Python's `isoformat()` without offset).
///
/// The fraction is left out when the microseconds are zero, as Python does. Returns the installed
/// factory's value instead when [`set_timestamp_factory`] was called.
pub fn now_timestamp() -> String {
    match TIMESTAMPS.get() {
        Some(factory) => factory(),
        None => {
            let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
            cached_utc(since_epoch.as_secs(), since_epoch.subsec_micros())
        }
    }
}

/// Replaces the id generator for the whole process, until [`reset_factories`].
///
/// Meant for deterministic tests. The factory must be cheap and should keep returning distinct
/// ids: blocks and events are matched by id.
pub fn set_id_factory<F>(factory: F)
where
    F: Fn() -> String + Send + Sync + 'static,
{
    IDS.set(Some(Arc::new(factory)));
}

/// Replaces the timestamp generator for the whole process, until [`reset_factories`].
pub fn set_timestamp_factory<F>(factory: F)
where
    F: Fn() -> String + Send + Sync + 'static,
{
    TIMESTAMPS.set(Some(Arc::new(factory)));
}

/// Restores the default id and timestamp generators.
pub fn reset_factories() {
    IDS.set(None);
    TIMESTAMPS.set(None);
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn random_id() -> String {
    let mut bits = fastrand::u128(..);
    // The version nibble says 4 (random) and the variant bits say RFC 4122, as in uuid4().
    bits = (bits & !(0xF << 76)) | (0x4 << 76);
    bits = (bits & !(0x3 << 62)) | (0x2 << 62);
    let mut hex = [0u8; 32];
    for (pair, byte) in hex.chunks_exact_mut(2).zip(bits.to_be_bytes()) {
        pair[0] = HEX[usize::from(byte >> 4)];
        pair[1] = HEX[usize::from(byte & 0xF)];
    }
    ascii_string(&hex)
}

/// A `String` of ASCII bytes, without a UTF-8 validation pass.
fn ascii_string(bytes: &[u8]) -> String {
    // Validation of at most 32 ASCII bytes is a handful of instructions; it never fails here.
    std::str::from_utf8(bytes).map(str::to_owned).unwrap_or_default()
}

thread_local! {
    /// The last second formatted on this thread, with its `YYYY-MM-DDTHH:MM:SS` text.
    static LAST_SECOND: std::cell::Cell<(u64, [u8; 19])> = const { std::cell::Cell::new((u64::MAX, [0; 19])) };
}

/// [`format_utc`], reusing the date and time of day formatted last on this thread when the
/// second is the same (most events of a reply are created within one second).
fn cached_utc(secs: u64, micros: u32) -> String {
    let (last, prefix) = LAST_SECOND.with(std::cell::Cell::get);
    if last != secs {
        let text = format_utc(secs, 0);
        let mut prefix = [0u8; 19];
        if text.len() != prefix.len() {
            return format_utc(secs, micros);
        }
        prefix.copy_from_slice(text.as_bytes());
        LAST_SECOND.with(|c| c.set((secs, prefix)));
        return cached_utc(secs, micros);
    }
    let mut out = [0u8; 26];
    out[..19].copy_from_slice(&prefix);
    if micros == 0 {
        return ascii_string(&out[..19]);
    }
    out[19] = b'.';
    put_digits(&mut out[20..26], u64::from(micros));
    ascii_string(&out)
}

/// Formats seconds and microseconds since the Unix epoch as a UTC civil time.
fn format_utc(secs: u64, micros: u32) -> String {
    let (year, month, day) = civil_from_days(secs / 86_400);
    if year >= 10_000 {
        return format!("{year}-{month:02}-{day:02}T00:00:00");
    }
    let in_day = secs % 86_400;
    let mut out = *b"0000-00-00T00:00:00.000000";
    put_digits(&mut out[0..4], year);
    put_digits(&mut out[5..7], month);
    put_digits(&mut out[8..10], day);
    put_digits(&mut out[11..13], in_day / 3600);
    put_digits(&mut out[14..16], in_day % 3600 / 60);
    put_digits(&mut out[17..19], in_day % 60);
    let len = if micros == 0 {
        19
    } else {
        put_digits(&mut out[20..26], u64::from(micros));
        26
    };
    ascii_string(&out[..len])
}

/// Writes the lowest decimal digits of `value` into `slot`, zero-padded to its length.
fn put_digits(slot: &mut [u8], mut value: u64) {
    for digit in slot.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// The proleptic Gregorian (year, month, day) of a count of days since 1970-01-01.
///
/// Days are shifted to start on 0000-03-01 so that the leap day ends each year; the calendar
/// repeats every 400 years (an "era" of 146 097 days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    const DAYS_PER_ERA: u64 = 146_097;
    // 719 468 days separate 0000-03-01 from 1970-01-01.
    let shifted = days + 719_468;
    let era = shifted / DAYS_PER_ERA;
    let day_of_era = shifted % DAYS_PER_ERA;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months counted from March: 0 = March, ..., 11 = February.
    let march_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * march_month + 2) / 5 + 1;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicU64;

    /// Serialises the tests that touch the process-wide factories.
    static GLOBAL: Mutex<()> = Mutex::new(());

    fn is_hex32(id: &str) -> bool {
        id.len() == 32 && id.bytes().all(|b| HEX.contains(&b))
    }

    #[test]
    fn known_dates() {
        assert_eq!(format_utc(0, 0), "1970-01-01T00:00:00");
        assert_eq!(format_utc(951_782_400, 0), "2000-02-29T00:00:00");
        assert_eq!(format_utc(68_255_999, 999_999), "1972-02-29T23:59:59.999999");
        assert_eq!(format_utc(4_107_542_400, 0), "2100-03-01T00:00:00");
        assert_eq!(format_utc(1_735_689_599, 1), "2024-12-31T23:59:59.000001");
        assert_eq!(format_utc(1_795_248_355, 123_456), "2026-11-21T08:05:55.123456");
    }

    #[test]
    fn day_boundaries_and_leap_years() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        // 1972 is a leap year, 1900 and 2100 are not, 2000 is.
        assert_eq!(civil_from_days(789), (1972, 2, 29));
        assert_eq!(civil_from_days(10_956), (1999, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(47_540), (2100, 2, 28));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        // Every day follows the previous one over a few centuries.
        let mut prev = civil_from_days(0);
        for day in 1..200_000 {
            let next = civil_from_days(day);
            let expected = if next.2 == 1 {
                next.0 > prev.0 || next.1 == prev.1 + 1
            } else {
                next.0 == prev.0 && next.1 == prev.1 && next.2 == prev.2 + 1
            };
            assert!(expected, "day {day}: {prev:?} -> {next:?}");
            prev = next;
        }
    }

    #[test]
    fn ids_are_uuid4_hex_and_distinct() {
        let _guard = GLOBAL.lock().unwrap_or_else(PoisonError::into_inner);
        let a = new_id();
        let b = new_id();
        assert!(is_hex32(&a), "{a}");
        assert_ne!(a, b);
        assert_eq!(&a[12..13], "4", "version nibble");
        assert!(matches!(&a[16..17], "8" | "9" | "a" | "b"), "variant nibble of {a}");
    }

    #[test]
    fn timestamp_has_the_python_shape() {
        let _guard = GLOBAL.lock().unwrap_or_else(PoisonError::into_inner);
        let ts = now_timestamp();
        assert!(ts.len() == 19 || ts.len() == 26, "{ts}");
        assert!(ts.as_str() >= "2024-01-01T00:00:00", "{ts}");
    }

    #[test]
    fn factories_override_and_reset() {
        let _guard = GLOBAL.lock().unwrap_or_else(PoisonError::into_inner);
        // Other tests may create ids meanwhile: keep the override unique and well formed.
        let counter = Arc::new(AtomicU64::new(0));
        let ids = Arc::clone(&counter);
        set_id_factory(move || format!("{:032x}", ids.fetch_add(1, Ordering::Relaxed)));
        set_timestamp_factory(|| "2001-01-01T00:00:00".to_owned());
        let first = new_id();
        let second = new_id();
        assert_eq!(
            u64::from_str_radix(&second, 16).unwrap(),
            u64::from_str_radix(&first, 16).unwrap() + 1
        );
        assert_eq!(now_timestamp(), "2001-01-01T00:00:00");
        reset_factories();
        assert!(is_hex32(&new_id()));
        assert_ne!(now_timestamp(), "2001-01-01T00:00:00");
    }
}
