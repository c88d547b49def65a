//! [`RunStream`]: one run's server-sent events, from the reply's first item to `RUN_FINISHED`.
//!
//! A client that goes away drops the stream: the reply is then interrupted (the agent closes
//! what is open and keeps what was streamed, see `Agent::interrupt`) and read to its end by a
//! task of its own, so its session is saved as usual; the thread stays busy until then.
//!
//! While the reply sends nothing (a long model call, a slow tool), a `: keep-alive` comment goes
//! out every keep-alive period, so that proxies do not close an idle connection; SSE clients
//! ignore comments.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use futures_core::Stream;
use futures_util::StreamExt;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use towerscope_agent::{Agent, ReplyStream};
use towerscope_core::{AgentError, ReplyItem};

use super::event::AguiEvent;
use super::mapping::EventMapper;
use crate::busy::BusyClaim;

/// The body of an AG-UI response.
pub(crate) struct RunStream {
    agent: Agent,
    reply: Option<ReplyStream>,
    claim: Option<BusyClaim>,
    mapper: EventMapper,
    first: Option<Result<ReplyItem, AgentError>>,
    queue: VecDeque<AguiEvent>,
    /// `RUN_ERROR` was sent: the rest of the reply (its session's save) is read, not sent.
    failed: bool,
    /// The reply went on after its error and was interrupted.
    stopped: bool,
    done: bool,
    keep_alive: Option<Interval>,
}

impl RunStream {
    /// The stream of a reply whose first item was already read (to answer with a status when
    /// it is an error).
    pub(crate) fn new(
        agent: Agent,
        reply: ReplyStream,
        claim: BusyClaim,
        mapper: EventMapper,
        first: Option<Result<ReplyItem, AgentError>>,
        keep_alive: Option<Duration>,
    ) -> Self {
        let mut queue = VecDeque::new();
        queue.push_back(mapper.start());
        let keep_alive = keep_alive.filter(|p| !p.is_zero()).map(|period| {
            let mut interval = tokio::time::interval_at(Instant::now() + period, period);
            interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
            interval
        });
        Self {
            agent,
            reply: Some(reply),
            claim: Some(claim),
            mapper,
            first,
            queue,
            failed: false,
            stopped: false,
            done: false,
            keep_alive,
        }
    }

    /// Maps one reply item; `None` is the reply's end. After an error the reply is still read
    /// to its end (and interrupted if it goes on): its session is saved then, and the thread
    /// must stay claimed until it is (a run sent at once after the error loads what this one
    /// saved).
    fn take(&mut self, item: Option<Result<ReplyItem, AgentError>>) {
        let mut out = Vec::new();
        match item {
            Some(item) if self.failed => {
                // The reply goes on after its error (a layer's stream): nothing more is sent, so
                // stop it; only its session's save is waited for. Still running, the reply is
                // the one the agent is busy with: the interrupt reaches no other.
                if !std::mem::replace(&mut self.stopped, true) {
                    self.agent.interrupt();
                }
                if let Err(err) = item {
                    tracing::warn!(error = %err, kind = err.kind(), "an AG-UI run failed again after RUN_ERROR");
                }
            }
            Some(Ok(ReplyItem::Event(event))) => self.mapper.map(&event, &mut out),
            // A reply that parked ended without its `REPLY_END`: what it waits for is read from
            // the agent, whatever the final message (a layer may have replaced it).
            Some(Ok(ReplyItem::Final(_))) => self.mapper.settle(|| self.agent.waiting_calls()),
            Some(Err(err)) => {
                out.push(self.mapper.fail(&err));
                self.failed = true;
            }
            None => {
                if !self.failed {
                    out.push(self.mapper.finish());
                }
                self.end();
            }
        }
        self.queue.extend(out);
    }

    /// The frames of a run sent whole (a replay).
    pub(crate) fn frames(events: &[AguiEvent]) -> Bytes {
        let mut out = Vec::new();
        for event in events {
            out.extend_from_slice(&frame(event));
        }
        Bytes::from(out)
    }

