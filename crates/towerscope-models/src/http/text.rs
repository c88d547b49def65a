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

/// A JSON value as text: a string as it is (borrowed when it needs no unescaping), any other
/// value (an object, an array) as its compact JSON. For tool call arguments, which the API
/// sends as a string of JSON and some compatible servers as the object itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonText<'a>(pub(crate) Cow<'a, str>);

impl Deref for JsonText<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for JsonText<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct JsonTextVisitor;

        impl<'de> Visitor<'de> for JsonTextVisitor {
            type Value = JsonText<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a JSON object")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(JsonText(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(JsonText(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(JsonText(Cow::Owned(text)))
            }

            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let value = serde_json::Map::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(JsonText(Cow::Owned(serde_json::Value::Object(value).to_string())))
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                let value = Vec::<serde_json::Value>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(JsonText(Cow::Owned(serde_json::Value::Array(value).to_string())))
            }
        }

        deserializer.deserialize_any(JsonTextVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_text_takes_a_string_or_an_object_as_its_text() -> Result<(), serde_json::Error> {
        let text: JsonText<'_> = serde_json::from_str(r#""{\"a\": 1}""#)?;
        assert_eq!(&*text, r#"{"a": 1}"#);
        let plain: JsonText<'_> = serde_json::from_str(r#""{}""#)?;
        assert!(matches!(plain, JsonText(Cow::Borrowed("{}"))));
        let object: JsonText<'_> = serde_json::from_str(r#"{"city": "Paris", "days": [1, 2]}"#)?;
        assert_eq!(&*object, r#"{"city":"Paris","days":[1,2]}"#);
        let list: JsonText<'_> = serde_json::from_str("[1, {}]")?;
        assert_eq!(&*list, "[1,{}]");
        assert!(serde_json::from_str::<JsonText<'_>>("12").is_err());
        Ok(())
    }

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
