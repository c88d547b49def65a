//! Asking the person to confirm tool calls: `y`, `N`, `a` (always), `e` (edit the arguments).

use std::pin::Pin;

use futures_core::Stream;
use futures_util::StreamExt;
use towerscope_core::event::{ConfirmResult, RequireUserConfirmEvent, UserConfirmResultEvent};
use towerscope_core::{AgentError, ToolCallBlock};

use crate::user::UserAgent;

/// Ctrl-C presses (or any other interruption request) the chat listens to.
pub type Interrupts = Pin<Box<dyn Stream<Item = ()> + Send>>;

/// One answer to a confirmation prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Run the call (`y`, `yes`).
    Yes,
    /// Do not run it (anything else, the default).
    No,
    /// Run it, and accept the suggested rules so similar calls run without asking (`a`,
    /// `always`).
    Always,
    /// Run it with other arguments (`e`, `edit`).
    Edit,
}

impl Answer {
    /// Reads a typed answer; `always` counts only when there are rules to accept.
    pub fn parse(text: &str, rules_offered: bool) -> Self {
        match text.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Self::Yes,
            "a" | "always" if rules_offered => Self::Always,
            "e" | "edit" => Self::Edit,
            _ => Self::No,
        }
    }
}

/// The prompt for one call: `Allow get_weather? [y/N/a/e] ` (`a` only with suggested rules).
pub fn prompt(call: &ToolCallBlock) -> String {
    let choices = if call.suggested_rules.is_empty() {
        "y/N/e"
    } else {
        "y/N/a/e"
    };
    // The name may be a server's (MCP): its control characters are shown, not sent.
    format!("Allow {}? [{choices}] ", super::style::printable(&call.name))
}

/// What the asking ended with.
pub(crate) enum Asked {
    /// The answers, ready to resume the reply.
    Answers(UserConfirmResultEvent),
    /// The input ended or Ctrl-C was pressed: interrupt the parked reply.
    GaveUp,
}

/// Asks about every call of `request`, one prompt each; reads from the person's input.
pub(crate) async fn ask(
    user: &UserAgent,
    request: &RequireUserConfirmEvent,
    interrupts: &mut Interrupts,
) -> Result<Asked, AgentError> {
    let mut results = Vec::new();
    for call in &request.tool_calls {
        let Some(answer) = read(user, &prompt(call), interrupts).await? else {
            return Ok(Asked::GaveUp);
        };
        let rules_offered = !call.suggested_rules.is_empty();
        let result = match Answer::parse(&answer, rules_offered) {
            Answer::Yes => ConfirmResult::new(true, call.clone()),
            Answer::No => ConfirmResult::new(false, call.clone()),
            Answer::Always => ConfirmResult::new(true, call.clone()).with_rules(call.suggested_rules.clone()),
            Answer::Edit => {
                let Some(input) = edit(user, call, interrupts).await? else {
                    return Ok(Asked::GaveUp);
                };
                let mut edited = call.clone();
                edited.input = input;
                ConfirmResult::new(true, edited)
            }
        };
        results.push(result);
    }
    Ok(Asked::Answers(UserConfirmResultEvent::new(
        request.reply_id.clone(),
        results,
    )))
}

/// New arguments for `call`, asked until they are a JSON object.
async fn edit(
    user: &UserAgent,
    call: &ToolCallBlock,
    interrupts: &mut Interrupts,
) -> Result<Option<String>, AgentError> {
    let mut again = "";
    loop {
        // The complaint goes into the next prompt, so it reaches the person through their
        // input (a terminal prints it), like the prompt itself.
        // The model's text (name, arguments) with its control characters shown, not sent.
        let prompt = format!(
            "{again}New arguments for {} (JSON, was {}): ",
            super::style::printable(&call.name),
            super::style::printable(call.input.trim())
        );
        let Some(line) = read(user, &prompt, interrupts).await? else {
            return Ok(None);
        };
        if matches!(
            serde_json::from_str::<serde_json::Value>(&line),
            Ok(serde_json::Value::Object(_))
        ) {
            return Ok(Some(line));
        }
        again = "Those arguments are not a JSON object. ";
    }
}

/// One line from the person, or `None` when the input ended or Ctrl-C came first.
async fn read(user: &UserAgent, prompt: &str, interrupts: &mut Interrupts) -> Result<Option<String>, AgentError> {
    let asked = std::pin::pin!(user.ask(prompt));
    match futures_util::future::select(asked, interrupts.next()).await {
        futures_util::future::Either::Left((answer, _)) => answer,
        futures_util::future::Either::Right(_) => {
            println!();
            Ok(None)
        }
    }
}
