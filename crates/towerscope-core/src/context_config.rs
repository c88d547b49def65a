//! [`ContextConfig`]: when and how an agent compresses its context, as the reference's
//! `ContextConfig` (trigger and reserve ratios of the model's context size, the compression
//! prompt, the summary's template and schema, the tool-result limit, the fall back to
//! truncation, the `CompressContext` tool).
//!
//! It travels in the `on_compress_context` request ([`CompressRequest::config`]), so a layer
//! can read or change it before the agent's compressor sees it.
//!
//! [`CompressRequest::config`]: crate::CompressRequest::config
//!
//! # Example
//!
//! ```
//! use towerscope_core::ContextConfig;
//!
//! let config = ContextConfig::new().trigger_ratio(0.7).reserve_ratio(0.2).tool_result_limit(8_000);
//! assert!(config.validate().is_ok());
//! assert_eq!(config.trigger_tokens(100_000), 70_000);
//! assert!(ContextConfig::new().trigger_ratio(0.95).validate().is_err());
//! assert!(config.summary_template.contains("{task_overview}"));
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The reference's compression prompt; `{current_time}` becomes the time of the compression.
pub const DEFAULT_COMPRESSION_PROMPT: &str = "<system-hint>You have been working on the task described above. Now write a continuation summary that will allow you to resume work efficiently in a future context window where the conversation history will be replaced with this summary. Your summary should be structured, concise, and actionable.\nThe current time is {current_time}.\nThis summary may itself be summarized again later, and the conversation history it refers to will be gone, so every reference must be self-contained \u{2014} resolve anything that depends on the vanished context into an absolute, fully-qualified form:\n- Time: convert relative expressions ('today', 'now', 'yesterday', 'tomorrow', 'recently') to absolute dates using the current time above; re-anchor them even if an earlier summary already wrote them relatively.\n- Names & pointers: use file paths, symbol names, PR/issue numbers, IDs, URLs, and exact commands/error strings verbatim instead of 'this file', 'the above', 'the second approach', 'the 5 failing tests'.\n- In-flight work: record everything still pending, especially tools launched in the background whose results you are still waiting on \u{2014} give each one's id and a short note of what it is doing \u{2014} and mark each item's owner (user request vs your own decision) and status (done / pending / blocked).\n</system-hint>";

/// The reference's summary template: each `{field}` of the summary schema is replaced by the
/// model's value.
pub const DEFAULT_SUMMARY_TEMPLATE: &str = "<system-info>Here is a summary of your previous work\n# Task Overview\n{task_overview}\n\n# Current State\n{current_state}\n\n# Important Discoveries\n{important_discoveries}\n\n# Next Steps\n{next_steps}\n\n# Context to Preserve\n{context_to_preserve}</system-info>";

/// The summary kept when summarising fails and the context is truncated instead (and no earlier
/// summary exists).
pub const TRUNCATION_NOTICE: &str =
    "<system-info>Some earlier messages were truncated for limited context.</system-info>";

/// The reference's summary schema (`SummarySchema`), without titles.
pub fn default_summary_schema() -> Value {
    let field = |description: &str| json!({"type": "string", "description": description});
    json!({
        "type": "object",
        "description": "The compressed memory model, used to generate summary of old memories",
        "properties": {
            "task_overview": field("The user's core request and success criteria.\nAny clarifications or constraints they specified"),
            "current_state": field("What has been completed so far.\nFile created, modified, or analyzed (with paths if relevant).\nKey outputs or artifacts produced."),
            "important_discoveries": field("Technical constraints or requirements uncovered.\nDecisions made and their rationale.\nErrors encountered and how they were resolved.\nWhat approaches were tried that didn't work (and why)"),
            "next_steps": field("Specific actions needed to complete the task.\nAny blockers or open questions to resolve.\nPriority order if multiple steps remain"),
            "context_to_preserve": field("User preferences or style requirements.\nDomain-specific details that aren't obvious.\nAny promises made to the user"),
        },
        "required": ["task_overview", "current_state", "important_discoveries", "next_steps", "context_to_preserve"],
    })
}

/// When and how the context is compressed (the reference's `ContextConfig`). See the
/// [module docs](self).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ContextConfig {
    /// Compress when the model input reaches this ratio of the context size (default 0.8, in
    /// `(0, 0.9]`).
    pub trigger_ratio: f64,
    /// Keep this ratio of the context size of the newest messages uncompressed (default 0.1,
    /// below `trigger_ratio`).
    pub reserve_ratio: f64,
    /// How far below the trigger the agent is told that a compression is near, and where the
    /// `CompressContext` tool compresses (default 0.2, below `trigger_ratio`).
    pub context_buffer_ratio: f64,
    /// The last user message of the summary request; `{current_time}` is replaced.
    pub compression_prompt: String,
    /// How the summary is shown to the model: `{field}` placeholders of the schema's fields.
    pub summary_template: String,
    /// The JSON schema of the summary the model writes (an object of the template's fields).
    pub summary_schema: Value,
    /// Tool results over this many tokens are truncated (default 50 000).
    pub tool_result_limit: u64,
    /// Truncate the oldest messages when the summary cannot be written (default `true`);
    /// `false` fails the round instead, keeping the context.
    pub fallback_to_truncation: bool,
    /// Offer the model the `CompressContext` tool (default `false`).
    pub compression_tool: bool,
    /// The context size in tokens; `None` (the default) uses the model's
    /// [`ChatModel::context_size`](crate::ChatModel::context_size).
    pub context_size: Option<u64>,
    /// The most images kept in the context (default 5): before each round the oldest ones past
    /// it are replaced by a reminder (offloaded first when the agent has an offloader).
    #[serde(default = "default_max_image_num")]
    pub max_image_num: usize,
}

