//! [`CompiledSchema`]: a schema checked once for keywords the validator cannot enforce, its
//! `$ref`s resolved and its regular expressions compiled.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use regex_lite::{Regex, RegexBuilder};
use serde_json::Value;

use super::embedded::refuse_refs_in_embedded_resources;
use super::flat::FlatObject;
use super::{ValidationError, Validator, resolve_ref};

/// What [`walk`] does with a keyword: one `match`, so a schema's keywords are sorted by a few
/// comparisons each instead of a search through lists of names.
///
/// The validator enforces `type`, `enum`, `const`, `minimum`, `maximum`, `exclusiveMinimum`,
/// `exclusiveMaximum`, `multipleOf`, `minLength`, `maxLength`, `minItems`, `maxItems`,
/// `uniqueItems`, `minContains`, `maxContains`, `minProperties`, `maxProperties`, `required`,
/// `dependentRequired` (nothing to walk in those) and the keywords below. Keywords it knows of
/// nowhere (`description`, `title`, `default`, `examples`, `format`, `$id`, `$schema`,
/// `$comment`, vendor `x-…` keys, …) are annotations and change nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Keyword {
    /// Constrains an instance but is not enforced here: a schema that uses one is refused by
    /// [`CompiledSchema::new`] rather than half-checked.
    Unenforced,
    /// `$ref`.
    Ref,
    /// `pattern`.
    Pattern,
    /// A list of schemas.
    List,
    /// `items`: a list of schemas (older drafts) or one schema.
    Items,
    /// A map of names to schemas.
    Map,
    /// One schema.
    One,
    /// Nothing to walk: a keyword enforced on the instance alone, or an annotation.
    Leaf,
}

impl Keyword {
    pub(super) fn of(keyword: &str) -> Self {
        match keyword {
            "unevaluatedProperties"
            | "unevaluatedItems"
            | "$dynamicRef"
            | "$recursiveRef"
            | "extends"
            | "disallow"
            | "divisibleBy" => Self::Unenforced,
            "$ref" => Self::Ref,
            "pattern" => Self::Pattern,
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => Self::List,
            "items" => Self::Items,
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" | "dependencies" => {
                Self::Map
            }
            "additionalProperties"
            | "additionalItems"
            | "contains"
            | "not"
            | "if"
            | "then"
            | "else"
            | "propertyNames" => Self::One,
            _ => Self::Leaf,
        }
    }
}

/// Why a schema cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema uses a keyword that constrains instances but is not enforced here.
    UnsupportedKeyword {
        /// The keyword, such as `unevaluatedProperties`.
        keyword: String,
        /// Where, as a JSON pointer into the schema (`""` for the root).
        at: String,
    },
    /// A `$ref` that does not point into the same document (`#`, `#/$defs/Name`, …) or points
    /// at nothing.
    UnresolvedRef {
        /// The reference as written.
        reference: String,
        /// Where, as a JSON pointer into the schema.
        at: String,
    },
    /// A `$ref` inside a subschema with a `$id` of its own (an embedded resource), which
    /// resolves against that subschema: the validator resolves every `$ref` against the
    /// document's root, and would check another schema than the one named.
    EmbeddedResource {
        /// The subschema's `$id`.
        id: String,
        /// Where the subschema is, as a JSON pointer into the schema.
        at: String,
    },
    /// A `pattern` or `patternProperties` key that is not a regular expression `regex-lite`
    /// understands (lookaround and backreferences are not supported).
    InvalidPattern {
        /// The pattern as written.
        pattern: String,
        /// What the regex engine said.
        error: String,
    },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedKeyword { keyword, at } => write!(
                f,
                "the keyword '{keyword}' (at '{at}') is not enforced by towerscope's validator; remove it or \
                 express the constraint with supported keywords"
            ),
            Self::UnresolvedRef { reference, at } => write!(
                f,
                "the reference '{reference}' (at '{at}') does not resolve to a schema in the same document; only \
                 '#' and JSON pointers such as '#/$defs/Name' are supported"
            ),
            Self::EmbeddedResource { id, at } => write!(
                f,
                "the subschema at '{at}' has its own '$id' ('{id}'), against which the '$ref's inside it resolve; \
                 towerscope's validator resolves every '$ref' against the document's root: remove the inner '$id' \
                 or move what its '$ref's point to into the root's '$defs'"
            ),
            Self::InvalidPattern { pattern, error } => {
                write!(
                    f,
                    "the pattern '{pattern}' is not a supported regular expression: {error}"
                )
            }
        }
    }
}

