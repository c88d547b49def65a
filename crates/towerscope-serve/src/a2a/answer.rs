//! What a client's message means to the agent: a new message, or the answer to a parked reply.
//!
//! A task waiting for input (`TASK_STATE_INPUT_REQUIRED`) asked either to confirm tool calls or
//! for the results of tools run outside the agent. The client's next message on the task (or
//! its context) answers:
//!
//! - a confirmation: a data part `{"approved": true}` or `{"approved": false}`, or a text
//!   part: `yes`, `y`, `ok`, `approve`, `approved`, `confirm` (any case) approve every call,
//!   anything else denies them;
//! - external results: a data part `{"results": {"<call id>": "<output>", ...}}`, or a text
//!   part that becomes the output of every waiting call.

use serde_json::Value;
use towerscope_core::event::{ConfirmResult, ExternalExecutionResultEvent, UserConfirmResultEvent};
use towerscope_core::{ContentBlock, Msg, ReplyInput, Role, TextBlock, ToolResultBlock, ToolResultState};

use super::error::RpcError;
use super::tasks::Parked;
use super::wire::{FileError, Message, Part};

/// The message as a new user message for the agent, its parts in order: text parts as text,
/// data parts as their JSON text (consecutive ones joined by a line break into one text block),
/// and file parts (`raw` bytes or a `url`): images, PDF, WAV and MP3 as data blocks with their
/// media type and file name, text files (`text/*`, JSON, XML, YAML) as text blocks headed by
/// their name. A file of another type is refused (-32005): no provider takes it, and stored in
/// the conversation it would fail every later turn.
pub(crate) fn new_message(message: &Message) -> Result<ReplyInput, RpcError> {
    check_parts(message)?;
    let mut content = Vec::new();
    let mut text: Option<String> = None;
    for (index, part) in message.parts.iter().enumerate() {
        let piece = match (&part.text, &part.data) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(data)) => Some(data.to_string()),
            (None, None) => None,
        };
        if let Some(piece) = piece {
            match &mut text {
                Some(t) => {
                    t.push('\n');
                    t.push_str(&piece);
                }
                None => text = Some(piece),
            }
            continue;
        }
        if let Some(t) = text.take() {
            content.push(ContentBlock::Text(TextBlock::new(t)));
        }
        content.push(file_block(index, part)?);
    }
    if let Some(t) = text.take() {
        content.push(ContentBlock::Text(TextBlock::new(t)));
    }
    let msg = Msg::new("user", Role::User, content).map_err(|e| RpcError::invalid_params(e.to_string()))?;
    Ok(msg.into())
}

/// A file part (`raw` base64 bytes, or a `url`) as the block the model reads.
fn file_block(index: usize, part: &Part) -> Result<ContentBlock, RpcError> {
    match part.file_block() {
        Some(Ok(block)) => Ok(block),
        Some(Err(FileError::Unsupported(media))) => Err(RpcError::new(
            RpcError::CONTENT_TYPE_NOT_SUPPORTED,
            format!("part {index}: {}", FileError::Unsupported(media)),
        )),
        Some(Err(why)) => Err(RpcError::invalid_params(format!("part {index}: {why}"))),
        None => Err(RpcError::invalid_params(format!(
            "part {index}: a part holds one of `text`, `data`, `raw` and `url`"
        ))),
    }
}

/// Refuses a message this agent cannot read, new or the answer to a waiting task: one with
/// no parts, or a part holding none or several of `text`, `data`, `raw` and `url`.
pub(crate) fn check_parts(message: &Message) -> Result<(), RpcError> {
    if message.parts.is_empty() {
        return Err(RpcError::invalid_params("the message has no parts"));
    }
    for (index, part) in message.parts.iter().enumerate() {
        let held = [
            part.text.is_some(),
            part.data.is_some(),
            part.raw.is_some(),
            part.url.is_some(),
        ]
        .into_iter()
        .filter(|h| *h)
        .count();
        if held != 1 {
            return Err(RpcError::invalid_params(format!(
                "part {index}: a part holds one of `text`, `data`, `raw` and `url` (it holds {held})"
            )));
        }
    }
    Ok(())
}

/// Refuses an answer to a waiting task that [`resume`] cannot read: what [`check_parts`]
/// refuses, and file parts (an answer is a confirmation or tool results, in text or data: a
/// file-only answer read as empty text would deny every call).
pub(crate) fn check_answer_parts(message: &Message) -> Result<(), RpcError> {
    check_parts(message)?;
    if message.parts.iter().any(Part::is_file) {
        return Err(RpcError::new(
            RpcError::CONTENT_TYPE_NOT_SUPPORTED,
            "an answer to a waiting task takes text and data parts (a confirmation, or tool results); a file part is \
             not one",
        ));
    }
    Ok(())
}

