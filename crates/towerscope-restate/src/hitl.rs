//! A parked reply: the request it waits on, where that request is published, and the answers
//! that resume it.
//!
//! When a reply asks for a person's confirmation (`REQUIRE_USER_CONFIRM`) or for tools to run
//! outside the agent (`REQUIRE_EXTERNAL_EXECUTION`), the handler creates a Restate awakeable
//! (a durable promise), stores a [`PendingInput`] with its id in the object's state (read by
//! the shared `pending` handler), and waits. The wait survives restarts of the endpoint and of
//! the server. Any process answers by resolving the awakeable: Restate's SDK from a handler,
//! or a plain HTTP call to the ingress:
//!
//! ```text
//! curl -X POST $INGRESS/restate/awakeables/$ID/resolve -H 'content-type: application/json' \
//!      -d '{"confirmed": true}'
//! ```
//!
//! Rejecting the awakeable (`.../reject`) interrupts the reply, as a person's Ctrl-C would.
//!
//! # Example
//!
//! ```
//! use towerscope_core::{AgentEvent, Id, RequireUserConfirmEvent, ReplyInput, ToolCallBlock};
//! use towerscope_restate::hitl::PendingInput;
//!
//! let call = ToolCallBlock::new("c1", "refund", r#"{"order": 7}"#);
//! let pending = PendingInput::new("sign_1abc".into(), RequireUserConfirmEvent::new(Id::new(), vec![call]).into());
//! let input = pending.answer(serde_json::json!({"confirmed": true})).unwrap();
//! assert!(matches!(input, ReplyInput::Confirm(event) if event.confirm_results[0].confirmed));
//! assert!(pending.answer(serde_json::json!({"yes": 1})).is_err());
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;
use towerscope_core::event::{ConfirmResult, ExternalExecutionResultEvent, UserConfirmResultEvent};
use towerscope_core::{AgentEvent, Id, ReplyInput};

use crate::error::DurableError;

/// What a parked reply waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingInput {
    /// The awakeable to resolve with the answer.
    pub awakeable_id: String,
    /// The request: a `REQUIRE_USER_CONFIRM` or `REQUIRE_EXTERNAL_EXECUTION` event.
    pub request: AgentEvent,
}

impl PendingInput {
    /// A pending `request`, answered through the awakeable `awakeable_id`.
    pub fn new(awakeable_id: String, request: AgentEvent) -> Self {
        Self { awakeable_id, request }
    }

    /// Whether `event` parks a reply.
    pub fn parks(event: &AgentEvent) -> bool {
        matches!(
            event,
            AgentEvent::RequireUserConfirm(_) | AgentEvent::RequireExternalExecution(_)
        )
    }

    /// The reply input an answer stands for.
    ///
    /// A confirmation takes `{"confirmed": true}` (every call) or a `USER_CONFIRM_RESULT`
    /// event's fields (`confirm_results`, one per call); an external execution takes an
    /// `EXTERNAL_EXECUTION_RESULT` event's fields (`execution_results`, one tool result block
    /// per call).
    pub fn answer(&self, answer: Value) -> Result<ReplyInput, DurableError> {
        match &self.request {
            AgentEvent::RequireUserConfirm(request) => {
                let bad = |detail: String| DurableError::BadAnswer {
                    kind: "confirmation",
                    detail,
                };
                if let Some(confirmed) = answer.get("confirmed").and_then(Value::as_bool) {
                    let results = request
                        .tool_calls
                        .iter()
                        .map(|call| ConfirmResult::new(confirmed, call.clone()))
                        .collect();
                    return Ok(UserConfirmResultEvent::new(request.reply_id.clone(), results).into());
                }
                if answer.get("confirm_results").is_none() {
                    return Err(bad(
                        "expected {\"confirmed\": true|false} or {\"confirm_results\": [...]}".to_owned(),
                    ));
                }
                // The reply's id is the parked one's, whatever the answer says.
                let answer = with_reply_id(answer, &request.reply_id);
                let event: UserConfirmResultEvent = serde_json::from_value(answer).map_err(|e| bad(shape_of(&e)))?;
                Ok(event.into())
            }
            AgentEvent::RequireExternalExecution(request) => {
                let bad = |detail: String| DurableError::BadAnswer {
                    kind: "external execution",
                    detail,
                };
                if answer.get("execution_results").is_none() {
                    return Err(bad("expected {\"execution_results\": [tool result blocks]}".to_owned()));
                }
                let answer = with_reply_id(answer, &request.reply_id);
                let event: ExternalExecutionResultEvent =
                    serde_json::from_value(answer).map_err(|e| bad(shape_of(&e)))?;
                Ok(event.into())
            }
            other => Err(DurableError::BadAnswer {
                kind: "request",
                detail: format!("{} does not park a reply", other.event_type().as_str()),
            }),
        }
    }
}

