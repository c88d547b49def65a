//! Ids and timestamps of messages, blocks, events and tool calls.
//!
//! An [`Id`] is what the reference writes as `uuid4().hex`: 32 lowercase hex characters. It is
//! kept as the 128-bit number and formatted only when it is displayed or serialized, so making
//! one costs a random number, not an allocation. Ids that come from elsewhere (a provider's
//! `call_abc…`, a client's own message id) keep their text, shared behind an `Arc<str>`; text
//! that happens to be 32 lowercase hex characters becomes the number, so an id read back from
//! JSON equals the one written.
//!
//! A [`Timestamp`] is microseconds since the Unix epoch (UTC). It serializes in the shape of
//! Python's `datetime.now().isoformat()`: `2026-11-21T08:05:55.123456`, without an offset and
//! without the fraction when the microseconds are zero, as the reference writes it.
//!
//! Neither is meant for security: an id is unique, not secret.
//!
//! For deterministic tests, a [`Sequence`](crate::sequence::Sequence) replaces both for one
//! future (tests in parallel keep their own); [`set_id_factory`] and [`set_timestamp_factory`]
//! replace the generators for the whole process (as `set_id_factory` does in the reference), and
//! [`reset_factories`] restores the defaults. While no factory is installed the only extra cost
//! is one atomic load.
//!
//! # Why `Id` is `Clone` and not `Copy`
//!
//! A provider's id is text of any length, so the text case holds an `Arc<str>`. Cloning a
//! generated id copies 24 bytes; cloning a provider's id bumps a reference count.
//!
//! # Example
//!
//! ```
//! use towerscope_core::id::{Id, Timestamp};
//!
//! let id = Id::new();
//! let text = id.to_string();
//! assert_eq!(text.len(), 32);
//! assert_eq!(Id::from(text.as_str()), id);
//!
//! let call: Id = "call_abc123".into();
//! assert_eq!(call.as_text(), Some("call_abc123"));
//! assert_eq!(call, "call_abc123");
//!
//! let ts: Timestamp = "2026-11-21T08:05:55.123456".parse()?;
//! assert_eq!(ts.to_string(), "2026-11-21T08:05:55.123456");
//! assert_eq!(serde_json::to_string(&ts)?, r#""2026-11-21T08:05:55.123456""#);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The id of a message, block, event, tool call, reply or session.
///
/// See the [module docs](self).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(Repr);

// `Hash` stays derived: equal pointers mean equal text, so it agrees with `eq` below.
#[allow(clippy::derived_hash_with_manual_eq)]
#[derive(Clone, Eq, Hash, PartialOrd, Ord)]
enum Repr {
    /// A 128-bit id, high and low halves (two `u64`s keep the type at 24 bytes).
    Number(u64, u64),
    /// Any other text.
    Text(Arc<str>),
}

impl PartialEq for Repr {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Number(hi, lo), Self::Number(other_hi, other_lo)) => hi == other_hi && lo == other_lo,
            // A tool result's id is usually its call's, shared: the same text is not read twice.
            (Self::Text(text), Self::Text(other)) => Arc::ptr_eq(text, other) || text == other,
            _ => false,
        }
    }
}

impl Id {
    /// A new random id: a version-4 UUID, written as 32 lowercase hex characters.
    ///
    /// Returns the next id of the [`Sequence`](crate::sequence::Sequence) being polled instead,
    /// or the installed factory's value when [`set_id_factory`] was called.
    pub fn new() -> Self {
        if let Some(number) = crate::sequence::scoped_id() {
            return Self::from_u128(number);
        }
        match IDS.get() {
            Some(factory) => factory(),
            None => Self::random(),
        }
    }

    /// Whether new ids and timestamps are reproducible: made by the
    /// [`Sequence`](crate::sequence::Sequence) being polled or by an installed factory
    /// ([`set_id_factory`], [`set_timestamp_factory`]), not at random. What a library would
    /// build once and share (a message several agents hold) must then be built each time, as
    /// building it draws from the sequence.
    ///
    /// ```
    /// use towerscope_core::Id;
    /// use towerscope_core::sequence::Sequence;
    ///
    /// assert!(!Id::reproducible());
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// assert!(Sequence::new().scope(async { Id::reproducible() }).await);
    /// # });
    /// ```
    pub fn reproducible() -> bool {
        crate::sequence::in_scope() || IDS.get().is_some() || TIMESTAMPS.get().is_some()
    }

