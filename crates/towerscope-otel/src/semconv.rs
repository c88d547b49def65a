//! The attribute, metric and value names this crate records, as constants.
//!
//! They follow the OpenTelemetry **GenAI semantic conventions as of semantic-conventions
//! v1.41.1** (`docs/gen-ai/gen-ai-spans.md`, `gen-ai-agent-spans.md`, `gen-ai-metrics.md` and
//! `docs/registry/attributes/gen-ai.md` at that tag), the last release before the GenAI
//! conventions moved to their own repository. Every GenAI name there has the status
//! *Development*. The `opentelemetry-semantic-conventions` crate still ships these names, but only
//! behind its experimental feature and marked `#[deprecated]`, so this crate keeps its own copy,
//! pinned to the version above.
//!
//! Names of the `agentscope.*` namespace are not conventions: they are the reference
//! implementation's (AgentScope 2.x) own attributes for human-in-the-loop state, kept so that
//! dashboards built for it keep working.
//!
//! # Example
//!
//! ```
//! use towerscope_otel::semconv;
//!
//! assert_eq!(semconv::GEN_AI_OPERATION_NAME, "gen_ai.operation.name");
//! assert_eq!(semconv::SEMCONV_VERSION, "1.41.1");
//! ```

/// The version of the semantic conventions these names are taken from.
pub const SEMCONV_VERSION: &str = "1.41.1";

/// The schema URL of [`SEMCONV_VERSION`], recorded on the instrumentation scope.
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.1";

// --- operation -----------------------------------------------------------------------------

/// `gen_ai.operation.name`: `invoke_agent`, `chat` or `execute_tool`.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// The `invoke_agent` operation (span `invoke_agent {agent}`).
pub const OPERATION_INVOKE_AGENT: &str = "invoke_agent";
/// The `chat` operation (span `chat {model}`).
pub const OPERATION_CHAT: &str = "chat";
/// The `execute_tool` operation (span `execute_tool {tool}`).
pub const OPERATION_EXECUTE_TOOL: &str = "execute_tool";

/// `gen_ai.provider.name`: the model provider (`openai`, `anthropic`, ...).
pub const GEN_AI_PROVIDER_NAME: &str = "gen_ai.provider.name";
/// `gen_ai.conversation.id`: the session id.
pub const GEN_AI_CONVERSATION_ID: &str = "gen_ai.conversation.id";
/// `error.type`: a low-cardinality name of the error (`AgentError::kind`).
pub const ERROR_TYPE: &str = "error.type";
/// `server.address`: the provider's host.
pub const SERVER_ADDRESS: &str = "server.address";
/// `server.port`: the provider's port, beside [`SERVER_ADDRESS`].
pub const SERVER_PORT: &str = "server.port";

// --- agent ---------------------------------------------------------------------------------

/// `gen_ai.agent.name`.
pub const GEN_AI_AGENT_NAME: &str = "gen_ai.agent.name";
/// `gen_ai.agent.description`.
pub const GEN_AI_AGENT_DESCRIPTION: &str = "gen_ai.agent.description";

// --- request -------------------------------------------------------------------------------

/// `gen_ai.request.model`.
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
/// `gen_ai.request.temperature` (double).
pub const GEN_AI_REQUEST_TEMPERATURE: &str = "gen_ai.request.temperature";
/// `gen_ai.request.top_p` (double).
pub const GEN_AI_REQUEST_TOP_P: &str = "gen_ai.request.top_p";
/// `gen_ai.request.top_k` (double in the conventions; recorded as an int, as it is one).
pub const GEN_AI_REQUEST_TOP_K: &str = "gen_ai.request.top_k";
/// `gen_ai.request.max_tokens` (int).
pub const GEN_AI_REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
/// `gen_ai.request.presence_penalty` (double).
pub const GEN_AI_REQUEST_PRESENCE_PENALTY: &str = "gen_ai.request.presence_penalty";
/// `gen_ai.request.frequency_penalty` (double).
pub const GEN_AI_REQUEST_FREQUENCY_PENALTY: &str = "gen_ai.request.frequency_penalty";
/// `gen_ai.request.stop_sequences` (string array).
pub const GEN_AI_REQUEST_STOP_SEQUENCES: &str = "gen_ai.request.stop_sequences";
/// `gen_ai.request.seed` (int).
pub const GEN_AI_REQUEST_SEED: &str = "gen_ai.request.seed";
/// `gen_ai.request.stream` (bool): whether the model answered with a stream.
pub const GEN_AI_REQUEST_STREAM: &str = "gen_ai.request.stream";

// --- response ------------------------------------------------------------------------------

/// `gen_ai.response.id`.
pub const GEN_AI_RESPONSE_ID: &str = "gen_ai.response.id";
/// `gen_ai.response.model`: the model that answered, when the provider says.
pub const GEN_AI_RESPONSE_MODEL: &str = "gen_ai.response.model";
/// `gen_ai.response.finish_reasons` (string array).
pub const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// `gen_ai.response.time_to_first_chunk` (double, seconds; streams only).
pub const GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: &str = "gen_ai.response.time_to_first_chunk";

