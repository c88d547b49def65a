//! Acting: running the tool calls of one reasoning round, in the reference's batches.
//!
//! Consecutive concurrency-safe calls form a concurrent batch (unknown tools count as safe);
//! the others run one at a time. A sequential batch stops at the first call that waits for the
//! user or an external executor. Events of a concurrent batch come call by call as far as the
//! tools allow ([`drain`]): a fast tool's result arrives in one piece, slow tools interleave.
//! The life of one call is in [`call`].

mod call;
mod drain;

use std::future::Future;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::future::Either;
use towerscope_core::{AgentContext, AgentError, ReplyItem, ToolCallBlock};

use crate::emit::Emitter;
use crate::generator::Generator;
use crate::permission::AskedRules;
use crate::runtime::Runtime;
use crate::structured;

pub(crate) use call::{INTERRUPTED_CALL_TEXT, answer_with_text, interrupted_output, panic_text, truncate};

/// Splits calls into batches: `(concurrent, calls)`. When every call is of one kind (one
/// call, or several safe ones: the common rounds), the calls stay in their list, with no
/// allocation.
pub(crate) fn batches(runtime: &Runtime, calls: Vec<ToolCallBlock>) -> Batches {
    let safe = |call: &ToolCallBlock| {
        call.name == structured::TOOL_NAME
            || (runtime.toolkit.get(&call.name).is_none_or(|t| t.concurrency_safe())
                && !(call.name == crate::compress::COMPRESS_TOOL && call::compress_tool_offered(runtime)))
    };
    let mut kinds = calls.iter().map(safe);
    let Some(first) = kinds.next() else {
        return Batches::One(None);
    };
    if kinds.all(|kind| kind == first) {
        return Batches::One(Some((first, calls)));
    }
    let mut out: Vec<(bool, Vec<ToolCallBlock>)> = Vec::new();
    for call in calls {
        let safe = safe(&call);
        match out.last_mut() {
            Some((kind, batch)) if *kind == safe => batch.push(call),
            _ => out.push((safe, vec![call])),
        }
    }
    Batches::Many(out.into_iter())
}

/// The batches of one round, in order (see [`batches`]).
pub(crate) enum Batches {
    /// At most one batch.
    One(Option<(bool, Vec<ToolCallBlock>)>),
    /// Calls of both kinds, in consecutive batches.
    Many(std::vec::IntoIter<(bool, Vec<ToolCallBlock>)>),
}

impl Iterator for Batches {
    type Item = (bool, Vec<ToolCallBlock>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::One(batch) => batch.take(),
            Self::Many(batches) => batches.next(),
        }
    }
}

/// Runs one batch, sending its events to `emit`, in a box of its own: a batch's future (a tool
/// call's checks, its permission and acting stacks) is the largest the loop awaits, and a reply
/// in flight spends most of its life waiting for the model; inline, every reply would carry its
/// size. A call's failures end as its error result (see `call.rs`); an interrupt, or a failure
/// of the agent itself, ends the batch after every call of a concurrent batch ended, as the
/// reference gathers them.
///
/// The two ways of running a batch are two futures, each boxed on its own: one future for both
/// would be as large as the larger of their states at once (1,032 bytes, past the allocator's
/// small sizes), where one call at a time (every sequential batch and every batch of one call)
/// takes about 600.
pub(crate) fn run_batch<'a>(
    runtime: &'a Arc<Runtime>,
    ctx: &'a AgentContext,
    concurrent: bool,
    calls: Vec<ToolCallBlock>,
    emit: &'a Emitter,
) -> impl Future<Output = Result<(), AgentError>> + Send + 'a {
    if !concurrent || calls.len() == 1 {
        Either::Left(Box::pin(run_in_turn(runtime, ctx, calls, emit)))
    } else {
        Either::Right(Box::pin(run_together(runtime, ctx, calls, emit)))
    }
}

/// Runs the calls one after the other; stops after a call that waits for the user or an
/// external executor.
#[allow(clippy::while_let_loop)] // a `while let` keeps its call in the future (see below)
async fn run_in_turn(
    runtime: &Arc<Runtime>,
    ctx: &AgentContext,
    calls: Vec<ToolCallBlock>,
    emit: &Emitter,
) -> Result<(), AgentError> {
    // Not a `for` loop, and the call taken in a block: a call held across the await would
    // take room in the batch's future twice (the loop's `Option` and the binding).
    let mut calls = calls.into_iter();
    loop {
        let (id, run) = match calls.next() {
            Some(call) => (call.id.clone(), call::execute(runtime, ctx, call, None, emit)),
            None => break,
        };
        run.await?;
        if runtime.lock_state().is_call_parked(&id) {
            break;
        }
    }
    Ok(())
}

/// Runs the calls at once, their events merged as they come ([`drain`]).
async fn run_together(
    runtime: &Arc<Runtime>,
    ctx: &AgentContext,
    calls: Vec<ToolCallBlock>,
    emit: &Emitter,
) -> Result<(), AgentError> {
    let reads = emit.reads();
    // Identical confirmation requests of one concurrent batch are asked once.
    let asked = AskedRules::default();
    let streams = calls.into_iter().map(|call| {
        let runtime = Arc::clone(runtime);
        let ctx = ctx.clone();
        let asked = asked.clone();
        Box::pin(Generator::new(move |y| async move {
            let emit = Emitter::new(y, reads);
            if let Err(e) = call::execute(&runtime, &ctx, call, Some(&asked), &emit).await {
                emit.error(e).await;
            }
        }))
    });
    let mut merged = drain::DrainReady::new(streams);
    let mut failure = None;
    while let Some(item) = merged.next().await {
        match item {
            Ok(ReplyItem::Event(event)) => emit.forward(event).await,
            Ok(ReplyItem::Final(_)) => {}
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    failure.map_or(Ok(()), Err)
}