    fn random() -> Self {
        let mut bits = fastrand::u128(..);
        // The version nibble says 4 (random) and the variant bits say RFC 4122, as in uuid4().
        bits = (bits & !(0xF << 76)) | (0x4 << 76);
        bits = (bits & !(0x3 << 62)) | (0x2 << 62);
        Self::from_u128(bits)
    }

    /// The id written as the 32 lowercase hex characters of `value`.
    pub const fn from_u128(value: u128) -> Self {
        Self(Repr::Number((value >> 64) as u64, value as u64))
    }

    /// The id's number, when it is one (32 lowercase hex characters).
    pub const fn as_u128(&self) -> Option<u128> {
        match self.0 {
            Repr::Number(hi, lo) => Some(((hi as u128) << 64) | lo as u128),
            Repr::Text(_) => None,
        }
    }

    /// The id's text, when it is not a number (a provider's `call_abc…`).
    pub fn as_text(&self) -> Option<&str> {
        match &self.0 {
            Repr::Text(text) => Some(text),
            Repr::Number(..) => None,
        }
    }

    /// The id's text length, without formatting it.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Number(..) => 32,
            Repr::Text(text) => text.len(),
        }
    }

    /// Whether the id is the empty text.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` with the id as text, formatting a number on the stack (no allocation).
    pub fn with_str<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match &self.0 {
            Repr::Text(text) => f(text),
            Repr::Number(hi, lo) => {
                let hex = hex32(((*hi as u128) << 64) | *lo as u128);
                f(ascii(&hex))
            }
        }
    }

    fn parse_number(text: &str) -> Option<u128> {
        let bytes = text.as_bytes();
        if bytes.len() != 32 {
            return None;
        }
        let mut value = 0u128;
        for &b in bytes {
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                _ => return None,
            };
            value = (value << 4) | u128::from(digit);
        }
        Some(value)
    }
}

impl Default for Id {
    /// A new random id, as [`Id::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl From<&str> for Id {
    fn from(text: &str) -> Self {
        match Self::parse_number(text) {
            Some(value) => Self::from_u128(value),
            None => Self(Repr::Text(Arc::from(text))),
        }
    }
}

impl From<String> for Id {
    fn from(text: String) -> Self {
        match Self::parse_number(&text) {
            Some(value) => Self::from_u128(value),
            None => Self(Repr::Text(Arc::from(text))),
        }
    }
}

impl From<&String> for Id {
    fn from(text: &String) -> Self {
        Self::from(text.as_str())
    }
}

impl From<Arc<str>> for Id {
    fn from(text: Arc<str>) -> Self {
        match Self::parse_number(&text) {
            Some(value) => Self::from_u128(value),
            None => Self(Repr::Text(text)),
        }
    }
}

impl From<&Id> for Id {
    fn from(id: &Id) -> Self {
        id.clone()
    }
}

impl FromStr for Id {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Self::from(text))
    }
}

impl PartialEq<str> for Id {
    fn eq(&self, other: &str) -> bool {
        match &self.0 {
            Repr::Text(text) => &**text == other,
            Repr::Number(..) => Self::parse_number(other) == self.as_u128(),
        }
    }
}

impl PartialEq<&str> for Id {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl PartialEq<String> for Id {
    fn eq(&self, other: &String) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Id> for str {
    fn eq(&self, other: &Id) -> bool {
        other == self
    }
}

impl PartialEq<Id> for &str {
    fn eq(&self, other: &Id) -> bool {
        other == *self
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_str(|text| f.write_str(text))
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_str(|text| fmt::Debug::fmt(text, f))
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.with_str(|text| serializer.serialize_str(text))
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;

        impl Visitor<'_> for IdVisitor {
            type Value = Id;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an id (a string)")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Id, E> {
                Ok(Id::from(text))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Id, E> {
                Ok(Id::from(text))
            }
        }

