//! Text that came from the network, made safe to print.
//!
//! A peer chooses every string it sends: error texts, warnings, host names, unknown message
//! types that end up in a parser's error. Printed raw to a terminal or a log, such a string
//! can move the cursor, ring the bell, forge a log line with a newline, or reorder what is
//! shown with bidirectional overrides. [`escape`] writes those characters as escapes
//! (`\n`, `\t`, `\u{1b}`), [`clip`] also cuts a string to a length, and [`sanitize_message`]
//! escapes every string of a decoded message.

use std::borrow::Cow;
use std::fmt::Write;

use crate::control::Message;

/// Whether `c` must not reach a terminal or a log as it is: C0 and C1 controls, DEL, and the
/// bidirectional formatting characters (embeddings, overrides, isolates, marks).
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `s` with every unsafe character ([`is_unsafe`]) written as an escape: `\n`, `\r`, `\t`,
/// `\\u{HEX}` for the others; a backslash stays a backslash. Borrowed when nothing changes.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Longest text of a peer's that an error or a warning quotes, in characters.
pub const MAX_PEER_TEXT: usize = 500;

/// `s` escaped and cut to at most `max` characters of the original, with a note of how
/// many were left out.
pub fn clip(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return escape(s).into_owned();
    }
    let head: String = s.chars().take(max).collect();
    format!("{}... ({} more characters)", escape(&head), n - max)
}

/// The message with every string in it escaped ([`escape`]). Strings without unsafe
/// characters, which is all of them from a well-behaved peer, are left as they are, and
/// then so is the message.
pub fn sanitize_message(m: Message) -> Message {
    // Through the frame's own writer and reader (crate::json), not serde_json's to_value and
    // from_value: a second writer or reader would compile every message type again.
    let Ok(mut v) = crate::json::to_value(&m) else {
        return m;
    };
    if !escape_strings(&mut v) {
        return m;
    }
    crate::json::from_value(&v).unwrap_or(m)
}

/// Escapes every string (keys too) in `v`; whether anything changed.
fn escape_strings(v: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => match escape(s) {
            Cow::Borrowed(_) => false,
            Cow::Owned(e) => {
                *s = e;
                true
            }
        },
        Value::Array(a) => a.iter_mut().fold(false, |acc, x| escape_strings(x) | acc),
        Value::Object(o) => {
            let mut changed = false;
            if o.keys().any(|k| k.chars().any(is_unsafe)) {
                let old = std::mem::take(o);
                for (k, x) in old {
                    o.insert(escape(&k).into_owned(), x);
                }
                changed = true;
            }
            o.values_mut()
                .fold(changed, |acc, x| escape_strings(x) | acc)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{ErrorCode, ErrorMsg};

    #[test]
    fn controls_and_bidi_overrides_are_escaped() {
        assert!(matches!(escape("plain text, ünïcode"), Cow::Borrowed(_)));
        assert_eq!(
            escape("a\nb\x1b[2Jc\x07\t\u{202e}d\u{9b}"),
            "a\\nb\\u{1b}[2Jc\\u{7}\\t\\u{202e}d\\u{9b}"
        );
        assert_eq!(escape("x\r\x7f"), "x\\r\\u{7f}");
    }

    #[test]
    fn clip_cuts_and_says_how_much() {
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("abcdef", 2), "ab... (4 more characters)");
        assert_eq!(clip("\n\n\n", 1), "\\n... (2 more characters)");
    }

    #[test]
    fn every_string_of_a_message_is_escaped() {
        let m = Message::Error(ErrorMsg {
            code: ErrorCode::Internal,
            message: "boom\n2026-01-01 forged line\x1b[31m".into(),
        });
        let Message::Error(e) = sanitize_message(m) else {
            panic!("still an error message")
        };
        assert_eq!(e.message, "boom\\n2026-01-01 forged line\\u{1b}[31m");
        assert!(!e.message.chars().any(is_unsafe));
        let clean = Message::Error(ErrorMsg {
            code: ErrorCode::Busy,
            message: "retry later".into(),
        });
        assert_eq!(sanitize_message(clean.clone()), clean);
    }
}