impl std::error::Error for SchemaError {}

/// A JSON schema ready to validate many instances: checked once, regular expressions compiled
/// once.
///
/// [`new`](Self::new) refuses a schema that uses a keyword the validator does not enforce (such
/// as `unevaluatedProperties`), a `$ref` that does not resolve inside the document, a `$ref`
/// inside a subschema with its own `$id` (which resolves against that subschema, not the root),
/// or a pattern that is not a supported regular expression, so that nothing is silently left
/// unchecked.
///
/// ```
/// use serde_json::json;
/// use towerscope_agent::toolkit::{CompiledSchema, SchemaError};
///
/// let schema = CompiledSchema::new(json!({"type": "string", "pattern": "^[a-z]+$"}))?;
/// assert!(schema.validate(&json!("paris")).is_ok());
/// assert_eq!(schema.validate(&json!("Paris")).unwrap_err().message, "'Paris' does not match '^[a-z]+$'");
///
/// let err = CompiledSchema::new(json!({"unevaluatedProperties": false})).unwrap_err();
/// assert!(matches!(err, SchemaError::UnsupportedKeyword { ref keyword, .. } if keyword == "unevaluatedProperties"));
/// # Ok::<(), SchemaError>(())
/// ```
#[derive(Clone)]
pub struct CompiledSchema {
    pub(super) schema: Arc<Value>,
    /// Compiled regular expressions by their source.
    pub(crate) patterns: HashMap<String, Regex>,
    /// The schema as an object of scalar properties, when it is one: inputs that already
    /// match it skip coercion and the full validator.
    flat: Option<FlatObject>,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Checks and compiles `schema`; see the type's docs for what is refused.
    pub fn new(schema: impl Into<Arc<Value>>) -> Result<Self, SchemaError> {
        Self::with_patterns(schema, true)
    }

    /// [`new`](Self::new), or without compiling the schema's patterns when `patterns` is
    /// `false`: they are then neither checked nor refused (see
    /// [`Tool::checks_patterns`](crate::toolkit::Tool::checks_patterns)).
    pub(crate) fn with_patterns(schema: impl Into<Arc<Value>>, patterns: bool) -> Result<Self, SchemaError> {
        let schema = schema.into();
        let patterns = walk(&schema, Mode::Strict { patterns })?;
        refuse_refs_in_embedded_resources(&schema)?;
        let flat = FlatObject::of(&schema);
        Ok(Self { schema, patterns, flat })
    }

    /// The schema as given.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Validates `instance`, returning the most relevant error (see [`validate`](super::validate)).
    pub fn validate(&self, instance: &Value) -> Result<(), ValidationError> {
        Validator::run(&self.schema, &self.patterns, instance, super::MAX_STEPS).0
    }

    /// Whether `instance` already is what a flat object schema (scalar properties, see
    /// `flat.rs`) asks for: then coercion would change nothing and validation would pass.
    /// `false` says nothing: the instance takes the general path.
    pub(crate) fn accepts_as_is(&self, instance: &Value) -> bool {
        self.flat.as_ref().is_some_and(|flat| flat.accepts(instance))
    }

    /// [`accepts_as_is`](Self::accepts_as_is) of the parse of `text`, found without making
    /// the parse (see `flat.rs`). `false` says nothing.
    pub(crate) fn accepts_text_as_is(&self, text: &str) -> bool {
        self.flat.as_ref().is_some_and(|flat| flat.accepts_text(text))
    }
}

