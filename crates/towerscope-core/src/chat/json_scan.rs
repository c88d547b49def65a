//! [`JsonScan`]: where streamed JSON text stands.

/// Where streamed JSON text stands (a tool call's arguments arriving in fragments): enough to
/// tell when a value is complete, in time linear in the text, each fragment being scanned once.
/// It does not validate: it follows brackets outside strings.
///
/// A provider's decoder and the agent's converter use it to tell a call's next fragment from
/// the start of another call that a server sent under the same index or id.
///
/// ```
/// use towerscope_core::JsonScan;
///
/// let mut scan = JsonScan::default();
/// scan.feed(r#"{"path": "a}"#);
/// assert!(!scan.is_complete(), "the brace is inside a string");
/// scan.feed(r#""}"#);
/// assert!(scan.is_complete());
/// assert!(scan.starts_another(r#" {"path": "b"}"#));
/// ```
#[derive(Debug, Default, Clone)]
pub struct JsonScan {
    depth: u32,
    started: bool,
    in_string: bool,
    escaped: bool,
}

impl JsonScan {
    /// Takes in the next fragment.
    #[inline]
    pub fn feed(&mut self, fragment: &str) {
        for byte in fragment.bytes() {
            if self.in_string {
                match byte {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth += 1;
                    self.started = true;
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
    }

    /// Whether an object or array has started.
    #[inline]
    pub fn is_started(&self) -> bool {
        self.started
    }

    /// Whether the object or array that started has ended (nothing open, outside a string).
    #[inline]
    pub fn is_complete(&self) -> bool {
        self.started && self.depth == 0 && !self.in_string
    }

    /// Whether `fragment` starts a new object after a complete one.
    #[inline]
    pub fn starts_another(&self, fragment: &str) -> bool {
        self.is_complete() && fragment.trim_start().starts_with('{')
    }
}
