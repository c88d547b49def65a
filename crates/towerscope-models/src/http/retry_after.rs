//! Reading a provider's retry-after hint from response headers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;

/// The hint of `retry-after-ms` (OpenAI) or `retry-after` (seconds, or an HTTP date), if any.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    // One out of range (negative, NaN) falls back to `retry-after`.
    if let Some(hint) = text("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|ms| seconds(ms / 1000.0))
    {
        return Some(hint);
    }
    let value = text("retry-after")?;
    match value.parse::<f64>() {
        Ok(secs) => seconds(secs),
        Err(_) => {
            let at = http_date(value)?;
            let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
            Some(Duration::from_secs(at.saturating_sub(now)))
        }
    }
}

fn seconds(secs: f64) -> Option<Duration> {
    (0.0..1e9).contains(&secs).then(|| Duration::from_secs_f64(secs))
}

/// Seconds since the epoch of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form
/// RFC 9110 requires senders to use.
fn http_date(value: &str) -> Option<u64> {
    let mut parts = value.split_ascii_whitespace();
    let _weekday = parts.next()?;
    let day: u64 = parts.next()?.parse().ok()?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month_name = parts.next()?;
    let month = MONTHS.iter().position(|m| *m == month_name)? as u64 + 1;
    let year: u64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if parts.next()? != "GMT"
        || !(1..=31).contains(&day)
        || h > 23
        || m > 59
        || s > 60
        || !(1970..=9999).contains(&year)
    {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm), in unsigned arithmetic from 1970.
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            if let Ok(value) = HeaderValue::from_str(value) {
                map.insert(*name, value);
            }
        }
        map
    }

    #[test]
    fn seconds_milliseconds_and_dates() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1.5")])),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2"), ("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        // A millisecond hint out of range gives way to the seconds.
        for ms in ["-5", "NaN"] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", "2"), ("retry-after-ms", ms)])),
                Some(Duration::from_secs(2))
            );
        }
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")])), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
        // A date in the past means "now".
        assert_eq!(
            retry_after(&headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")])),
            Some(Duration::ZERO)
        );
        assert_eq!(http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(http_date("Tue, 29 Feb 2028 12:00:00 GMT"), Some(1_835_438_400));
        assert_eq!(http_date("Sun, 06 Nov 1994 08:49:37 CET"), None);
        assert_eq!(http_date("Sun, 32 Nov 1994 08:49:37 GMT"), None);
        // A year of more than four digits (the form has four) is no date, not an overflow.
        assert_eq!(http_date("Sun, 06 Nov 999999999999 08:49:37 GMT"), None);
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Sun, 06 Nov 18446744073709551615 08:49:37 GMT"
            )])),
            None
        );
        assert!(http_date("Fri, 31 Dec 9999 23:59:60 GMT").is_some());
    }
}