        deserializer.deserialize_str(IdVisitor)
    }
}

/// A point in time: microseconds since the Unix epoch, UTC.
///
/// Its text covers the years 0000 to 9999, from `0000-01-01T00:00:00` to
/// `9999-12-31T23:59:59.999999` UTC: parsing refuses an instant outside them (an offset can
/// move a date at an edge over it), so every parsed timestamp is written back as the same
/// instant. One made by [`from_micros`](Self::from_micros) outside them is written as the
/// nearest edge.
///
/// See the [module docs](self).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The current time.
    ///
    /// Returns the time of the [`Sequence`](crate::sequence::Sequence) being polled instead, or
    /// the installed factory's value when [`set_timestamp_factory`] was called.
    pub fn now() -> Self {
        if let Some(micros) = crate::sequence::scoped_micros() {
            return Self(micros);
        }
        match TIMESTAMPS.get() {
            Some(factory) => factory(),
            None => Self::system_now(),
        }
    }

    fn system_now() -> Self {
        let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Self(i64::try_from(since_epoch.as_micros()).unwrap_or(i64::MAX))
    }

    /// The time `micros` microseconds after the Unix epoch.
    pub const fn from_micros(micros: i64) -> Self {
        Self(micros)
    }

    /// Microseconds since the Unix epoch.
    pub const fn as_micros(self) -> i64 {
        self.0
    }

    /// Formats into `out`; returns the length used (19 without a fraction, 26 with). An
    /// instant outside the writable years is written as the nearest edge.
    fn format(self, out: &mut [u8; 26]) -> usize {
        let instant = self.0.clamp(FIRST_WRITABLE, LAST_WRITABLE);
        let secs = instant.div_euclid(1_000_000);
        let micros = instant.rem_euclid(1_000_000) as u64;
        let days = secs.div_euclid(86_400);
        let in_day = secs.rem_euclid(86_400) as u64;
        let (year, month, day) = civil_from_days(days);
        *out = *b"0000-00-00T00:00:00.000000";
        put_digits(&mut out[0..4], year as u64);
        put_digits(&mut out[5..7], month);
        put_digits(&mut out[8..10], day);
        put_digits(&mut out[11..13], in_day / 3600);
        put_digits(&mut out[14..16], in_day % 3600 / 60);
        put_digits(&mut out[17..19], in_day % 60);
        if micros == 0 {
            return 19;
        }
        put_digits(&mut out[20..26], micros);
        26
    }
}

impl Default for Timestamp {
    /// The current time, as [`Timestamp::now`].
    fn default() -> Self {
        Self::now()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = [0u8; 26];
        let len = self.format(&mut out);
        f.write_str(ascii(&out[..len]))
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The first instant a [`Timestamp`] is written as, `0000-01-01T00:00:00`, in microseconds.
const FIRST_WRITABLE: i64 = -62_167_219_200_000_000;

/// The last instant a [`Timestamp`] is written as, `9999-12-31T23:59:59.999999`, in
/// microseconds.
const LAST_WRITABLE: i64 = 253_402_300_799_999_999;

/// A text that is not a timestamp of the accepted shape, or one outside the years 0000 to 9999
/// once converted to UTC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampError {
    text: String,
    out_of_range: bool,
}

impl fmt::Display for TimestampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.out_of_range {
            return write!(
                f,
                "invalid timestamp {:?}: in UTC it falls outside 0000-01-01T00:00:00 to \
                 9999-12-31T23:59:59.999999, the instants a timestamp can be written as",
                self.text
            );
        }
        write!(
            f,
            "invalid timestamp {:?}: expected YYYY-MM-DDTHH:MM:SS with an optional fraction and an optional \
             offset (Z or +HH:MM), as Python's datetime.isoformat() writes it",
            self.text
        )
    }
}

impl std::error::Error for TimestampError {}

impl FromStr for Timestamp {
    type Err = TimestampError;

