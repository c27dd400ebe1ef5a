//! Times as the database stores them: fixed-width UTC text (`2026-12-03T10:15:00.123Z`) that
//! orders as text does, on SQLite and PostgreSQL alike. They are computed here and bound, not
//! by the database's own date functions, so every query reads the same on both.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The time now, to the millisecond.
pub fn now() -> String {
    stamp(SystemTime::now(), "%Y-%m-%dT%H:%M:%S%.3fZ")
}

/// The time now, to the second (the environment tables' precision).
pub fn now_seconds() -> String {
    stamp(SystemTime::now(), "%Y-%m-%dT%H:%M:%SZ")
}

/// The time `ago` before now, to the millisecond.
pub fn before(ago: Duration) -> String {
    stamp(
        SystemTime::now().checked_sub(ago).unwrap_or(UNIX_EPOCH),
        "%Y-%m-%dT%H:%M:%S%.3fZ",
    )
}

/// The time `ago` before now, to the second (to compare with [`now_seconds`] stamps).
pub fn seconds_before(ago: Duration) -> String {
    stamp(
        SystemTime::now().checked_sub(ago).unwrap_or(UNIX_EPOCH),
        "%Y-%m-%dT%H:%M:%SZ",
    )
}

/// The time `ahead` after now, to the millisecond.
pub fn after(ahead: Duration) -> String {
    stamp(
        SystemTime::now()
            .checked_add(ahead)
            .unwrap_or_else(SystemTime::now),
        "%Y-%m-%dT%H:%M:%S%.3fZ",
    )
}

/// The time `ago` before now, to the minute, as the history filter takes it
/// (`2026-12-03T10:15`).
pub fn minute_before(ago: Duration) -> String {
    stamp(
        SystemTime::now().checked_sub(ago).unwrap_or(UNIX_EPOCH),
        "%Y-%m-%dT%H:%M",
    )
}

/// Milliseconds since the Unix epoch, now.
pub fn unix_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as i64)
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as i64)
}

fn stamp(time: SystemTime, pattern: &str) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    chrono::DateTime::from_timestamp(since.as_secs() as i64, since.subsec_nanos())
        .unwrap_or_default()
        .format(pattern)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_fixed_width_utc_text_that_orders_as_time_does() {
        let earlier = before(Duration::from_secs(90));
        let now = now();
        let later = after(Duration::from_secs(86_400));
        assert_eq!(now.len(), "2026-12-03T10:15:00.123Z".len(), "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
        assert!(earlier < now && now < later, "{earlier} {now} {later}");
        assert_eq!(now_seconds().len(), "2026-12-03T10:15:00Z".len());
        assert_eq!(minute_before(Duration::from_secs(3600)).len(), 16);
        assert_eq!(
            stamp(
                UNIX_EPOCH + Duration::from_millis(1_500),
                "%Y-%m-%dT%H:%M:%S%.3fZ"
            ),
            "1970-01-01T00:00:01.500Z"
        );
    }
}
