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
/// When either side is not valid base64 the two strings are concatenated as they are (the
/// reference's `ToolResponse` does the same for placeholder payloads), so nothing is lost.
pub(crate) fn merge(existing: &str, incoming: &str) -> String {
    match (decode(existing), decode(incoming)) {
        (Some(mut bytes), Some(more)) => {
            bytes.extend_from_slice(&more);
            encode(&bytes)
        }
        _ => format!("{existing}{incoming}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // "ab" and "c" encoded separately carry padding in the middle.
        assert_eq!(merge("YWI=", "Yw=="), "YWJj");
        assert_eq!(merge("", "YWJj"), "YWJj");
        assert_eq!(merge("not base64!", "x"), "not base64!x");
    }
}