    /// Parses `YYYY-MM-DDTHH:MM:SS[.f…][Z|±HH:MM]` (a space may stand for the `T`); a fraction
    /// longer than six digits is truncated to microseconds, an offset is converted to UTC. An
    /// instant outside the years 0000 to 9999 in UTC is refused (it could not be written back).
    fn from_str(text: &str) -> Result<Self, TimestampError> {
        let error = |out_of_range| TimestampError {
            text: text.chars().take(64).collect(),
            out_of_range,
        };
        let parsed = parse_timestamp(text).ok_or_else(|| error(false))?;
        if !(FIRST_WRITABLE..=LAST_WRITABLE).contains(&parsed.0) {
            return Err(error(true));
        }
        Ok(parsed)
    }
}

fn parse_timestamp(text: &str) -> Option<Timestamp> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b' ') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let mut v = 0i64;
        for &d in b.get(range)? {
            if !d.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(d - b'0');
        }
        Some(v)
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 59 {
        return None;
    }
    let mut rest = &b[19..];
    let mut micros = 0i64;
    if let Some((b'.', digits)) = rest.split_first() {
        let len = digits.iter().take_while(|d| d.is_ascii_digit()).count();
        if len == 0 {
            return None;
        }
        for (i, &d) in digits[..len].iter().enumerate() {
            if i < 6 {
                micros = micros * 10 + i64::from(d - b'0');
            }
        }
        for _ in len..6 {
            micros *= 10;
        }
        rest = &digits[len..];
    }
    let offset_secs = match rest {
        [] | [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digits = [*h1, *h2, *m1, *m2];
            if !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let hours = i64::from((h1 - b'0') * 10 + (h2 - b'0'));
            let minutes = i64::from((m1 - b'0') * 10 + (m2 - b'0'));
            // As Python's `fromisoformat`: an offset is less than a day.
            if hours >= 24 || minutes >= 60 {
                return None;
            }
            let secs = hours * 3600 + minutes * 60;
            if *sign == b'+' { secs } else { -secs }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    Some(Timestamp(secs * 1_000_000 + micros))
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = [0u8; 26];
        let len = self.format(&mut out);
        serializer.serialize_str(ascii(&out[..len]))
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TimestampVisitor;

        impl Visitor<'_> for TimestampVisitor {
            type Value = Timestamp;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a timestamp such as \"2026-11-21T08:05:55.123456\"")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Timestamp, E> {
                text.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_str(TimestampVisitor)
    }
}

/// A new random id (the serde default of missing ids).
pub fn new_id() -> Id {
    Id::new()
}

/// Where the 64-bit FNV-1a hash starts (the hash of nothing), for [`fnv1a_from`].
pub const FNV1A_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The 64-bit FNV-1a hash of `bytes`: small, and the same in every build and on every platform
/// (std's hasher is not promised to be), for names and fingerprints that outlive a process (a
/// file name, an id sent again from a stored conversation, a journaled step). Not for security.
///
/// ```
/// use towerscope_core::id::{FNV1A_OFFSET, fnv1a, fnv1a_from};
///
/// assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
/// assert_eq!(fnv1a_from(fnv1a(b"a"), b"b"), fnv1a(b"ab"));
/// assert_eq!(fnv1a(b""), FNV1A_OFFSET);
/// ```
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_from(FNV1A_OFFSET, bytes)
}

