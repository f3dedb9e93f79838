//! One JSON writer for every type: the compact one the control frames use.
//!
//! serde compiles a type's `Serialize` once per serializer it is written with. Writing a
//! record compact (frames, JSON lines), pretty (`--json`) and into a `serde_json::Value`
//! compiled it three times; on a board, where the binary's size counts, each record's
//! writer is 10-20 KB of code per copy. [`to_string_pretty`] therefore writes compact text
//! and re-indents it ([`indent`]), and [`to_value`] reads the compact text back: the same
//! output as serde_json's own pretty writer and `to_value`, from one writer per type. In the
//! same way [`from_value`] reads a type through text, with the one reader a type has.

use serde::Serialize;

/// `value` as JSON indented with two spaces, as `serde_json::to_string_pretty` writes it.
pub fn to_string_pretty<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    serde_json::to_string(value).map(|compact| indent(&compact))
}

/// `value` as a `serde_json::Value`, as `serde_json::to_value` gives it.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<serde_json::Value> {
    serde_json::to_vec(value).and_then(|text| serde_json::from_slice(&text))
}

/// `T` read from a `serde_json::Value`, as `serde_json::from_value` reads it, through the
/// value's text and the reader of `serde_json::from_str`, which every type already has.
pub fn from_value<T: serde::de::DeserializeOwned>(
    value: &serde_json::Value,
) -> serde_json::Result<T> {
    serde_json::from_str(&value.to_string())
}

/// Compact JSON text (no white space outside strings, as serde_json writes it) indented
/// with two spaces per level: a line per member and element, `"key": value`, and empty
/// objects and arrays as `{}` and `[]`.
pub fn indent(compact: &str) -> String {
    let mut out = String::with_capacity(compact.len() * 2);
    let mut depth = 0usize;
    let (mut in_string, mut escaped) = (false, false);
    let mut chars = compact.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        (0..depth).for_each(|_| out.push_str("  "));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                let close = if c == '{' { '}' } else { ']' };
                if chars.peek() == Some(&close) {
                    chars.next();
                    out.push(close);
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn indent_writes_what_serde_jsons_pretty_writer_writes() {
        let cases = [
            json!(null),
            json!(3.5e-7),
            json!("a \"quoted\" {string}, with [brackets]: and \\ escapes\n"),
            json!([]),
            json!({}),
            json!({"a": [], "b": {}, "c": [1, 2, {"d": null}], "e": {"f": [[]]}}),
            json!([{"k,:": "v{}"}, -1, 18446744073709551615u64, true, "é ✓ \u{1b}"]),
        ];
        for v in cases {
            let compact = serde_json::to_string(&v).unwrap();
            assert_eq!(
                indent(&compact),
                serde_json::to_string_pretty(&v).unwrap(),
                "{compact}"
            );
            assert_eq!(
                to_string_pretty(&v).unwrap(),
                serde_json::to_string_pretty(&v).unwrap()
            );
            assert_eq!(to_value(&v).unwrap(), v);
            assert_eq!(from_value::<serde_json::Value>(&v).unwrap(), v);
        }
    }

    #[test]
    fn a_control_message_comes_out_as_serde_json_writes_it() {
        let m = crate::control::Message::Error(crate::control::ErrorMsg {
            code: crate::control::ErrorCode::Protocol,
            message: "no: \"x\"".into(),
        });
        assert_eq!(
            to_string_pretty(&m).unwrap(),
            serde_json::to_string_pretty(&m).unwrap()
        );
        let v = to_value(&m).unwrap();
        assert_eq!(v, serde_json::to_value(&m).unwrap());
        let back: crate::control::Message = from_value(&v).unwrap();
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&m).unwrap()
        );
    }
}