    fn end(&mut self) {
        self.done = true;
        self.reply = None;
        self.claim = None;
    }
}

/// `data: <json>\n\n`.
fn frame(event: &AguiEvent) -> Bytes {
    let json = serde_json::to_string(event).unwrap_or_else(|_| {
        r#"{"type":"RUN_ERROR","message":"an event could not be encoded","code":"encode_error"}"#.to_owned()
    });
    Bytes::from(format!("data: {json}\n\n"))
}

impl Stream for RunStream {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(event) = this.queue.pop_front() {
                if let Some(keep_alive) = this.keep_alive.as_mut() {
                    keep_alive.reset();
                }
                return Poll::Ready(Some(Ok(frame(&event))));
            }
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(first) = this.first.take() {
                this.take(Some(first));
                continue;
            }
            let Some(reply) = this.reply.as_mut() else {
                return Poll::Ready(None);
            };
            match reply.poll_next_unpin(cx) {
                Poll::Pending => {
                    let idle = this.keep_alive.as_mut().is_some_and(|k| k.poll_tick(cx).is_ready());
                    return if idle {
                        Poll::Ready(Some(Ok(Bytes::from_static(b": keep-alive\n\n"))))
                    } else {
                        Poll::Pending
                    };
                }
                Poll::Ready(item) => this.take(item),
            }
        }
    }
}

/// A reply whose first item is being read, before a [`RunStream`] takes it over: a client that
/// goes away then drops the handler, and with it this guard, which stops the reply and reads it
/// to its end (its session's save) before the thread is free again, as the body does.
pub(crate) struct Opening {
    parts: Option<(Agent, ReplyStream, BusyClaim)>,
}

impl Opening {
    pub(crate) fn new(agent: Agent, reply: ReplyStream, claim: BusyClaim) -> Self {
        Self {
            parts: Some((agent, reply, claim)),
        }
    }

    /// The reply's next item.
    pub(crate) async fn next(&mut self) -> Option<Result<ReplyItem, AgentError>> {
        match self.parts.as_mut() {
            Some((_, reply, _)) => reply.next().await,
            None => None,
        }
    }

    /// The agent, its reply and the thread's claim, for the body.
    pub(crate) fn into_parts(mut self) -> Option<(Agent, ReplyStream, BusyClaim)> {
        self.parts.take()
    }

    /// After the reply's first item was an error: reads the rest (its session's save) on a task
    /// of its own, which a client going away meanwhile does not cancel, and waits for it.
    pub(crate) async fn drain(mut self) {
        if let Some((agent, reply, claim)) = self.parts.take() {
            let _ = tokio::spawn(read_to_end(agent, reply, claim, false)).await;
        }
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        if let Some((agent, reply, claim)) = self.parts.take() {
            close_detached(agent, reply, claim);
        }
    }
}

/// The client went away in the middle of the run: stops the reply the agent's way (what was
/// streamed stays in its context) and reads it to its end on a task of its own, which frees
/// the thread after the session's save.
fn close_detached(agent: Agent, reply: ReplyStream, claim: BusyClaim) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(read_to_end(agent, reply, claim, true));
        }
        Err(_) => drop(reply),
    }
}

/// Reads a reply nobody will see to its end, then frees its thread. `stop`: interrupt it at
/// once (its client went away); otherwise (it failed) as soon as it goes on after its error.
async fn read_to_end(agent: Agent, mut reply: ReplyStream, claim: BusyClaim, stop: bool) {
    let mut stopped = stop;
    if stop {
        agent.interrupt();
    }
    while let Some(item) = reply.next().await {
        if !std::mem::replace(&mut stopped, true) {
            agent.interrupt();
        }
        if let Err(err) = item {
            tracing::warn!(error = %err, kind = err.kind(), "an AG-UI run nobody reads failed");
        }
    }
    drop(claim);
}

impl Drop for RunStream {
    fn drop(&mut self) {
        if let (Some(reply), Some(claim)) = (self.reply.take(), self.claim.take()) {
            close_detached(self.agent.clone(), reply, claim);
        }
    }
}
