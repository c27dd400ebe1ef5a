//! Percent-encoding for values put into this console's own query strings.

/// Encodes all but unreserved characters and `/` and `:` (both allowed in a query).
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' | b':' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::percent_encode;

    #[test]
    fn reserved_characters_are_encoded() {
        assert_eq!(percent_encode("/a b?c=d&é"), "/a%20b%3Fc%3Dd%26%C3%A9");
        assert_eq!(percent_encode("2026-12-01T10:00"), "2026-12-01T10:00");
    }
}
