//! A small base64 codec (standard alphabet, with padding) for merging streamed media.
//!
//! Streamed media arrives as independently encoded base64 pieces, each with its own padding, so
//! pieces cannot be concatenated as strings: they are decoded, joined as bytes and re-encoded.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encodes bytes as standard base64 with `=` padding.
pub(crate) fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b0 = u32::from(chunk[0]);
        let b1 = chunk.get(1).copied().map_or(0, u32::from);
        let b2 = chunk.get(2).copied().map_or(0, u32::from);
        let triple = (b0 << 16) | (b1 << 8) | b2;
        out.push(char::from(ALPHABET[(triple >> 18) as usize & 63]));
        out.push(char::from(ALPHABET[(triple >> 12) as usize & 63]));
        out.push(if chunk.len() > 1 {
            char::from(ALPHABET[(triple >> 6) as usize & 63])
        } else {
            '='
        });
        out.push(if chunk.len() > 2 {
            char::from(ALPHABET[triple as usize & 63])
        } else {
            '='
        });
    }
    out
}

fn sextet(byte: u8) -> Option<u32> {
    let value = match byte {
        b'A'..=b'Z' => byte - b'A',
        b'a'..=b'z' => byte - b'a' + 26,
        b'0'..=b'9' => byte - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(value))
}

/// Decodes standard base64. ASCII whitespace is skipped and padding may be left out; `None` when
/// the text is not base64.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc = 0u32;
    let mut count = 0u32;
    let mut padded = false;
    for byte in text.bytes() {
        if byte.is_ascii_whitespace() {
            continue;
        }
        if byte == b'=' {
            padded = true;
            continue;
        }
        if padded {
            return None;
        }
        acc = (acc << 6) | sextet(byte)?;
        count += 1;
        if count == 4 {
            out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
            acc = 0;
            count = 0;
        }
    }
    match count {
        0 => {}
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
        _ => return None,
    }
    Some(out)
}

/// Appends the base64 piece `incoming` to the base64 text `existing`, joining the bytes.
///
/// Costs what `incoming` costs, whatever the length of `existing`: only the last group of
/// `existing` (4 characters, which may carry padding) is decoded again. When `incoming`, or the
/// end of `existing`, is not valid base64 the two strings are concatenated as they are (the
/// reference's `ToolResponse` does the same for placeholder payloads), so nothing is lost.
pub(crate) fn merge(existing: &mut String, incoming: &str) {
    match decode(incoming) {
        Some(bytes) => append_bytes(existing, &bytes),
        None => existing.push_str(incoming),
    }
}

/// How far from its end a text is searched for line breaks: wrapped base64 (MIME's 76
/// columns, PEM's 64) has one closer to its end than this.
const WRAP_WINDOW: usize = 128;

/// How far from its start a text is searched for line breaks: base64 wrapped at up to this
/// many columns (whose last line may be longer than [`WRAP_WINDOW`]), or a piece that starts
/// with a line break, has one there.
const HEAD_WINDOW: usize = 1024;

