use std::time::Duration;

/// Exponential backoff with jitter: the `n`th retry waits `base × 2ⁿ⁻¹`, capped at `max`, minus
/// a random part of up to `jitter` of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    jitter: f64,
}

impl Backoff {
    /// Waits `base`, then twice as long each retry, never more than `max`, with half of each
    /// delay random (`jitter` 0.5).
    pub const fn new(base: Duration, max: Duration) -> Self {
        Self { base, max, jitter: 0.5 }
    }

    /// The random part of each delay, from 0 (always the full delay) to 1 (anywhere between zero
    /// and the full delay); clamped to that range.
    #[must_use]
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = if jitter.is_nan() { 0.0 } else { jitter.clamp(0.0, 1.0) };
        self
    }

    /// The delay before retry number `retry` (1 for the first retry).
    pub fn delay(&self, retry: u32) -> Duration {
        let exp = retry.saturating_sub(1).min(31);
        let full = self.base.saturating_mul(1u32 << exp).min(self.max);
        if self.jitter == 0.0 {
            return full;
        }
        // The random part cut off, computed so that it cannot overflow (a `full` near
        // `Duration::MAX` times a factor that rounds to 1 did).
        let cut = Duration::try_from_secs_f64(full.as_secs_f64() * self.jitter * fastrand::f64()).unwrap_or(full);
        full.saturating_sub(cut)
    }
}

impl Default for Backoff {
    /// 500 ms, doubling up to 30 s, half of each delay random.
    fn default() -> Self {
        Self::new(Duration::from_millis(500), Duration::from_secs(30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A delay near `Duration::MAX` with a factor rounding to 1 panicked; it is the full delay
    /// less at most its jitter's share.
    #[test]
    fn a_delay_near_duration_max_does_not_overflow() {
        for jitter in [1e-300, 0.25, 0.5] {
            let b = Backoff::new(Duration::MAX, Duration::MAX).jitter(jitter);
            for _ in 0..100 {
                assert!(b.delay(1) >= Duration::MAX.mul_f64(0.49), "jitter {jitter}");
            }
        }
    }

    #[test]
    fn doubles_up_to_the_cap() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_millis(700)).jitter(0.0);
        let delays: Vec<_> = (1..=5).map(|n| b.delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 700, 700]);
        assert_eq!(b.delay(1000), Duration::from_millis(700), "no overflow on many retries");
    }

    #[test]
    fn jitter_stays_within_its_share() {
        let b = Backoff::new(Duration::from_secs(1), Duration::from_secs(10)).jitter(0.5);
        for _ in 0..200 {
            let d = b.delay(2);
            assert!(d >= Duration::from_secs(1) && d <= Duration::from_secs(2), "{d:?}");
        }
        assert_eq!(Backoff::default().jitter(f64::NAN).delay(1), Duration::from_millis(500));
    }
}
