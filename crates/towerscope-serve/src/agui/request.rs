//! What a run asks of the agent: the [`ReplyInput`] a [`RunAgentInput`] stands for.
//!
//! The client sends the whole conversation on every run; the agent keeps its own in its
//! session. So only what came after the agent's last message is read:
//!
//! - `resume` entries answer the confirmations the last run ended with
//!   ([`ReplyInput::Confirm`]);
//! - otherwise `tool` messages answering front-end tools (tools the run declares) resume the
//!   reply parked for them ([`ReplyInput::External`]);
//! - otherwise the trailing `user` messages are new ([`ReplyInput::Messages`]); the run's
//!   `context` and any trailing `system` or `developer` messages come before them in one user
//!   message, inside `<system-reminder>` tags (an agent takes no system message as input: its
//!   system prompt is its own).
//!
//! Once the thread's session is loaded, [`against_stored`] checks the run against it (see its
//! docs): a run sent again (its answer lost on the way, or its reply failed) adds nothing twice.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;
use towerscope_core::event::{ConfirmResult, ExternalExecutionResultEvent, UserConfirmResultEvent};
use towerscope_core::{
    ContentBlock, Id, Messages, Msg, ReplyFinishedReason, ReplyInput, Role, ToolCallBlock, ToolOutput, ToolResultBlock,
    ToolResultState,
};

use super::input::{Message, ResumeStatus, RunAgentInput, ToolCall};
use crate::error::ServeError;

/// Roles the agent itself produced (the client holds them from earlier runs' events).
fn from_agent(role: &str) -> bool {
    matches!(role, "assistant" | "reasoning" | "activity")
}

/// Where what is new in the run starts: after the agent's last message the client holds.
fn tail_start(input: &RunAgentInput) -> usize {
    input
        .messages
        .iter()
        .rposition(|m| from_agent(&m.role))
        .map_or(0, |i| i + 1)
}

/// The name of the messages the endpoint adds for the application (the run's context and
/// instructions, the note after a cut-off answer); they are no question of the user's.
const APPLICATION: &str = "application";

/// Whether `m` is a question of the user's (not one of the application's messages).
fn is_question(m: &Msg) -> bool {
    m.role == Role::User && &*m.name != APPLICATION
}

/// The reply input `input` stands for; a 422 [`ServeError`] when it cannot be one.
pub(crate) fn reply_input(input: &RunAgentInput) -> Result<ReplyInput, ServeError> {
    let start = tail_start(input);
    let tail = &input.messages[start..];
    let calls = calls_by_id(&input.messages);
    if !input.resume.is_empty() {
        return confirm(input, tail, &calls);
    }
    let answers = frontend_answers(input, tail, &calls, &HashSet::new());
    let users: Vec<&Message> = questions(tail).collect();
    if users.is_empty()
        && let Some(m) = tail.iter().find(|m| m.role == "user")
    {
        return Err(ServeError::invalid(format!(
            "the user message '{}' holds no text part: this server takes a user message's text parts only",
            m.id
        )));
    }
    // Beside new messages, results of front-end tools are ones a run sent before carried (its
    // answer was lost): `against_stored` checks the thread applied them.
    if !answers.is_empty() && users.is_empty() {
        return Ok(external(answers));
    }
    let mut msgs = Vec::with_capacity(users.len() + 1);
    if let Some(hint) = application_hint(input, tail).filter(|_| !users.is_empty()) {
        // Named after the run's first question, so that a run sent again names it the same.
        msgs.push(match users.first().map(|m| m.id.as_str()) {
            Some(id) if !id.is_empty() => hint.with_id(hint_id(id)),
            _ => hint,
        });
    }
    for m in users {
        msgs.push(Msg::user("user", m.text()).with_id(m.id.as_str()));
    }
    Ok(ReplyInput::Messages(Messages::from(msgs)))
}

