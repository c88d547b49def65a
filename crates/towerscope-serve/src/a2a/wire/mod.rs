//! The A2A v1.0 data model as JSON: the shapes the protocol's ProtoJSON encoding gives them
//! (camelCase fields, `TASK_STATE_*` and `ROLE_*` enum names, a part's content as one of `text`,
//! `raw`, `url`, `data`).
//!
//! Unknown fields are ignored on input, as the official SDK does; enum names also accept the
//! lower-case spelling of protocol 0.3 (`"user"`, `"input-required"`) so that a hand-written
//! request is forgiven, and are always written as v1.0 names.
//!
//! # Example
//!
//! ```
//! use towerscope_serve::a2a::wire::{Message, Part, Role, TaskState};
//!
//! let msg: Message = serde_json::from_str(
//!     r#"{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Hello"}]}"#,
//! )?;
//! assert_eq!(msg.role, Role::User);
//! assert_eq!(msg.text(), "Hello");
//! assert_eq!(serde_json::to_value(TaskState::InputRequired)?, "TASK_STATE_INPUT_REQUIRED");
//! assert_eq!(serde_json::to_value(Part::text("hi"))?, serde_json::json!({"text": "hi"}));
//! # Ok::<(), serde_json::Error>(())
//! ```

mod card;
mod message;
mod request;
mod task;

pub use card::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, HttpAuthSecurityScheme, SecurityRequirement,
    SecurityScheme, StringList,
};
pub(crate) use message::FileError;
pub use message::{Message, Part, Role};
pub use request::{CancelTaskRequest, GetTaskRequest, SendMessageConfiguration, SendMessageRequest};
pub use task::{
    Artifact, SendMessageResponse, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};

/// The protocol version this crate speaks, as the `A2A-Version` header and the card say it.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The current time as an RFC 3339 timestamp (what ProtoJSON writes for a `Timestamp`).
pub(crate) fn now_rfc3339() -> String {
    format!("{}Z", towerscope_core::Timestamp::now())
}