/// The patterns of `schema` as [`validate`](super::validate) takes it: keywords that are not
/// enforced are ignored, and so are patterns that do not compile.
pub(super) fn lenient_patterns(schema: &Value) -> HashMap<String, Regex> {
    walk(schema, Mode::Lenient).unwrap_or_default()
}

/// How [`walk`] treats what it cannot enforce.
#[derive(Clone, Copy)]
enum Mode {
    /// Refuses it; compiles the patterns or leaves them out.
    Strict { patterns: bool },
    /// Ignores it, and patterns that do not compile.
    Lenient,
}

/// Visits every schema reachable from the root (through keywords and `$ref`s), without
/// recursion, compiling its patterns; in strict mode, refuses what cannot be enforced.
///
/// A schema's place is kept as a step in a [`Trail`] (its parent's step and one key): the JSON
/// pointer is written only for a refusal, not for every schema visited.
fn walk(root: &Value, mode: Mode) -> Result<HashMap<String, Regex>, SchemaError> {
    let strict = matches!(mode, Mode::Strict { .. });
    let compiles = !matches!(mode, Mode::Strict { patterns: false });
    let mut patterns = HashMap::new();
    let mut seen: HashSet<*const Value> = HashSet::new();
    let mut trail = Trail::default();
    let mut stack: Vec<(&Value, Option<usize>)> = vec![(root, None)];
    while let Some((schema, at)) = stack.pop() {
        if !seen.insert(schema) {
            continue;
        }
        let Value::Object(obj) = schema else { continue };
        for (keyword, value) in obj {
            let k = keyword.as_str();
            match (Keyword::of(k), value) {
                (Keyword::Unenforced, _) if strict => {
                    return Err(SchemaError::UnsupportedKeyword {
                        keyword: keyword.clone(),
                        at: trail.pointer(at),
                    });
                }
                (Keyword::Ref, Value::String(reference)) => match resolve_ref(root, reference) {
                    Some(target) => {
                        let step = trail.push(None, Key::Pointer(reference.trim_start_matches('#')));
                        stack.push((target, Some(step)));
                    }
                    None if strict => {
                        return Err(SchemaError::UnresolvedRef {
                            reference: reference.clone(),
                            at: trail.pointer_to(at, k),
                        });
                    }
                    None => {}
                },
                (Keyword::Pattern, Value::String(p)) if compiles => compile(p, &mut patterns, strict)?,
                (Keyword::List | Keyword::Items, Value::Array(list)) => {
                    let here = trail.push(at, Key::Name(k));
                    for (i, sub) in list.iter().enumerate() {
                        stack.push((sub, Some(trail.push(Some(here), Key::Index(i)))));
                    }
                }
                (Keyword::Map, Value::Object(map)) => {
                    if k == "patternProperties" && compiles {
                        for p in map.keys() {
                            compile(p, &mut patterns, strict)?;
                        }
                    }
                    let here = trail.push(at, Key::Name(k));
                    for (name, sub) in map {
                        stack.push((sub, Some(trail.push(Some(here), Key::Name(name)))));
                    }
                }
                (Keyword::One | Keyword::Items, sub) => stack.push((sub, Some(trail.push(at, Key::Name(k))))),
                _ => {}
            }
        }
    }
    Ok(patterns)
}

/// The places of the schemas [`walk`] visits: each a step from its parent's (`None`: the root).
#[derive(Default)]
pub(super) struct Trail<'a> {
    steps: Vec<(Option<usize>, Key<'a>)>,
}