/// The run's user messages the model can read: an image or a file alone would reach it as an
/// empty message, so such a message is left out (beside questions in text; alone, the run is
/// refused).
fn questions(tail: &[Message]) -> impl Iterator<Item = &Message> {
    tail.iter().filter(|m| m.role == "user" && !m.holds_parts_but_no_text())
}

/// The application's message of a run: its context and the instructions (`system`,
/// `developer` messages) among its new messages; `None` when it has neither.
fn application_hint(input: &RunAgentInput, tail: &[Message]) -> Option<Msg> {
    let mut hints: Vec<String> = Vec::new();
    if !input.context.is_empty() {
        let text = input
            .context
            .iter()
            .map(|c| format!("{}: {}", c.description, c.value))
            .collect::<Vec<_>>()
            .join("\n");
        hints.push(format!("Context from the application:\n{text}"));
    }
    for m in tail
        .iter()
        .filter(|m| matches!(m.role.as_str(), "system" | "developer"))
    {
        hints.push(format!("Instructions from the application ({}):\n{}", m.role, m.text()));
    }
    (!hints.is_empty()).then(|| {
        let text = hints.join("\n\n");
        Msg::user(APPLICATION, format!("<system-reminder>{text}</system-reminder>"))
    })
}

/// The id of the application's message (context, instructions) of a run whose first question
/// is `first`.
fn hint_id(first: &str) -> String {
    format!("{first}:application")
}

/// What a run does once the thread's conversation is known.
#[derive(Debug)]
pub(crate) enum Run {
    /// A reply to this input.
    Reply(ReplyInput),
    /// Nothing new, and a reply to it ended: send again the context's messages in `range`
    /// (the ones of attempts that were cut off or failed aside), the first from its block
    /// `from` on (past its last block: the outcome alone).
    Replay {
        /// The messages.
        range: std::ops::Range<usize>,
        /// The first block of the first message to send.
        from: usize,
    },
    /// Nothing new, and the thread went on past it (a later question was asked): a copy of an
    /// old run, which the client must not take for the answer to its last question.
    Stale,
    /// The run cannot be answered (a 422 with this text).
    Invalid(String),
}

