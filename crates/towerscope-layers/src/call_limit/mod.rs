//! Call limits: at most N model calls and M tool calls per reply, and optionally per session.
//!
//! [`CallLimitLayer`] serves `on_model_call` and `on_acting`. A call over a limit is refused
//! with [`AgentError::CallLimit`](towerscope_core::AgentError::CallLimit) and not counted:
//!
//! - on `on_model_call`, the agent ends the reply cleanly: `REPLY_END` with finished reason
//!   `error` and the error, then a final message carrying it;
//! - on `on_acting`, the refused call becomes an error tool result the model sees (and the
//!   model can answer without the tool).
//!
//! Per-reply counts live in the reply's [`AgentContext`](towerscope_core::AgentContext)
//! extensions, shared by every clone of the context in that reply, so nothing needs cleaning up
//! when the reply ends. (A parked reply that resumes gets a new context, so its per-reply counts
//! start again.) Per-session counts live in a map shared by the clones of the layer
//! ([`SessionCounts`]), keyed by session id.
//!
//! # Order
//!
//! Installed outside retry and fallback, one logical call counts once whatever the attempts;
//! installed inside, every attempt counts.
//!
//! A call counts when it is made, whatever becomes of it below: one cancelled while it waits
//! in a rate limit's queue, or refused by a layer inside, counts as one that reached the model
//! (the check and the count are one step, so that concurrent calls cannot pass a limit
//! together). Install the call limit inside the rate limit to count only the calls that got
//! through it.
//!
//! [`SessionCounts`] keeps one entry per session until [`SessionCounts::reset`] or
//! [`SessionCounts::clear`] is called: a server with many sessions clears a session's counts
//! when it ends.
//!
//! # Example
//!
//! ```
//! use towerscope_agent::Agent;
//! use towerscope_core::{Msg, ReplyFinishedReason};
//! use towerscope_layers::CallLimitLayer;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let model = ScriptedModel::new("scripted", [
//!     ScriptedResponse::tool_call("c1", "missing_tool", "{}"),
//!     ScriptedResponse::text("never reached"),
//! ]);
//! let limits = CallLimitLayer::new().model_calls_per_reply(1);
//! let agent = Agent::builder("assistant").model(model).on_model_call(limits).build()?;
//! let answer = agent.reply(Msg::user("user", "Go")).await?;
//! assert_eq!(answer.finished_reason, Some(ReplyFinishedReason::Error));
//! assert!(answer.text_content().unwrap().contains("model calls limit of 1 reached for this reply"));
//! # Ok(()) }
//! ```

mod counts;
mod future;
mod layer;
mod service;

pub use counts::{CallCounts, SessionCounts};
pub use future::ResponseFuture;
pub use layer::CallLimitLayer;
pub use service::{CallLimit, CountedRequest};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tower::{Service, ServiceBuilder, ServiceExt};
    use towerscope_core::{AgentContext, AgentError, LimitKind};
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    use super::*;
    use crate::testing::{model_service, request_in};

    fn model() -> ScriptedModel {
        ScriptedModel::cycle("m", [ScriptedResponse::text("ok").whole()])
    }

    #[tokio::test]
    async fn per_reply_limit_counts_each_reply_separately() {
        let layer = CallLimitLayer::new().model_calls_per_reply(2);
        let mut svc = ServiceBuilder::new().layer(layer.clone()).service(model_service());
        let m = model();
        let reply1 = AgentContext::new("a", "s", "r1");
        for iteration in 0..2 {
            let req = request_in(&m, reply1.with_iteration(iteration));
            svc.ready().await.unwrap().call(req).await.unwrap();
        }
        let err = svc
            .ready()
            .await
            .unwrap()
            .call(request_in(&m, reply1.with_iteration(2)))
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            AgentError::CallLimit {
                kind: LimitKind::ModelCalls,
                limit: 2,
                scope: "reply"
            }
        ));
        assert_eq!(m.calls(), 2, "the refused call never reached the model");
        assert_eq!(
            layer.reply_counts(&reply1).model_calls,
            2,
            "a refused call is not counted"
        );

        // Another reply starts from zero.
        let reply2 = AgentContext::new("a", "s", "r2");
        svc.ready()
            .await
            .unwrap()
            .call(request_in(&m, reply2.clone()))
            .await
            .unwrap();
        assert_eq!(layer.reply_counts(&reply2).model_calls, 1);
    }

    #[tokio::test]
    async fn per_session_limit_spans_replies_and_clones() {
        let layer = CallLimitLayer::new().model_calls_per_session(3);
        let m = model();
        let svc = ServiceBuilder::new().layer(layer.clone()).service(model_service());
        let other = ServiceBuilder::new().layer(layer.clone()).service(model_service());
        for (i, s) in [&svc, &other, &svc].into_iter().enumerate() {
            let ctx = AgentContext::new("a", "s1", format!("r{i}"));
            s.clone().oneshot(request_in(&m, ctx)).await.unwrap();
        }
        let err = other
            .clone()
            .oneshot(request_in(&m, AgentContext::new("a", "s1", "r9")))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("model calls limit of 3 reached for this session"),
            "{err}"
        );
        // Other sessions are not affected, and a reset session starts again.
        svc.clone()
            .oneshot(request_in(&m, AgentContext::new("a", "s2", "r")))
            .await
            .unwrap();
        assert_eq!(layer.session_counts().get("s1").model_calls, 3);
        assert_eq!(layer.session_counts().get("s2").model_calls, 1);
        layer.session_counts().reset("s1");
        svc.oneshot(request_in(&m, AgentContext::new("a", "s1", "r10")))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn separate_layers_count_separately_and_kinds_do_not_mix() {
        let a = CallLimitLayer::new().model_calls_per_reply(1).tool_calls_per_reply(5);
        let b = CallLimitLayer::new().model_calls_per_reply(1);
        let m = model();
        let ctx = AgentContext::new("a", "s", "r");
        let svc_a = ServiceBuilder::new().layer(a.clone()).service(model_service());
        let svc_b = ServiceBuilder::new().layer(b.clone()).service(model_service());
        svc_a.oneshot(request_in(&m, ctx.clone())).await.unwrap();
        svc_b.oneshot(request_in(&m, ctx.clone())).await.unwrap();
        assert_eq!(
            a.reply_counts(&ctx),
            CallCounts {
                model_calls: 1,
                tool_calls: 0
            }
        );
        assert_eq!(b.reply_counts(&ctx).model_calls, 1);
    }
}
