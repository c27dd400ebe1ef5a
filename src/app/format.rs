//! How the UI writes values the server sends as text.

/// A stored UTC timestamp (`2026-12-02T14:07:09.123Z`) to the second: `2026-12-02 14:07:09`.
pub fn utc_time(stamp: &str) -> String {
    stamp.replacen('T', " ", 1).chars().take(19).collect()
}

#[cfg(test)]
mod tests {
    use super::utc_time;

    #[test]
    fn timestamps_are_cut_to_the_second() {
        assert_eq!(utc_time("2026-12-02T14:07:09.123Z"), "2026-12-02 14:07:09");
    }
}