/// What a run of new messages does against the thread's conversation `context`:
///
/// - the `user` messages the thread holds (same id and text) are not added again;
/// - when it holds every one of them, or the run has none (its last message is the agent's):
///   the reply to them is replayed ([`Run::Replay`]) if it ended (completed, or parked); a run
///   whose questions the thread went on from without answering them is [`Run::Stale`]; else
///   they are answered again, with a note to the model when an attempt was cut off or failed;
/// - results of front-end tools beside new messages must be ones the thread applied
///   ([`Run::Invalid`] otherwise).
///
/// `awaited` are the ids of the calls the thread's parked reply waits on for results from
/// outside ([`WaitingCalls::external`](towerscope_core::WaitingCalls::external)): a `tool`
/// message answering one is its result even when the run no longer declares its tool (a
/// front end whose tool's component went away), so that it is not dropped with the thread
/// left waiting for it.
///
/// Other inputs (confirmations, front-end results alone) are kept: the agent checks those
/// against its parked reply itself. Linear in the context and the run's messages.
pub(crate) fn against_stored(
    input: &RunAgentInput,
    reply: ReplyInput,
    context: &Messages,
    awaited: &HashSet<Id>,
) -> Run {
    let reply = with_awaited(input, reply, awaited);
    let calls: Vec<&Id> = match &reply {
        ReplyInput::Messages(_) | ReplyInput::Interrupt(_) => Vec::new(),
        ReplyInput::Confirm(ev) => ev.confirm_results.iter().map(|r| &r.tool_call.id).collect(),
        ReplyInput::External(ev) => ev.execution_results.iter().map(|r| &r.id).collect(),
    };
    if !calls.is_empty() {
        return answered_before(context, &calls).unwrap_or(Run::Reply(reply));
    }
    let ReplyInput::Messages(msgs) = reply else {
        return Run::Reply(reply);
    };
    if let Some(call) = unapplied_result(input, context, awaited) {
        return Run::Invalid(format!(
            "the run carries both the result of front-end call '{call}', which the thread has not taken yet, and new \
             messages; send the results first, then the messages in the next run"
        ));
    }
    if context.is_empty() {
        // A new thread (or an agent without a session): nothing was sent before, so nothing to
        // answer but the run's questions. An agent does not speak first: the model would be
        // sent the system prompt alone, or nothing (which providers refuse).
        if msgs.is_empty() {
            return Run::Invalid(
                "the run holds no user message to answer, and the thread has no reply to resume or send again"
                    .to_owned(),
            );
        }
        return Run::Reply(ReplyInput::Messages(msgs));
    }
    let start = tail_start(input);
    let tail: Vec<&Message> = questions(&input.messages[start..]).collect();
    if tail.is_empty() && msgs.is_empty() {
        return nothing_new(input, context);
    }
    // The run's user messages by id, with their text (the first of an id); an empty id names
    // nothing, and makes the run new whatever else it holds.
    let mut users: HashMap<Id, String> = HashMap::with_capacity(tail.len());
    for m in tail.iter().filter(|m| !m.id.is_empty()) {
        users.entry(Id::from(m.id.as_str())).or_insert_with(|| m.text());
    }
    let anonymous = tail.iter().any(|m| m.id.is_empty());
    let hint = tail
        .first()
        .filter(|m| !m.id.is_empty())
        .map(|m| Id::from(hint_id(&m.id)));
    let mut held: HashSet<&Id> = HashSet::new();
    let mut after = 0;
    if !users.is_empty() {
        for (i, m) in context.iter().enumerate() {
            let same = users
                .get(&m.id)
                .is_some_and(|text| m.role == Role::User && m.text_content().unwrap_or_default() == *text);
            if same {
                held.insert(&m.id);
                after = i + 1;
            } else if hint.as_ref() == Some(&m.id) {
                // The application's message of this run, stored by its first sending.
                held.insert(&m.id);
            }
        }
    }
    let questions = held.iter().filter(|id| users.contains_key(**id)).count();
    let all_held = questions > 0 && questions == users.len() && !anonymous;
    if all_held {
        match replay_range(context, after) {
            Some(Ok(range)) => return Run::Replay { range, from: 0 },
            Some(Err(())) => return Run::Stale,
            // Held, and no reply to them ended (it failed, or was interrupted): answer them.
            None => {}
        }
    }
    // The application's message is named after the run's first question not held yet (a run
    // sent again names it the same; a run that adds a question to one sent before, after that).
    let first_new = tail
        .iter()
        .find(|m| m.id.is_empty() || !held.contains(&Id::from(m.id.as_str())));
    // The application's latest message (its context and instructions) as the model sees it:
    // a client that sends the same context with every run (CopilotKit's readables) adds it
    // once, not once per run.
    let latest = context
        .iter()
        .rev()
        .find(|m| m.role == Role::User && &*m.name == APPLICATION)
        .and_then(Msg::text_content);
    let mut seen: HashSet<&Id> = HashSet::new();
    let mut fresh: Vec<Msg> = Vec::with_capacity(msgs.len() + 1);
    for m in msgs.iter() {
        if hint.as_ref() == Some(&m.id) {
            if latest.is_some() && m.text_content() == latest {
                // The same as the last one the thread holds.
            } else if all_held {
                if !held.contains(&m.id) {
                    fresh.push(m.clone());
                }
            } else {
                let id = match first_new {
                    Some(q) if !q.id.is_empty() => Id::from(hint_id(&q.id)),
                    _ => Id::new(),
                };
                fresh.push(m.clone().with_id(id));
            }
        } else if !held.contains(&m.id) && (m.id.is_empty() || seen.insert(&m.id)) {
            fresh.push(m.clone());
        }
    }
    if all_held {
        fresh.extend(cut_off_note(context));
    }
    Run::Reply(ReplyInput::Messages(Messages::from(fresh)))
}

