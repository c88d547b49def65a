//! [`Config`]: what the three layers of one [`TracingMiddleware`](crate::TracingMiddleware)
//! share. It lies below the middleware and its layers, so each of them imports it and none
//! imports another to get it.

use std::sync::Arc;

use crate::content::ToolDefinitions;
use crate::provider::Source;

/// What the three layers of one middleware share.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) source: Source,
    pub(crate) capture_content: bool,
    pub(crate) agent_description: Arc<str>,
    /// The last `gen_ai.tool.definitions` written (content capture only).
    pub(crate) tool_definitions: ToolDefinitions,
}