// --- usage ---------------------------------------------------------------------------------

/// `gen_ai.usage.input_tokens` (int).
pub const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// `gen_ai.usage.output_tokens` (int).
pub const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// `gen_ai.usage.cache_read.input_tokens` (int; only when > 0).
pub const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
/// `gen_ai.usage.cache_creation.input_tokens` (int; only when > 0).
pub const GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";

// --- content (opt-in) ----------------------------------------------------------------------

/// `gen_ai.input.messages` (JSON string; content capture only).
pub const GEN_AI_INPUT_MESSAGES: &str = "gen_ai.input.messages";
/// `gen_ai.output.messages` (JSON string; content capture only).
pub const GEN_AI_OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
/// `gen_ai.system_instructions` (JSON string; content capture only).
pub const GEN_AI_SYSTEM_INSTRUCTIONS: &str = "gen_ai.system_instructions";
/// `gen_ai.tool.definitions` (JSON string; content capture only).
pub const GEN_AI_TOOL_DEFINITIONS: &str = "gen_ai.tool.definitions";

// --- tools ---------------------------------------------------------------------------------

/// `gen_ai.tool.name`.
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.tool.call.id`.
pub const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `gen_ai.tool.description`.
pub const GEN_AI_TOOL_DESCRIPTION: &str = "gen_ai.tool.description";
/// `gen_ai.tool.type`: always [`TOOL_TYPE_FUNCTION`] here.
pub const GEN_AI_TOOL_TYPE: &str = "gen_ai.tool.type";
/// The `function` tool type: a tool the application executes.
pub const TOOL_TYPE_FUNCTION: &str = "function";
/// `gen_ai.tool.call.arguments` (content capture only).
pub const GEN_AI_TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
/// `gen_ai.tool.call.result` (content capture only).
pub const GEN_AI_TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";

// --- reference (agentscope.*) --------------------------------------------------------------

/// `agentscope.agent.reply_id`: the same on the first call and on the resume of a parked reply.
pub const AGENTSCOPE_REPLY_ID: &str = "agentscope.agent.reply_id";
/// `agentscope.agent.hitl_pending_tools`: JSON array of the tools waiting for confirmation.
pub const AGENTSCOPE_HITL_PENDING_TOOLS: &str = "agentscope.agent.hitl_pending_tools";
/// `agentscope.agent.external_execution_pending_tools`: JSON array of the tools waiting for an
/// external executor.
pub const AGENTSCOPE_EXTERNAL_PENDING_TOOLS: &str = "agentscope.agent.external_execution_pending_tools";
/// `agentscope.agent.incoming_event_type`: `user_confirm_result` or `external_execution_result`
/// on the resume of a parked reply.
pub const AGENTSCOPE_INCOMING_EVENT_TYPE: &str = "agentscope.agent.incoming_event_type";
/// `agentscope.agent.is_external_execution` (bool): on the zero-length `execute_tool` span of an
/// external execution result.
pub const AGENTSCOPE_IS_EXTERNAL_EXECUTION: &str = "agentscope.agent.is_external_execution";

// --- exceptions ----------------------------------------------------------------------------

/// The name of the span event recording an error.
pub const EXCEPTION_EVENT: &str = "exception";
/// `exception.type` on the exception event (`AgentError::kind`).
pub const EXCEPTION_TYPE: &str = "exception.type";
/// `exception.message` on the exception event.
pub const EXCEPTION_MESSAGE: &str = "exception.message";

// --- metrics -------------------------------------------------------------------------------

/// `gen_ai.client.token.usage`: histogram of tokens per call, split by [`GEN_AI_TOKEN_TYPE`].
pub const METRIC_TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// `gen_ai.client.operation.duration`: histogram of call durations, in seconds.
pub const METRIC_OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
/// `gen_ai.client.operation.time_to_first_chunk`: histogram of the time to a stream's first
/// chunk, in seconds.
pub const METRIC_TIME_TO_FIRST_CHUNK: &str = "gen_ai.client.operation.time_to_first_chunk";
/// `gen_ai.token.type`: `input` or `output` on [`METRIC_TOKEN_USAGE`].
pub const GEN_AI_TOKEN_TYPE: &str = "gen_ai.token.type";
/// The `input` token type.
pub const TOKEN_TYPE_INPUT: &str = "input";
/// The `output` token type.
pub const TOKEN_TYPE_OUTPUT: &str = "output";

/// The bucket boundaries the conventions advise for [`METRIC_OPERATION_DURATION`] and
/// [`METRIC_TIME_TO_FIRST_CHUNK`] (seconds).
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The bucket boundaries the conventions advise for [`METRIC_TOKEN_USAGE`].
pub const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
    67108864.0,
];

// --- environment ---------------------------------------------------------------------------

/// The environment variable that switches content capture on (`true`, `SPAN_ONLY`,
/// `SPAN_AND_EVENT`) or off (`false`, `NO_CONTENT`, `EVENT_ONLY`); the builder setting wins.
pub const ENV_CAPTURE_CONTENT: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