/// Answers to `calls` sent again after the thread applied them (the run's answer was lost, and
/// `@ag-ui/client` keeps the calls pending until it sees a `RUN_FINISHED`): what followed them
/// in the reply's message, if that reply ended and the thread did not go on; `None` otherwise
/// (the agent then checks the answers itself).
fn answered_before(context: &Messages, calls: &[&Id]) -> Option<Run> {
    // Hashed: a run may answer thousands of calls.
    let calls: HashSet<&Id> = calls.iter().copied().collect();
    let from_end = context
        .iter()
        .rev()
        .position(|m| m.role == Role::Assistant && m.tool_calls().any(|c| calls.contains(&c.id)))?;
    let index = context.len() - 1 - from_end;
    let msg = context.get(index)?;
    let results: HashSet<&Id> = msg.tool_results().map(|r| &r.id).collect();
    if !calls.iter().all(|id| results.contains(id)) {
        return None;
    }
    if context.iter().skip(index + 1).any(is_question) {
        return Some(Run::Stale);
    }
    if !ended(msg) {
        // Taken, then cut off (the client went away) or failed: answered again.
        return Some(Run::Reply(ReplyInput::Messages(Messages::from(cut_off_note(context)))));
    }
    // From the first result of these answers: the blocks before it (other calls of the same
    // turn, their results) went out with earlier runs.
    let first_result = msg
        .content
        .iter()
        .position(|b| matches!(b, ContentBlock::ToolResult(r) if calls.contains(&r.id)))?;
    Some(Run::Replay {
        range: index..index + 1,
        from: first_result,
    })
}

/// A run with nothing new: a client sending again the conversation it holds, with what it
/// received of the answer (its last message is the agent's). If the reply to the thread's last
/// question ended, the client has its content (its events carry other ids than the stored
/// blocks, so a replay would show it twice): it gets the outcome alone. Otherwise the question
/// is answered again. A client whose last question is not the thread's is behind ([`Run::Stale`]).
fn nothing_new(input: &RunAgentInput, context: &Messages) -> Run {
    let last_question = context.iter().enumerate().filter(|(_, m)| is_question(m)).last();
    let asked = input
        .messages
        .iter()
        .rev()
        .find(|m| m.role == "user" && !m.id.is_empty());
    if let (Some((_, question)), Some(asked)) = (last_question, asked)
        && question.id != asked.id.as_str()
    {
        return Run::Stale;
    }
    if let Some((q, _)) = last_question
        && let Some(Ok(range)) = replay_range(context, q + 1)
    {
        return Run::Replay {
            range: range.end - 1..range.end,
            from: usize::MAX,
        };
    }
    Run::Reply(ReplyInput::Messages(Messages::from(cut_off_note(context))))
}

/// Answering again after an attempt that was cut off or failed: the model is told so, and its
/// last turn is not the part of an answer that attempt left (a provider would continue it).
fn cut_off_note(context: &Messages) -> Vec<Msg> {
    if !context.last().is_some_and(|m| m.role == Role::Assistant) {
        return Vec::new();
    }
    vec![Msg::user(
        APPLICATION,
        "<system-reminder>Your previous answer to this was cut off or failed. Answer it again, in full.</system-reminder>",
    )]
}

/// The messages from `after` up to the first that ends a reply; `Err` when a user's message
/// comes first (the thread went on); `None` when no reply ended. The application's messages
/// (context, the note that an answer was cut off) are no new question.
fn replay_range(context: &Messages, after: usize) -> Option<Result<std::ops::Range<usize>, ()>> {
    for (i, m) in context.iter().enumerate().skip(after) {
        if is_question(m) {
            return Some(Err(()));
        }
        if m.role != Role::Assistant {
            continue;
        }
        if settles(m) {
            return Some(Ok(after..i + 1));
        }
    }
    None
}