/// What was wrong with an answer's shape, without what it held: the parse error with every
/// quoted value (serde writes them with their quotes escaped) written `…`, and everything from
/// the first backquote on (serde writes field and variant names, which the answer chose, with
/// nothing escaped) cut to `…`. The error is logged, and content stays out of logs.
pub(crate) fn shape_of(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '\\') => {
                chars.next();
            }
            (true, '"') => {
                out.push_str("…\"");
                quoted = false;
            }
            (true, _) => {}
            (false, '`') => {
                out.push('…');
                return out;
            }
            (false, '"') => {
                out.push('"');
                quoted = true;
            }
            (false, c) => out.push(c),
        }
    }
    if quoted {
        out.push('…');
    }
    out
}

/// The answer with the parked reply's id: an answer answers the reply it was asked by, whatever
/// id it carries.
fn with_reply_id(mut answer: Value, reply_id: &Id) -> Value {
    if let Some(fields) = answer.as_object_mut() {
        fields.insert("reply_id".to_owned(), Value::String(reply_id.to_string()));
    }
    answer
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;
    use towerscope_core::{RequireExternalExecutionEvent, ToolCallBlock};

    use super::*;

    /// A confirmation per call (`confirm_results`, as the crate's error text suggests), with no
    /// reply id or one naming another reply: it answers the parked reply.
    #[test]
    fn a_confirmation_per_call_resumes_the_parked_reply() {
        use towerscope_core::RequireUserConfirmEvent;

        let parked = Id::new();
        let call = ToolCallBlock::new("c1", "refund", r#"{"order": 7}"#);
        let pending = PendingInput::new(
            String::new(),
            RequireUserConfirmEvent::new(parked.clone(), vec![call]).into(),
        );
        let result = json!({"confirmed": false, "tool_call": {"type": "tool_call", "id": "c1", "name": "refund", "input": "{}"}});
        for answer in [
            json!({"confirm_results": [result]}),
            json!({"reply_id": "another", "confirm_results": [result]}),
        ] {
            match pending.answer(answer) {
                Ok(ReplyInput::Confirm(event)) => {
                    assert_eq!(event.reply_id, parked);
                    assert!(!event.confirm_results[0].confirmed);
                    assert_eq!(event.confirm_results[0].tool_call.id, "c1");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn an_external_result_resumes_the_reply_and_a_wrong_one_is_a_typed_error() {
        let call = ToolCallBlock::new("call_0", "lookup", "{}");
        let pending = PendingInput::new(
            String::new(),
            RequireExternalExecutionEvent::new(Id::new(), vec![call]).into(),
        );
        let answer = json!({"execution_results": [{
            "type": "tool_result", "id": "call_0", "name": "lookup", "state": "success",
            "output": [{"type": "text", "text": "42 in stock"}],
        }]});
        match pending.answer(answer) {
            Ok(ReplyInput::External(event)) => assert_eq!(event.execution_results[0].name, "lookup"),
            other => panic!("{other:?}"),
        }
        // What the answer held stays out of the error, which is logged.
        let err = pending
            .answer(json!({"execution_results": "balance is $5,000"}))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "not an answer to the pending external execution: invalid type: string \"…\", expected a sequence"
        );
        // An escaped quote does not end the hidden part, and a field name is not shown.
        let err = pending
            .answer(json!({"execution_results": "ok\" acct 1234-5678"}))
            .unwrap_err();
        assert!(!err.to_string().contains("1234"), "{err}");
        let err = pending
            .answer(json!({"execution_results": [{
                "type": "tool_result", "id": "x", "name": "n", "state": "weird`secret", "output": [],
            }]}))
            .unwrap_err();
        assert!(err.to_string().contains("unknown variant …"), "{err}");
        assert!(!err.to_string().contains("secret"), "{err}");
        let err = pending.answer(json!({"results": "42"})).unwrap_err();
        assert!(
            matches!(
                err,
                DurableError::BadAnswer {
                    kind: "external execution",
                    ..
                }
            ),
            "{err}"
        );
    }
}
