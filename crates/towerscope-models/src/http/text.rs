//! [`Text`]: a JSON string read without a copy when it needs no unescaping.
//!
//! serde borrows a `Cow<str>` field only when the field is a bare `Cow` marked `borrow`; inside
//! an `Option` it always copies. Decoders read optional strings of every chunk (ids, model,
//! deltas), so they use `Option<Text>`.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// A string borrowed from the JSON input, or owned when it had escapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

impl Text<'_> {
    /// The text, owned.
    pub(crate) fn into_owned(self) -> String {
        self.0.into_owned()
    }
}

impl Deref for Text<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrows_unless_escaped() -> Result<(), serde_json::Error> {
        let plain: Option<Text<'_>> = serde_json::from_str(r#""plain °C""#)?;
        assert!(matches!(plain, Some(Text(Cow::Borrowed("plain °C")))));
        let escaped: Option<Text<'_>> = serde_json::from_str(r#""a\nb""#)?;
        assert!(matches!(escaped, Some(Text(Cow::Owned(ref s))) if s == "a\nb"));
        let none: Option<Text<'_>> = serde_json::from_str("null")?;
        assert!(none.is_none());
        Ok(())
    }
}