/// The message as the answer to `parked`.
pub(crate) fn resume(parked: &Parked, message: &Message) -> ReplyInput {
    let data = message.parts.iter().find_map(|p| p.data.as_ref());
    let text = message.text();
    if !parked.confirm.is_empty() {
        let approved = match data.and_then(|d| d.get("approved")).and_then(Value::as_bool) {
            Some(approved) => approved,
            None => is_yes(&text),
        };
        let results = parked
            .confirm
            .iter()
            .map(|call| ConfirmResult::new(approved, call.clone()))
            .collect();
        return UserConfirmResultEvent::new(parked.reply_id.clone(), results).into();
    }
    let results_map = data.and_then(|d| d.get("results")).and_then(Value::as_object);
    let results = parked
        .external
        .iter()
        .map(|call| {
            let output = match results_map.and_then(|m| m.get(&call.id.to_string())) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => text.clone(),
            };
            ToolResultBlock::new(call.id.clone(), call.name.clone(), output, ToolResultState::Success)
        })
        .collect();
    ExternalExecutionResultEvent::new(parked.reply_id.clone(), results).into()
}

fn is_yes(text: &str) -> bool {
    let word = text.trim().trim_end_matches(['.', '!']).to_ascii_lowercase();
    matches!(word.as_str(), "yes" | "y" | "ok" | "approve" | "approved" | "confirm")
}

fn is_no(text: &str) -> bool {
    let word = text.trim().trim_end_matches(['.', '!']).to_ascii_lowercase();
    matches!(
        word.as_str(),
        "no" | "n" | "deny" | "denied" | "reject" | "rejected" | "cancel"
    )
}