/// Goes on hashing `bytes` from `hash` (the hash so far, or [`FNV1A_OFFSET`]).
pub fn fnv1a_from(hash: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(hash, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The current time (the serde default of missing timestamps).
pub fn now_timestamp() -> Timestamp {
    Timestamp::now()
}

/// A process-wide generator of ids or timestamps.
type Factory<T> = Arc<dyn Fn() -> T + Send + Sync>;

/// One overridable generator: a flag for the cheap check, the factory behind a lock.
struct Slot<T> {
    installed: AtomicBool,
    factory: RwLock<Option<Factory<T>>>,
}

impl<T> Slot<T> {
    const fn new() -> Self {
        Self {
            installed: AtomicBool::new(false),
            factory: RwLock::new(None),
        }
    }

    /// The installed factory, if any. The lock is released before the factory runs, so a
    /// factory may itself call [`Id::new`] or install another factory.
    fn get(&self) -> Option<Factory<T>> {
        if !self.installed.load(Ordering::Acquire) {
            return None;
        }
        self.factory.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set(&self, factory: Option<Factory<T>>) {
        let mut guard = self.factory.write().unwrap_or_else(PoisonError::into_inner);
        self.installed.store(factory.is_some(), Ordering::Release);
        *guard = factory;
    }
}

static IDS: Slot<Id> = Slot::new();
static TIMESTAMPS: Slot<Timestamp> = Slot::new();

/// Replaces the id generator for the whole process, until [`reset_factories`].
///
/// Meant for deterministic tests. The factory must be cheap and should keep returning distinct
/// ids: blocks and events are matched by id.
pub fn set_id_factory<F>(factory: F)
where
    F: Fn() -> Id + Send + Sync + 'static,
{
    IDS.set(Some(Arc::new(factory)));
}

/// Replaces the timestamp generator for the whole process, until [`reset_factories`].
pub fn set_timestamp_factory<F>(factory: F)
where
    F: Fn() -> Timestamp + Send + Sync + 'static,
{
    TIMESTAMPS.set(Some(Arc::new(factory)));
}

/// Restores the default id and timestamp generators.
pub fn reset_factories() {
    IDS.set(None);
    TIMESTAMPS.set(None);
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn hex32(value: u128) -> [u8; 32] {
    let mut hex = [0u8; 32];
    for (pair, byte) in hex.chunks_exact_mut(2).zip(value.to_be_bytes()) {
        pair[0] = HEX[usize::from(byte >> 4)];
        pair[1] = HEX[usize::from(byte & 0xF)];
    }
    hex
}

/// The text of ASCII bytes this module formatted itself.
fn ascii(bytes: &[u8]) -> &str {
    // Validation of at most 32 ASCII bytes is a handful of instructions; it never fails here.
    std::str::from_utf8(bytes).unwrap_or("")
}

/// Writes the lowest decimal digits of `value` into `slot`, zero-padded to its length.
fn put_digits(slot: &mut [u8], mut value: u64) {
    for digit in slot.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of [`civil_from_days`]).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let march_month = (month + 9) % 12;
    let day_of_year = (153 * march_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The proleptic Gregorian (year, month, day) of a count of days since 1970-01-01.
///
/// Days are shifted to start on 0000-03-01 so that the leap day ends each year; the calendar
/// repeats every 400 years (an "era" of 146 097 days).
fn civil_from_days(days: i64) -> (i64, u64, u64) {
    const DAYS_PER_ERA: i64 = 146_097;
    // 719 468 days separate 0000-03-01 from 1970-01-01.
    let shifted = days + 719_468;
    let era = shifted.div_euclid(DAYS_PER_ERA);
    let day_of_era = shifted.rem_euclid(DAYS_PER_ERA);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months counted from March: 0 = March, ..., 11 = February.
    let march_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * march_month + 2) / 5 + 1) as u64;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    } as u64;
    let year = era * 400 + year_of_era + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn ids_are_equal_by_their_text_or_number_whether_shared_or_not() {
        use std::hash::BuildHasher;
        let state = std::collections::hash_map::RandomState::new();
        let same = |a: &Id, b: &Id| a == b && state.hash_one(a) == state.hash_one(b);
        let text = Id::from("call_1");
        assert!(same(&text, &text.clone()));
        assert!(same(&text, &Id::from("call_1")));
        assert_ne!(text, Id::from("call_2"));
        assert_ne!(text, Id::from("call_10"));
        let number = Id::from_u128(7);
        assert!(same(&number, &Id::from_u128(7)));
        assert_ne!(number, Id::from_u128(8));
        // A number and the text it is written as are one id: parsing keeps the number.
        assert!(same(&number, &Id::from(number.to_string().as_str())));
    }

    /// Serialises the tests that touch the process-wide factories.
    static GLOBAL: Mutex<()> = Mutex::new(());

    fn ts(secs: i64, micros: i64) -> String {
        Timestamp::from_micros(secs * 1_000_000 + micros).to_string()
    }

    #[test]
    fn known_dates() {
        assert_eq!(ts(0, 0), "1970-01-01T00:00:00");
        assert_eq!(ts(951_782_400, 0), "2000-02-29T00:00:00");
        assert_eq!(ts(68_255_999, 999_999), "1972-02-29T23:59:59.999999");
        assert_eq!(ts(4_107_542_400, 0), "2100-03-01T00:00:00");
        assert_eq!(ts(1_735_689_599, 1), "2024-12-31T23:59:59.000001");
        assert_eq!(ts(1_795_248_355, 123_456), "2026-11-21T08:05:55.123456");
        assert_eq!(ts(-1, 0), "1969-12-31T23:59:59");
    }

    #[test]
    fn day_boundaries_and_leap_years() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        // 1972 is a leap year, 1900 and 2100 are not, 2000 is.
        assert_eq!(civil_from_days(789), (1972, 2, 29));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(47_540), (2100, 2, 28));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        // Every day follows the previous one, and the inverse agrees, over a few centuries.
        let mut prev = civil_from_days(-100_000);
        for day in -99_999..200_000 {
            let next = civil_from_days(day);
            let expected = if next.2 == 1 {
                next.0 > prev.0 || next.1 == prev.1 + 1
            } else {
                next.0 == prev.0 && next.1 == prev.1 && next.2 == prev.2 + 1
            };
            assert!(expected, "day {day}: {prev:?} -> {next:?}");
            assert_eq!(days_from_civil(next.0, next.1 as i64, next.2 as i64), day);
            prev = next;
        }
    }

    #[test]
    fn timestamps_round_trip_through_text() {
        for text in [
            "1970-01-01T00:00:00",
            "2026-11-21T08:05:55.123456",
            "2000-02-29T23:59:59.000001",
            "9999-12-31T23:59:59.999999",
            "0001-01-01T00:00:00",
        ] {
            let parsed: Timestamp = text.parse().unwrap();
            assert_eq!(parsed.to_string(), text);
            let json = serde_json::to_string(&parsed).unwrap();
            assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), parsed);
        }
    }

    /// An offset can carry a date at an edge of the writable years over it: such a text is
    /// refused, not written back as another instant (a year off, as the year was clamped).
    #[test]
    fn timestamps_outside_the_writable_years_are_refused_and_the_edges_round_trip() {
        assert_eq!(days_from_civil(0, 1, 1) * 86_400_000_000, FIRST_WRITABLE);
        assert_eq!(days_from_civil(10_000, 1, 1) * 86_400_000_000 - 1, LAST_WRITABLE);
        for bad in [
            "9999-12-31T23:30:00-01:00",
            "9999-12-31T23:00:00-01:00",
            "0000-01-01T00:30:00+01:00",
            "0000-01-01T00:59:59.999999+01:00",
        ] {
            let err = bad.parse::<Timestamp>().unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "invalid timestamp {bad:?}: in UTC it falls outside 0000-01-01T00:00:00 to \
                     9999-12-31T23:59:59.999999, the instants a timestamp can be written as"
                )
            );
            let json = format!("{bad:?}");
            assert!(serde_json::from_str::<Timestamp>(&json).is_err(), "{bad}");
        }
        for (text, written) in [
            ("0000-01-01T00:00:00", "0000-01-01T00:00:00"),
            ("0000-01-01T01:00:00+01:00", "0000-01-01T00:00:00"),
            ("9999-12-31T23:59:59.999999", "9999-12-31T23:59:59.999999"),
            ("9999-12-31T22:59:59.999999-01:00", "9999-12-31T23:59:59.999999"),
        ] {
            let parsed: Timestamp = text.parse().unwrap();
            assert_eq!(parsed.to_string(), written, "{text}");
            assert_eq!(written.parse::<Timestamp>().unwrap(), parsed);
        }
        assert_eq!(
            Timestamp::from_micros(FIRST_WRITABLE).to_string(),
            "0000-01-01T00:00:00"
        );
        assert_eq!(
            Timestamp::from_micros(LAST_WRITABLE).to_string(),
            "9999-12-31T23:59:59.999999"
        );
        // Beyond, from micros: the nearest edge, never a date inside the range a year off.
        assert_eq!(
            Timestamp::from_micros(FIRST_WRITABLE - 1).to_string(),
            "0000-01-01T00:00:00"
        );
        assert_eq!(Timestamp::from_micros(i64::MIN).to_string(), "0000-01-01T00:00:00");
        assert_eq!(
            Timestamp::from_micros(LAST_WRITABLE + 1).to_string(),
            "9999-12-31T23:59:59.999999"
        );
        assert_eq!(
            Timestamp::from_micros(i64::MAX).to_string(),
            "9999-12-31T23:59:59.999999"
        );
    }

    #[test]
    fn timestamps_accept_offsets_and_long_fractions() {
        let utc: Timestamp = "2026-11-21T08:05:55.123456".parse().unwrap();
        assert_eq!("2026-11-21T08:05:55.123456Z".parse::<Timestamp>().unwrap(), utc);
        assert_eq!("2026-11-21T10:05:55.123456+02:00".parse::<Timestamp>().unwrap(), utc);
        assert_eq!("2026-11-21 08:05:55.123456789".parse::<Timestamp>().unwrap(), utc);
        assert_eq!(
            "2026-11-21T08:05:55.5".parse::<Timestamp>().unwrap().to_string(),
            "2026-11-21T08:05:55.500000"
        );
    }

    #[test]
    fn bad_timestamps_are_clear_errors() {
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00",
            "2026-02-30T00:00:00",
            "2026-11-21T24:00:00",
            "2026-01-01T00:00:00+99:99",
            "2026-01-01T00:00:00-24:00",
            "2026-01-01T00:00:00+01:60",
            "2026-11-21T08:05:55.",
            "2026-11-21T08:05:55+2",
        ] {
            let err = bad.parse::<Timestamp>().unwrap_err();
            assert!(err.to_string().contains("expected YYYY-MM-DDTHH:MM:SS"), "{err}");
        }
        let err = serde_json::from_str::<Timestamp>(r#""nope""#).unwrap_err();
        assert!(err.to_string().contains("invalid timestamp \"nope\""), "{err}");
    }

    #[test]
    fn ids_are_uuid4_hex_and_distinct() {
        let _guard = GLOBAL.lock().unwrap_or_else(PoisonError::into_inner);
        let a = Id::new().to_string();
        let b = Id::new().to_string();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| HEX.contains(&b)), "{a}");
        assert_ne!(a, b);
        assert_eq!(&a[12..13], "4", "version nibble");
        assert!(matches!(&a[16..17], "8" | "9" | "a" | "b"), "variant nibble of {a}");
    }

    #[test]
    fn hex_text_becomes_a_number_and_other_text_stays_text() {
        let hex = "0123456789abcdef0123456789abcdef";
        let id = Id::from(hex);
        assert_eq!(id.as_u128(), Some(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef));
        assert_eq!(id, hex);
        assert_eq!(id, Id::from(hex.to_owned()));
        // Upper-case hex is somebody else's text: it round-trips as written.
        let upper = Id::from("0123456789ABCDEF0123456789ABCDEF");
        assert_eq!(upper.as_text(), Some("0123456789ABCDEF0123456789ABCDEF"));
        assert_ne!(upper, id);
        let call = Id::from("call_1");
        assert_eq!(serde_json::to_string(&call).unwrap(), r#""call_1""#);
        assert_eq!(serde_json::from_str::<Id>(r#""call_1""#).unwrap(), call);
        assert_eq!(format!("{call:?}"), r#""call_1""#);
        assert!(Id::from("").is_empty());
        assert_eq!(std::mem::size_of::<Id>(), 24);
    }

    #[test]
    fn factories_override_and_reset() {
        let _guard = GLOBAL.lock().unwrap_or_else(PoisonError::into_inner);
        // Other tests may create ids meanwhile: keep the override unique and well formed.
        let counter = Arc::new(AtomicU64::new(0));
        let ids = Arc::clone(&counter);
        set_id_factory(move || Id::from_u128(u128::from(ids.fetch_add(1, Ordering::Relaxed))));
        set_timestamp_factory(|| Timestamp::from_micros(978_307_200_000_000));
        let first = Id::new().as_u128().unwrap();
        let second = Id::new().as_u128().unwrap();
        assert_eq!(second, first + 1);
        assert_eq!(Timestamp::now().to_string(), "2001-01-01T00:00:00");
        reset_factories();
        assert_eq!(Id::new().len(), 32);
        assert_ne!(Timestamp::now().to_string(), "2001-01-01T00:00:00");
    }
}
