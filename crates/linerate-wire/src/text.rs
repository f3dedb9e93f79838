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
use crate::fleet::{FleetReport, MAX_ERROR_LEN};

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
    // A fleet report's record is JSON text of up to a frame's length: escaped as text,
    // never as a tree (a tree of `[{"":0},...]` costs a hundred times its text).
    let m = match m {
        Message::FleetReport(r) => return Message::FleetReport(Box::new(sanitize_report(*r))),
        m => m,
    };
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

/// A fleet report with its strings escaped and cut to [`MAX_ERROR_LEN`] characters, its
/// record's too ([`escape_json`]); a record whose text does not survive that is dropped,
/// and the error says so.
fn sanitize_report(mut r: FleetReport) -> FleetReport {
    for s in [&mut r.id, &mut r.started_at, &mut r.ended_at] {
        *s = clip(s, MAX_ERROR_LEN);
    }
    r.error = r.error.map(|e| clip(&e, MAX_ERROR_LEN));
    if let Some(rec) = r.record.take() {
        match serde_json::value::RawValue::from_string(escape_json(rec.get(), MAX_ERROR_LEN)) {
            Ok(v) => r.record = Some(v),
            Err(e) => {
                r.error
                    .get_or_insert(format!("the agent's record is not JSON: {e}"));
            }
        }
    }
    r
}

/// JSON text with every string in it (keys too) escaped as [`escape`] does and cut as
/// [`clip`] cuts to `max` characters, read and written as text in one pass: what decoding
/// it, sanitizing each string and encoding it again would give, in memory the size of the
/// text. Text that is not JSON stays text that is not JSON.
pub fn escape_json(json: &str, max: usize) -> String {
    let mut out = String::with_capacity(json.len());
    let mut it = json.char_indices().peekable();
    while let Some((_, c)) = it.next() {
        out.push(c);
        if c != '"' {
            continue;
        }
        // A string: its characters, decoded one at a time.
        let mut count = 0usize;
        loop {
            let Some((at, c)) = it.next() else {
                return out;
            };
            let decoded = match c {
                '"' => break,
                '\\' => match json_escape(json, at, &mut it) {
                    Some(d) => d,
                    None => {
                        // Not an escape JSON knows: left as it is for the reader to refuse.
                        out.push_str(&json[at..it.peek().map_or(json.len(), |p| p.0)]);
                        continue;
                    }
                },
                c => Decoded::Char(c),
            };
            count += 1;
            if count > max {
                continue;
            }
            match decoded {
                Decoded::Char(c) if is_unsafe(c) => {
                    out.push_str(&escape(c.encode_utf8(&mut [0; 4])).replace('\\', "\\\\"));
                }
                Decoded::Char(c) if c != '\\' && c != '"' => out.push(c),
                // An escape that stays one (\\, \", \/, a surrogate pair, a safe \u).
                _ => out.push_str(&json[at..it.peek().map_or(json.len(), |p| p.0)]),
            }
        }
        if count > max {
            let _ = write!(out, "... ({} more characters)", count - max);
        }
        out.push('"');
    }
    out
}

/// A string's character as JSON text gave it.
enum Decoded {
    /// A character.
    Char(char),
    /// An escape kept as it is (a surrogate pair, or half of one for the reader to refuse).
    Kept,
}

/// The character of the escape whose backslash is at `at` (its other characters are taken
/// from `it`); `None` for one JSON does not know.
fn json_escape(
    json: &str,
    at: usize,
    it: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
) -> Option<Decoded> {
    let (_, e) = it.next()?;
    let c = match e {
        '"' | '\\' | '/' => e,
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'b' => '\u{8}',
        'f' => '\u{c}',
        'u' => {
            let hex = json.get(at + 2..at + 6)?;
            let unit = u32::from_str_radix(hex, 16).ok()?;
            for _ in 0..4 {
                it.next();
            }
            if (0xd800..0xdc00).contains(&unit) {
                // A surrogate pair: an astral character, never an unsafe one; its two
                // escapes are one character, kept or cut together.
                let low = json
                    .get(at + 6..at + 12)
                    .and_then(|l| l.strip_prefix("\\u"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok());
                if low.is_some_and(|l| (0xdc00..0xe000).contains(&l)) {
                    for _ in 0..6 {
                        it.next();
                    }
                }
                return Some(Decoded::Kept);
            }
            if (0xdc00..0xe000).contains(&unit) {
                return Some(Decoded::Kept);
            }
            char::from_u32(unit)?
        }
        _ => return None,
    };
    Some(Decoded::Char(c))
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

    /// Every string of `v` (keys too) as `clip(s, max)` gives it.
    fn clipped(v: &serde_json::Value, max: usize) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::String(s) => Value::String(clip(s, max)),
            Value::Array(a) => Value::Array(a.iter().map(|x| clipped(x, max)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (clip(k, max), clipped(x, max)))
                    .collect(),
            ),
            v => v.clone(),
        }
    }

    #[test]
    fn json_text_is_escaped_and_cut_as_its_decoded_strings_would_be() {
        let text = r#"{"a\nb":["x\u001b[2Jy","\u202e","ok \"q\" \\ \/",
            "😀 \ud83d\ude00","\t\b\f\r","long string here", 1.5e3, null, true],
            "ünï": {"k": "\u0085"}}"#;
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        for max in [3, 8, 100] {
            let out = escape_json(text, max);
            let back: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(back, clipped(&v, max), "{max}: {out}");
        }
        // Nothing to change: the same text.
        let clean = r#"{"id":"r-1","n":[1,2,{"s":"plain"}]}"#;
        assert_eq!(escape_json(clean, 100), clean);
        // Not JSON stays not JSON.
        assert!(serde_json::from_str::<serde_json::Value>(&escape_json("[\"\\x\"]", 9)).is_err());
    }

    #[test]
    fn a_fleet_reports_strings_are_cut_to_the_agents_limit() {
        let rec = format!("{{\"warnings\":[\"{}\"]}}", "w".repeat(MAX_ERROR_LEN + 5));
        let m = Message::FleetReport(Box::new(FleetReport {
            id: "a\nb".into(),
            error: Some("e".repeat(3 * MAX_ERROR_LEN)),
            record: Some(serde_json::value::RawValue::from_string(rec).unwrap()),
            ..FleetReport::default()
        }));
        let Message::FleetReport(r) = sanitize_message(m) else {
            panic!("still a fleet report")
        };
        assert_eq!(r.id, "a\\nb");
        assert!(r
            .error
            .unwrap()
            .ends_with(&format!("({} more characters)", 2 * MAX_ERROR_LEN)));
        let v: serde_json::Value = serde_json::from_str(r.record.unwrap().get()).unwrap();
        assert!(v["warnings"][0]
            .as_str()
            .unwrap()
            .ends_with("(5 more characters)"));
    }
}
