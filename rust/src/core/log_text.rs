//! Text from outside the library made safe to log: NVRTC's compile log and the program name a
//! caller chose. A log line that begins like a record (`SEVERE: ...`, a date) would be read as one,
//! so every line of such text is prefixed, and control characters (a carriage return that moves
//! back over the prefix, terminal escapes) are written as `\u{..}` escapes.

/// `text` with each line prefixed by `prefix` and control characters other than the line breaks
/// escaped; the lines are joined with `\n`.
pub fn quoted_lines(text: &str, prefix: &str) -> String {
    text.split('\n').map(|line| format!("{prefix}{}", escaped(line))).collect::<Vec<_>>().join("\n")
}

/// `text` on one line: control characters, line breaks included, escaped.
pub fn escaped(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { c.escape_unicode().to_string() } else { c.to_string() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 38 (3): `#line 1 "x.cu\nSEVERE: ..."` put a forged record into the log.
    #[test]
    fn no_line_of_quoted_text_starts_like_a_record() {
        let forged = "x.cu(1): warning\nSEVERE: cuhandle: all is lost\r\nDec 02, 2026 7:00:00 AM x\n\u{1b}[2Kfake";
        let quoted = quoted_lines(forged, "  nvrtc| ");
        assert!(quoted.lines().all(|l| l.starts_with("  nvrtc| ")), "{quoted}");
        assert!(!quoted.contains('\r') && !quoted.contains('\u{1b}'), "{quoted:?}");
        assert_eq!(quoted.lines().nth(1), Some("  nvrtc| SEVERE: cuhandle: all is lost\\u{d}"));
        assert_eq!(escaped("a\nb"), "a\\u{a}b");
    }
}
