//! How the UI writes values the server sends as text.

/// A stored UTC timestamp (`2026-12-02T14:07:09.123Z`) to the second: `2026-12-02 14:07:09`.
pub fn utc_time(stamp: &str) -> String {
    stamp.replacen('T', " ", 1).chars().take(19).collect()
}

/// The content of a `<textarea>`, to give as its `inner_html`. Leptos writes a textarea's
/// children to server HTML unescaped (tachys treats it like `<script>`), so text typed by a
/// user (`</textarea><script>…`) would end the element and run as markup in the console's
/// origin. Escaped, the parser reads it back as the same text in both places it is parsed:
/// the server's HTML and, after client-side navigation, `innerHTML` (both RCDATA). The HTML
/// parser drops a newline right after `<textarea>`, so the server doubles a leading one.
pub fn textarea_html(text: &str) -> String {
    let escaped = html_escape::encode_text(text);
    if cfg!(feature = "ssr") && text.starts_with('\n') {
        format!("\n{escaped}")
    } else {
        escaped.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::{textarea_html, utc_time};

    #[test]
    fn timestamps_are_cut_to_the_second() {
        assert_eq!(utc_time("2026-12-02T14:07:09.123Z"), "2026-12-02 14:07:09");
    }

    #[test]
    fn textarea_text_cannot_close_its_element() {
        let hostile = "</textarea><script>alert(1)</script> & &amp;";
        let html = textarea_html(hostile);
        assert!(!html.contains('<'), "{html}");
        assert_eq!(
            html,
            "&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; &amp;amp;"
        );
    }
}