/// Appends raw bytes to the base64 text `existing`, re-encoding only its last group.
///
/// Wrapped base64 is unwrapped first, once: its line breaks found near its end or its start
/// (in its last [`WRAP_WINDOW`] or first [`HEAD_WINDOW`] bytes), the whole text is decoded and
/// written again with the new bytes, whatever its line width, and the next pieces find no line
/// break (the text written has none). A text with no
/// whitespace there is taken as unwrapped: its groups are counted from its length, reading at
/// most those windows of it.
pub(crate) fn append_bytes(existing: &mut String, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    // A line break ending the text (as `base64` writes it) is no part of its last group.
    let text_end = existing.trim_end_matches(|c: char| c.is_ascii_whitespace()).len();
    existing.truncate(text_end);
    let wrapped = {
        let bytes = existing.as_bytes();
        let tail = &bytes[text_end.saturating_sub(WRAP_WINDOW)..];
        let head = &bytes[..text_end.min(HEAD_WINDOW)];
        tail.iter().chain(head).any(u8::is_ascii_whitespace)
    };
    if wrapped {
        // Decoded whole and written again without its line breaks, the new bytes joined: once,
        // since the text written has none. Text with spaces that is not base64 (a placeholder,
        // a note) is kept as it is, the new bytes after it.
        match decode(existing) {
            Some(mut joined) => {
                joined.extend_from_slice(bytes);
                *existing = encode(&joined);
            }
            None => existing.push_str(&encode(bytes)),
        }
        return;
    }
    // The last group: 4 characters, or the unpadded remainder of a text without padding.
    let len = existing.len();
    let partial = len % 4;
    let tail_start = len - if partial == 0 { len.min(4) } else { partial };
    // Text that is not base64 may end `existing` (appended as it was): a group boundary inside
    // one of its characters is no group of base64.
    let Some(tail) = existing.get(tail_start..) else {
        existing.push_str(&encode(bytes));
        return;
    };
    if partial == 0 && !tail.bytes().any(|b| b == b'=') {
        existing.push_str(&encode(bytes));
        return;
    }
    match decode(tail) {
        Some(mut joined) => {
            joined.extend_from_slice(bytes);
            existing.truncate(tail_start);
            existing.push_str(&encode(&joined));
        }
        // Not base64 at its end: keep it as it is and add the new bytes after it.
        None => existing.push_str(&encode(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A first piece ending in a line break (as `base64` writes it): the next piece joins the
    /// bytes (it was joined to the line break, and the whole no longer decoded).
    #[test]
    fn a_piece_after_a_trailing_line_break_joins_the_bytes() {
        let mut existing = format!("{}\n", encode(b"foob"));
        merge(&mut existing, &encode(b"f"));
        assert_eq!(decode(&existing).as_deref(), Some(&b"foobf"[..]));
    }

    /// Wrapped base64 (a line break inside, its last line padded): the next piece joins the
    /// bytes (the last group was counted from the text's start, across the line break, and
    /// the whole no longer decoded).
    #[test]
    fn a_piece_after_wrapped_text_joins_the_bytes() {
        for (existing, piece, joined) in [
            ("Zm9v\nYg==", "Zg==", &b"foobf"[..]),
            ("Zm9v\r\nYmFy\r\n", "YmF6", b"foobarbaz"),
            ("Zm9v\nYmE", "eg==", b"foobaz"),
        ] {
            let mut text = existing.to_owned();
            merge(&mut text, piece);
            assert_eq!(
                decode(&text).as_deref(),
                Some(joined),
                "{existing:?} + {piece:?}: {text:?}"
            );
        }
    }

    /// Base64 wrapped at any width, a multiple of 4 or not: the next pieces join the bytes
    /// (its last group was counted on its last line, which only works when lines break
    /// between groups), and the text is unwrapped once, so later pieces find no line break.
    #[test]
    fn a_piece_after_text_wrapped_at_any_width_joins_the_bytes() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1_000).collect();
        let flat = encode(&data[..500]);
        for width in [1, 5, 10, 63, 64, 76, 77, 127] {
            let mut wrapped = String::new();
            for (i, c) in flat.chars().enumerate() {
                if i > 0 && i % width == 0 {
                    wrapped.push_str("\r\n");
                }
                wrapped.push(c);
            }
            wrapped.push('\n');
            let mut text = wrapped.clone();
            for chunk in data[500..].chunks(7) {
                append_bytes(&mut text, chunk);
            }
            assert_eq!(decode(&text).as_deref(), Some(&data[..]), "width {width}");
            assert!(!text.contains(['\r', '\n']), "width {width}: unwrapped");
        }
    }

    /// Wrapped at more columns than the end's window (its last line has no line break in the
    /// window), or a first piece that starts with a line break: unwrapped too (the groups were
    /// counted from the text's length, across the line breaks, and the bytes came out wrong).
    #[test]
    fn long_lines_and_a_leading_line_break_are_unwrapped_too() {
        let data: Vec<u8> = (0..=255u8).cycle().take(500).collect();
        let flat = encode(&data[..420]);
        let mut wrapped = String::new();
        for (i, c) in flat.chars().enumerate() {
            if i > 0 && i % 200 == 0 {
                wrapped.push('\n');
            }
            wrapped.push(c);
        }
        append_bytes(&mut wrapped, &data[420..]);
        assert_eq!(decode(&wrapped).as_deref(), Some(&data[..]), "200 columns");
        for lead in ["\n", "\r\n"] {
            let mut text = format!("{lead}{}", encode(&data[..299]));
            merge(&mut text, &encode(&data[299..]));
            assert_eq!(decode(&text).as_deref(), Some(&data[..]), "{lead:?} first");
        }
    }

    /// Text with spaces that is not base64 (a placeholder) keeps its spaces: only base64 is
    /// unwrapped.
    #[test]
    fn text_with_spaces_that_is_not_base64_is_kept_as_it_is() {
        let mut text = "image omitted, see the file".to_owned();
        append_bytes(&mut text, b"f");
        assert_eq!(text, "image omitted, see the fileZg==");
        let mut text = "Zm9v Zm9v Z".to_owned();
        append_bytes(&mut text, b"f");
        assert_eq!(text, "Zm9v Zm9v ZZg==", "a lone sextet is not base64");
    }

    /// Text that is not base64, with characters of several bytes, then base64: kept as it is,
    /// the new bytes after it (a group boundary fell inside a character, and truncating
    /// there panicked).
    #[test]
    fn base64_after_text_with_wide_characters_is_appended() {
        for text in ["ab€", "€", "a€€", "ü", "xyz€1"] {
            let mut existing = String::new();
            merge(&mut existing, text);
            merge(&mut existing, "Zg==");
            assert_eq!(existing, format!("{text}Zg=="));
        }
    }

    #[test]
    fn round_trips_every_length() {
        let data: Vec<u8> = (0..=255u8).collect();
        for len in 0..40 {
            let encoded = encode(&data[..len]);
            assert_eq!(encoded.len() % 4, 0);
            assert_eq!(decode(&encoded).as_deref(), Some(&data[..len]));
        }
        assert_eq!(decode(&encode(&data)).as_deref(), Some(&data[..]));
    }

    #[test]
    fn known_vectors() {
        assert_eq!(encode(b""), "");
        assert_eq!(encode(b"f"), "Zg==");
        assert_eq!(encode(b"fo"), "Zm8=");
        assert_eq!(encode(b"foo"), "Zm9v");
        assert_eq!(encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode(&[0xfb, 0xff]), "+/8=");
        assert_eq!(decode("Zm9v\nYmE=").as_deref(), Some(&b"fooba"[..]));
        assert_eq!(decode("Zg").as_deref(), Some(&b"f"[..]));
    }

    #[test]
    fn rejects_non_base64() {
        assert_eq!(decode("Zm9v!"), None);
        assert_eq!(decode("Z"), None);
        assert_eq!(decode("Zg==Zg=="), None);
    }

    #[test]
    fn merges_bytes_not_strings() {
        let merged = |a: &str, b: &str| {
            let mut a = a.to_owned();
            merge(&mut a, b);
            a
        };
        // "ab" and "c" encoded separately carry padding in the middle.
        assert_eq!(merged("YWI=", "Yw=="), "YWJj");
        assert_eq!(merged("", "YWJj"), "YWJj");
        assert_eq!(merged("not base64!", "x"), "not base64!x");
        assert_eq!(merged("Zg", "Zg=="), "ZmY=", "an unpadded piece joins too");
        let mut kept = "not base64!".to_owned();
        append_bytes(&mut kept, b"f");
        assert_eq!(kept, "not base64!Zg==", "bytes after text that is not base64 keep both");
    }

    #[test]
    fn streamed_pieces_of_every_length_join_to_the_whole() {
        let data: Vec<u8> = (0..200u8).collect();
        for piece in 1..8 {
            let mut joined = String::new();
            for chunk in data.chunks(piece) {
                merge(&mut joined, &encode(chunk));
            }
            assert_eq!(decode(&joined).as_deref(), Some(&data[..]), "pieces of {piece}");
            let mut raw = String::new();
            for chunk in data.chunks(piece) {
                append_bytes(&mut raw, chunk);
            }
            assert_eq!(raw, encode(&data), "bytes in pieces of {piece}");
        }
    }

    #[test]
    fn a_long_stream_costs_what_its_pieces_cost() {
        // 20,000 pieces of 3 bytes: a quadratic merge re-encodes ~1.2 GB, or reads back ~800 MB
        // to find the last line's start (this test then took 40 s); this one ~80 KB.
        let mut joined = String::new();
        for i in 0..20_000u32 {
            merge(&mut joined, &encode(&i.to_le_bytes()[..3]));
        }
        assert_eq!(joined.len(), 80_000);
        assert_eq!(decode(&joined).map(|b| b.len()), Some(60_000));
    }
}