/// Whether `message` answers a confirmation for sure: a data part `{"approved": bool}`, or a
/// text that says yes or no. A message sent to a context (no `taskId`) whose task waits for a
/// confirmation is taken as its answer only then: a new question ("before that: what time is
/// it?") denied the call, and what it asked never reached the model.
pub(crate) fn answers_confirmation(message: &Message) -> bool {
    let approved = message
        .parts
        .iter()
        .filter_map(|p| p.data.as_ref())
        .any(|d| d.get("approved").is_some_and(Value::is_boolean));
    approved || {
        let text = message.text();
        is_yes(&text) || is_no(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::wire::{Part, Role};
    use towerscope_core::DataSource;
    use towerscope_core::ToolCallBlock;

    fn parked_confirm() -> Parked {
        Parked {
            reply_id: "r1".into(),
            confirm: vec![ToolCallBlock::new("c1", "delete", r#"{"path":"/a"}"#)],
            external: vec![],
        }
    }

    fn approved(input: ReplyInput) -> bool {
        match input {
            ReplyInput::Confirm(e) => e.confirm_results.iter().all(|r| r.confirmed),
            other => panic!("expected a confirmation, got {other:?}"),
        }
    }

    #[test]
    fn yes_in_text_or_data_approves_anything_else_denies() {
        let p = parked_confirm();
        assert!(approved(resume(&p, &Message::new_text(Role::User, " Yes. "))));
        assert!(!approved(resume(&p, &Message::new_text(Role::User, "no, keep it"))));
        let mut data = Message::new_text(Role::User, "yes");
        data.parts = vec![Part::data(serde_json::json!({"approved": false}))];
        assert!(!approved(resume(&p, &data)));
    }

    fn blocks(input: ReplyInput) -> Vec<ContentBlock> {
        match input {
            ReplyInput::Messages(msgs) => msgs.iter().flat_map(|m| m.content.clone()).collect(),
            other => panic!("expected a message, got {other:?}"),
        }
    }

    #[test]
    fn file_parts_become_blocks_in_their_place() {
        let mut m = Message::new_text(Role::User, "x");
        m.parts = vec![
            Part::text("Look at these:"),
            Part::data(serde_json::json!({"n": 1})),
            Part {
                // "hello" in the URL-safe alphabet without padding, as some encoders write it.
                raw: Some("aGVsbG8".into()),
                media_type: Some("text/plain; charset=utf-8".into()),
                filename: Some("hello.txt".into()),
                ..Part::default()
            },
            Part {
                url: Some("https://example.com/cat.png".into()),
                media_type: Some("image/png".into()),
                ..Part::default()
            },
            Part {
                raw: Some("_-8".into()),
                media_type: Some("image/png".into()),
                ..Part::default()
            },
            Part {
                url: Some("data:application/pdf;base64,JVBERi0=".into()),
                filename: Some("a.pdf".into()),
                ..Part::default()
            },
            Part::text("Thanks."),
        ];
        let blocks = blocks(new_message(&m).expect("read"));
        let text = |b: &ContentBlock| match b {
            ContentBlock::Text(t) => t.text.clone(),
            other => panic!("expected text, got {other:?}"),
        };
        let data = |b: &ContentBlock| match b {
            ContentBlock::Data(d) => d.clone(),
            other => panic!("expected data, got {other:?}"),
        };
        assert_eq!(blocks.len(), 6);
        assert_eq!(text(&blocks[0]), "Look at these:\n{\"n\":1}");
        // A text file is text, headed by its name.
        assert_eq!(text(&blocks[1]), "hello.txt:\nhello");
        assert_eq!(
            data(&blocks[2]).source,
            DataSource::Url {
                url: "https://example.com/cat.png".into(),
                media_type: "image/png".into()
            }
        );
        // URL-safe characters.
        assert_eq!(data(&blocks[3]).source, DataSource::inline(&[0xff, 0xef], "image/png"));
        // A `data:` URL is inline bytes, of the URL's type when the part names none.
        let pdf = data(&blocks[4]);
        assert_eq!(pdf.source, DataSource::inline(b"%PDF-", "application/pdf"));
        assert_eq!(pdf.name.as_deref(), Some("a.pdf"));
        assert_eq!(text(&blocks[5]), "Thanks.");
    }

    #[test]
    fn a_file_no_provider_takes_is_refused_as_an_unsupported_type() {
        let refused = |part: Part| {
            let mut m = Message::new_text(Role::User, "x");
            m.parts = vec![part];
            let Err(err) = new_message(&m) else { panic!("refused") };
            (err.code, err.message)
        };
        let zip = refused(Part {
            raw: Some("UEsDBA==".into()),
            media_type: Some("application/zip".into()),
            ..Part::default()
        });
        assert_eq!(zip.0, RpcError::CONTENT_TYPE_NOT_SUPPORTED, "{}", zip.1);
        assert!(zip.1.contains("`application/zip` is not taken"), "{}", zip.1);
        // No media type: bytes of unknown kind.
        let unknown = refused(Part {
            raw: Some("AAAA".into()),
            ..Part::default()
        });
        assert_eq!(unknown.0, RpcError::CONTENT_TYPE_NOT_SUPPORTED, "{}", unknown.1);
        // By URL, only images and PDF (a provider fetches them).
        let text_url = refused(Part {
            url: Some("https://example.com/a.txt".into()),
            media_type: Some("text/plain".into()),
            ..Part::default()
        });
        assert_eq!(text_url.0, RpcError::CONTENT_TYPE_NOT_SUPPORTED, "{}", text_url.1);
    }

    #[test]
    fn bad_parts_are_refused_with_a_clear_error() {
        let refused = |part: Part| {
            let mut m = Message::new_text(Role::User, "x");
            m.parts = vec![Part::text("first"), part];
            let Err(err) = new_message(&m) else { panic!("refused") };
            assert_eq!(err.code, RpcError::INVALID_PARAMS);
            err.message
        };
        let not_base64 = refused(Part {
            raw: Some("not base64!".into()),
            ..Part::default()
        });
        assert!(not_base64.contains("part 1: `raw` is not base64"), "{not_base64}");
        let local = refused(Part {
            url: Some("file:///etc/passwd".into()),
            ..Part::default()
        });
        assert!(local.contains("http, https or data URL"), "{local}");
        let two = refused(Part {
            text: Some("t".into()),
            url: Some("https://example.com/a".into()),
            ..Part::default()
        });
        assert!(two.contains("it holds 2"), "{two}");
        let none = refused(Part::default());
        assert!(none.contains("it holds 0"), "{none}");
        let empty = refused(Part {
            raw: Some(String::new()),
            media_type: Some("image/png".into()),
            ..Part::default()
        });
        assert!(empty.contains("no bytes"), "{empty}");
        let not_utf8 = refused(Part {
            raw: Some("//79".into()),
            media_type: Some("text/plain".into()),
            ..Part::default()
        });
        assert!(not_utf8.contains("not UTF-8"), "{not_utf8}");
        let bad_data_url = refused(Part {
            url: Some("data:image/png,plain".into()),
            ..Part::default()
        });
        assert!(bad_data_url.contains("must be base64"), "{bad_data_url}");
    }
}