fn default_max_image_num() -> usize {
    5
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self {
            trigger_ratio: 0.8,
            reserve_ratio: 0.1,
            context_buffer_ratio: 0.2,
            compression_prompt: DEFAULT_COMPRESSION_PROMPT.to_owned(),
            summary_template: DEFAULT_SUMMARY_TEMPLATE.to_owned(),
            summary_schema: default_summary_schema(),
            tool_result_limit: 50_000,
            fallback_to_truncation: true,
            compression_tool: false,
            context_size: None,
            max_image_num: default_max_image_num(),
        }
    }
}

impl ContextConfig {
    /// The reference's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the trigger ratio.
    #[must_use]
    pub fn trigger_ratio(mut self, ratio: f64) -> Self {
        self.trigger_ratio = ratio;
        self
    }

    /// Sets the reserve ratio.
    #[must_use]
    pub fn reserve_ratio(mut self, ratio: f64) -> Self {
        self.reserve_ratio = ratio;
        self
    }

    /// Sets the context buffer ratio.
    #[must_use]
    pub fn context_buffer_ratio(mut self, ratio: f64) -> Self {
        self.context_buffer_ratio = ratio;
        self
    }

    /// Sets the compression prompt.
    #[must_use]
    pub fn compression_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.compression_prompt = prompt.into();
        self
    }

    /// Sets the summary's template and schema together (the template's placeholders name the
    /// schema's fields).
    #[must_use]
    pub fn summary(mut self, template: impl Into<String>, schema: Value) -> Self {
        self.summary_template = template.into();
        self.summary_schema = schema;
        self
    }

    /// Sets the tool-result limit in tokens.
    #[must_use]
    pub fn tool_result_limit(mut self, tokens: u64) -> Self {
        self.tool_result_limit = tokens;
        self
    }

    /// Sets whether a failed summary falls back to truncation.
    #[must_use]
    pub fn fallback_to_truncation(mut self, fallback: bool) -> Self {
        self.fallback_to_truncation = fallback;
        self
    }

    /// Sets whether the model is offered the `CompressContext` tool.
    #[must_use]
    pub fn compression_tool(mut self, enabled: bool) -> Self {
        self.compression_tool = enabled;
        self
    }

    /// Sets the most images kept in the context.
    #[must_use]
    pub fn max_image_num(mut self, images: usize) -> Self {
        self.max_image_num = images;
        self
    }

    /// Overrides the model's context size.
    #[must_use]
    pub fn context_size(mut self, tokens: u64) -> Self {
        self.context_size = Some(tokens);
        self
    }

    /// The token count at which compression starts, for a model of `context_size` tokens.
    pub fn trigger_tokens(&self, context_size: u64) -> u64 {
        ratio_of(self.trigger_ratio, context_size)
    }

    /// The tokens of newest messages kept, for a model of `context_size` tokens.
    pub fn reserve_tokens(&self, context_size: u64) -> u64 {
        ratio_of(self.reserve_ratio, context_size)
    }

    /// The token count from which the agent is told a compression is near.
    pub fn buffer_tokens(&self, context_size: u64) -> u64 {
        ratio_of((self.trigger_ratio - self.context_buffer_ratio).max(0.0), context_size)
    }

    /// Checks the ratios as the reference does: `trigger_ratio` in `(0, 0.9]`, `reserve_ratio`
    /// in `(0, trigger_ratio)`, `context_buffer_ratio` in `[0, trigger_ratio)`, a positive
    /// tool-result limit, an object summary schema and a template naming at least one field.
    pub fn validate(&self) -> Result<(), String> {
        let t = self.trigger_ratio;
        if !(t > 0.0 && t <= 0.9) {
            return Err(format!("trigger_ratio must be in (0, 0.9], got {t}"));
        }
        let r = self.reserve_ratio;
        if !(r > 0.0 && r < t) {
            return Err(format!(
                "reserve_ratio must be greater than 0 and smaller than trigger_ratio ({t}), got {r}"
            ));
        }
        let b = self.context_buffer_ratio;
        if !(b >= 0.0 && b < t) {
            return Err(format!(
                "context_buffer_ratio must be at least 0 and smaller than trigger_ratio ({t}), got {b}"
            ));
        }
        if self.tool_result_limit == 0 {
            return Err("tool_result_limit must be greater than 0".to_owned());
        }
        if self.context_size == Some(0) {
            return Err("context_size must be greater than 0".to_owned());
        }
        let Some(properties) = self.summary_schema.get("properties").and_then(Value::as_object) else {
            return Err("summary_schema must be an object schema with properties".to_owned());
        };
        if !properties
            .keys()
            .any(|k| self.summary_template.contains(&format!("{{{k}}}")))
        {
            return Err("summary_template names none of the summary_schema's fields as {field}".to_owned());
        }
        Ok(())
    }
}

fn ratio_of(ratio: f64, tokens: u64) -> u64 {
    // Exact enough for any context size a model has (below 2^53 tokens).
    (ratio * tokens as f64) as u64
}