/// Whether `msg` is not the message of a reply that was interrupted or failed (what it holds
/// of an answer may be a part of it).
pub(crate) fn ended(msg: &Msg) -> bool {
    !matches!(
        msg.finished_reason,
        Some(ReplyFinishedReason::Interrupted | ReplyFinishedReason::Error)
    )
}

/// Whether `msg` ends a reply: an assistant message neither interrupted nor failed (a reply
/// that completed, or parked for the user or the front end; one that stopped otherwise is
/// marked, see `finished_reason`).
fn settles(msg: &Msg) -> bool {
    msg.role == Role::Assistant && ended(msg)
}

/// The tail's `tool` messages that answer calls of front-end tools (tools the run declares,
/// or calls in `awaited`), each with its call.
fn frontend_answers<'a>(
    input: &'a RunAgentInput,
    tail: &'a [Message],
    calls: &HashMap<&'a str, &'a ToolCall>,
    awaited: &HashSet<Id>,
) -> Vec<(&'a Message, &'a ToolCall)> {
    if !tail.iter().any(|m| m.role == "tool") {
        return Vec::new();
    }
    // Hashed once: a run may declare thousands of tools and answer thousands of calls.
    let frontend_tools: HashSet<&str> = input.tools.iter().map(|t| t.name.as_str()).collect();
    tail.iter()
        .filter(|m| m.role == "tool")
        .filter_map(|m| {
            let call = calls.get(m.tool_call_id.as_deref()?)?;
            (frontend_tools.contains(call.function.name.as_str()) || awaited.contains(&Id::from(call.id.as_str())))
                .then_some((m, *call))
        })
        .collect()
}

/// `reply` with the run's results of the calls in `awaited` (those the thread's parked reply
/// waits on) whose tools the run no longer declares: they join the results of the tools it
/// declares, or stand alone for a run without new questions.
fn with_awaited(input: &RunAgentInput, reply: ReplyInput, awaited: &HashSet<Id>) -> ReplyInput {
    let resumes = match &reply {
        ReplyInput::External(_) => true,
        ReplyInput::Messages(msgs) => msgs.is_empty(),
        _ => false,
    };
    if !resumes || awaited.is_empty() {
        return reply;
    }
    let tail = &input.messages[tail_start(input)..];
    let answers = frontend_answers(input, tail, &calls_by_id(&input.messages), awaited);
    if answers.is_empty() { reply } else { external(answers) }
}

/// The first front-end result beside the run's new messages that the thread has not applied:
/// such a run cannot be answered (the results resume a parked reply, the messages start one).
fn unapplied_result(input: &RunAgentInput, context: &Messages, awaited: &HashSet<Id>) -> Option<String> {
    let start = tail_start(input);
    let tail = &input.messages[start..];
    if !tail.iter().any(|m| m.role == "tool") {
        return None;
    }
    let calls = calls_by_id(&input.messages);
    let answers = frontend_answers(input, tail, &calls, awaited);
    if answers.is_empty() {
        return None;
    }
    let stored: HashSet<&Id> = context.iter().flat_map(Msg::tool_results).map(|r| &r.id).collect();
    answers
        .into_iter()
        .find(|(_, call)| !stored.contains(&Id::from(call.id.as_str())))
        .map(|(_, call)| call.id.clone())
}

/// The assistant messages' tool calls by id (the last one of an id wins).
fn calls_by_id(messages: &[Message]) -> HashMap<&str, &ToolCall> {
    messages
        .iter()
        .filter(|m| m.role == "assistant")
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| (c.id.as_str(), c))
        .collect()
}