/// One step of a place in a schema.
#[derive(Clone, Copy)]
pub(super) enum Key<'a> {
    /// A keyword or a property name, escaped when written (`~` as `~0`, `/` as `~1`).
    Name(&'a str),
    /// An index in a list of schemas.
    Index(usize),
    /// A `$ref`'s JSON pointer, written as it is: where the reference leads, from the root.
    Pointer(&'a str),
}

impl<'a> Trail<'a> {
    /// Notes a step from `parent`; its index is the new place.
    pub(super) fn push(&mut self, parent: Option<usize>, key: Key<'a>) -> usize {
        self.steps.push((parent, key));
        self.steps.len() - 1
    }

    /// The JSON pointer of the place `at` (`""` for the root).
    pub(super) fn pointer(&self, at: Option<usize>) -> String {
        let mut keys = Vec::new();
        let mut next = at;
        while let Some((parent, key)) = next.and_then(|i| self.steps.get(i)) {
            keys.push(*key);
            next = *parent;
        }
        let mut out = String::new();
        for key in keys.iter().rev() {
            match key {
                Key::Name(name) => {
                    out.push('/');
                    out.push_str(&name.replace('~', "~0").replace('/', "~1"));
                }
                Key::Index(i) => {
                    out.push('/');
                    out.push_str(&i.to_string());
                }
                Key::Pointer(pointer) => out.push_str(pointer),
            }
        }
        out
    }

    /// The JSON pointer of `keyword` in the schema at `at`.
    fn pointer_to(&self, at: Option<usize>, keyword: &str) -> String {
        let mut out = self.pointer(at);
        out.push('/');
        out.push_str(&keyword.replace('~', "~0").replace('/', "~1"));
        out
    }
}

/// The largest compiled size a schema's `pattern` may have: a tenth of regex-lite's default
/// (10 MiB), room for `^.{0,10000}$`.
const MAX_PATTERN_BYTES: usize = 1024 * 1024;

fn compile(pattern: &str, patterns: &mut HashMap<String, Regex>, strict: bool) -> Result<(), SchemaError> {
    if patterns.contains_key(pattern) {
        return Ok(());
    }
    // A pattern is matched in time proportional to its compiled size times the text's length,
    // and the schema may be a server's (MCP): its compiled size is bounded (a pattern over the
    // bound does not compile, as an invalid one does not).
    match RegexBuilder::new(&ecma_to_regex_lite(pattern))
        .size_limit(MAX_PATTERN_BYTES)
        .build()
    {
        Ok(re) => {
            patterns.insert(pattern.to_owned(), re);
            Ok(())
        }
        Err(error) if strict => Err(SchemaError::InvalidPattern {
            pattern: pattern.to_owned(),
            error: error.to_string(),
        }),
        Err(error) => {
            tracing::warn!(pattern, %error, "a schema pattern does not compile; it is not checked");
            Ok(())
        }
    }
}

/// White space and line terminators as ECMA-262 `\s` means them (`regex-lite`'s `\s` is ASCII
/// only), as class members.
const ECMA_SPACE: &str =
    r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// Rewrites the ECMA-262 escapes whose meaning `regex-lite` lacks or does not share: `\s` and `\S`
/// (Unicode white space), and `\cX` (a control character).
fn ecma_to_regex_lite(pattern: &str) -> Cow<'_, str> {
    if !pattern.contains("\\s") && !pattern.contains("\\S") && !pattern.contains("\\c") {
        return Cow::Borrowed(pattern);
    }
    let mut out = String::with_capacity(pattern.len() + 64);
    let mut in_class = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('s') if in_class => out.push_str(ECMA_SPACE),
                Some('s') => {
                    out.push('[');
                    out.push_str(ECMA_SPACE);
                    out.push(']');
                }
                Some('S') if !in_class => {
                    out.push_str("[^");
                    out.push_str(ECMA_SPACE);
                    out.push(']');
                }
                Some('c') => match chars.clone().next() {
                    Some(letter) if letter.is_ascii_alphabetic() => {
                        chars.next();
                        out.push_str(&format!("\\x{{{:X}}}", letter as u32 % 32));
                    }
                    _ => out.push_str("\\c"),
                },
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // A `]` right after `[` or `[^` is a member, not the end.
                if chars.clone().next() == Some('^') {
                    out.push('^');
                    chars.next();
                }
                if chars.clone().next() == Some(']') {
                    out.push(']');
                    chars.next();
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}