/// Front-end results as the input resuming the reply parked for them (addressed to it by the
/// endpoint).
fn external(answers: Vec<(&Message, &ToolCall)>) -> ReplyInput {
    let results = answers
        .into_iter()
        .map(|(m, call)| tool_result(m, &call.id, &call.function.name))
        .collect();
    ReplyInput::External(Arc::new(ExternalExecutionResultEvent::new(Id::new(), results)))
}

fn tool_result(m: &Message, call_id: &str, name: &str) -> ToolResultBlock {
    let (text, state) = match &m.error {
        Some(err) => (err.clone(), ToolResultState::Error),
        None => (m.text(), ToolResultState::Success),
    };
    ToolResultBlock::new(call_id, name, ToolOutput::Text(text), state)
}

/// `resume` entries as the user's confirmations. A call's name comes from the conversation
/// (the client built it from `TOOL_CALL_*` events); a payload's `arguments` are the user's
/// edit, and without them the arguments are left empty for the endpoint to fill in with the
/// stored call's (the client's copy in its messages may be missing or reformatted).
fn confirm(
    input: &RunAgentInput,
    tail: &[Message],
    calls: &HashMap<&str, &ToolCall>,
) -> Result<ReplyInput, ServeError> {
    if tail.iter().any(|m| m.role == "user") {
        return Err(ServeError::invalid(
            "the run answers interrupts and carries new messages; answer the interrupts first, then send the \
             messages in the next run",
        ));
    }
    let mut results = Vec::with_capacity(input.resume.len());
    for entry in &input.resume {
        let Some(call) = calls.get(entry.interrupt_id.as_str()) else {
            return Err(ServeError::invalid(format!(
                "resume names '{}', which is no tool call of the conversation's messages; send the messages the \
                 interrupted run produced",
                entry.interrupt_id
            )));
        };
        let payload = entry.payload.as_ref();
        let approved = entry.status == ResumeStatus::Resolved
            && payload.and_then(|p| p.get("approved")).and_then(Value::as_bool) != Some(false);
        let arguments = match payload.and_then(|p| p.get("arguments")) {
            Some(Value::String(s)) => s.clone(),
            Some(v @ Value::Object(_)) => v.to_string(),
            Some(_) => {
                return Err(ServeError::invalid(format!(
                    "resume '{}': payload.arguments must be a JSON object or a JSON string",
                    entry.interrupt_id
                )));
            }
            // Not edited: the stored call's arguments run, which the endpoint fills in (the
            // client's copy in its message may be missing or reformatted).
            None => String::new(),
        };
        let block = ToolCallBlock::new(call.id.as_str(), call.function.name.as_str(), arguments);
        results.push(ConfirmResult::new(approved, block));
    }
    Ok(ReplyInput::Confirm(Arc::new(UserConfirmResultEvent::new(
        Id::new(),
        results,
    ))))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(run: Run) -> Vec<String> {
        match run {
            Run::Reply(ReplyInput::Messages(msgs)) => msgs.iter().filter_map(|m| m.text_content()).collect(),
            other => panic!("a reply to new messages, not {other:?}"),
        }
    }

    /// An empty id names nothing (two questions without ids are two questions), and one id sent
    /// twice in a run is one message.
    #[test]
    fn empty_ids_never_match_and_an_id_sent_twice_is_one_message() {
        let input: RunAgentInput = serde_json::from_value(json!({
            "threadId": "t",
            "runId": "r",
            "messages": [
                {"id": "", "role": "user", "content": "same"},
                {"id": "", "role": "user", "content": "one"},
                {"id": "u2", "role": "user", "content": "two"},
                {"id": "u2", "role": "user", "content": "two"}
            ],
        }))
        .expect("a valid run");
        let stored = Messages::from(vec![Msg::user("user", "same").with_id("")]);
        let reply = reply_input(&input).expect("new messages");
        assert_eq!(
            texts(against_stored(&input, reply, &stored, &HashSet::new())),
            ["same", "one", "two"]
        );
    }

    /// A confirmation sent again whose answer the thread took: what followed it if that reply
    /// ended; answered again (with the note) if it was cut off after taking it.
    #[test]
    fn a_confirmation_the_thread_took_is_resumed_or_answered_again() {
        let input: RunAgentInput = serde_json::from_value(json!({
            "threadId": "t",
            "runId": "r",
            "messages": [
                {"id": "u1", "role": "user", "content": "delete it"},
                {"id": "c1", "role": "assistant", "toolCalls": [
                    {"id": "c1", "type": "function", "function": {"name": "delete_file", "arguments": "{}"}}
                ]}
            ],
            "resume": [{"interruptId": "c1", "status": "resolved"}],
        }))
        .expect("a valid run");
        let reply = |reason: Option<ReplyFinishedReason>| {
            let mut msg = Msg::assistant_blocks(
                "assistant",
                vec![
                    ContentBlock::ToolCall(ToolCallBlock::new("c1", "delete_file", "{}")),
                    ContentBlock::ToolResult(ToolResultBlock::new(
                        "c1",
                        "delete_file",
                        ToolOutput::Text("deleted".to_owned()),
                        ToolResultState::Success,
                    )),
                    ContentBlock::text("Done"),
                ],
            );
            msg.finished_reason = reason;
            Messages::from(vec![Msg::user("user", "delete it").with_id("u1"), msg])
        };
        let resumed = against_stored(
            &input,
            reply_input(&input).expect("a resume"),
            &reply(None),
            &HashSet::new(),
        );
        assert!(
            matches!(
                resumed,
                Run::Replay {
                    range: std::ops::Range { start: 1, end: 2 },
                    from: 1
                }
            ),
            "{resumed:?}"
        );
        let cut = reply(Some(ReplyFinishedReason::Interrupted));
        let again = against_stored(&input, reply_input(&input).expect("a resume"), &cut, &HashSet::new());
        assert_eq!(
            texts(again),
            [
                "<system-reminder>Your previous answer to this was cut off or failed. Answer it again, in full.</system-reminder>"
            ]
        );
    }

    /// Many front-end tools and many of their results in one run: every result, in order, and
    /// only the ones of front-end tools (each checked against a set made once, not the list).
    #[test]
    fn thousands_of_tools_and_results_give_every_front_end_result_in_order() {
        let (tools, calls) = (20_000, 5_000);
        let tool_calls: Vec<_> = (0..calls)
            .map(|i| {
                // Every tenth call is to a back-end tool, whose result is not the front end's.
                let name = if i % 10 == 9 {
                    "backend".to_owned()
                } else {
                    format!("t{i}")
                };
                json!({"id": format!("c{i}"), "type": "function", "function": {"name": name, "arguments": "{}"}})
            })
            .collect();
        let mut messages = vec![
            json!({"id": "u", "role": "user", "content": "go"}),
            json!({"id": "a", "role": "assistant", "toolCalls": tool_calls}),
        ];
        messages.extend(
            (0..calls).map(|i| json!({"id": format!("m{i}"), "role": "tool", "toolCallId": format!("c{i}"), "content": format!("r{i}")})),
        );
        let input: RunAgentInput = serde_json::from_value(json!({
            "threadId": "t",
            "runId": "r",
            "messages": messages,
            "tools": (0..tools).map(|i| json!({"name": format!("t{i}"), "description": "", "parameters": {}})).collect::<Vec<_>>(),
        }))
        .expect("a valid run");
        let Ok(ReplyInput::External(event)) = reply_input(&input) else {
            panic!("the results resume the reply");
        };
        let ids: Vec<String> = event.execution_results.iter().map(|r| r.id.to_string()).collect();
        let expected: Vec<String> = (0..calls).filter(|i| i % 10 != 9).map(|i| format!("c{i}")).collect();
        assert_eq!(ids, expected);
    }
}
