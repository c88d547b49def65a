//! The permission engine behind `on_check_permission` (the reference's `PermissionEngine`),
//! with its modes ([`PermissionMode`]), and the de-duplication of identical confirmation
//! requests within one batch of tool calls.
//!
//! Every mode checks, in order: deny rules, ask rules, read-only calls
//! ([`Tool::read_only_call`](crate::toolkit::Tool::read_only_call)), then the mode's own policy:
//!
//! ```text
//!             requires_confirmation  tool's own check   allow rule   fallback
//! Default     ask                    allow/deny/ask     allow        ask if the tool asked or is destructive,
//!                                                                    else the agent's default permission
//! Explore     (denied before: not read-only)
//! AcceptEdits ask                    allow/deny/ask     allow        ask if the tool asked or is destructive, else allow
//! Bypass      skipped                allow/deny         allow        allow
//! DontAsk     deny                   allow/deny/ask     allow        every ask above becomes a deny
//! ```
//!
//! # The default permission (a documented difference)
//!
//! The reference asks the user about every tool that is not read-only and that no rule allows.
//! towerscope keeps its documented difference: in the `Default` mode such a call gets the
//! agent's [`default_permission`](crate::AgentBuilder::default_permission), which is
//! [`Allow`](PermissionDecision::Allow) unless set. A towerscope tool is code its developer
//! registered (there are no built-in shell or file tools), so an agent that parks on its first
//! tool call would surprise more than it protects; the protections that matter keep working:
//! deny and ask rules, tools that ask or require confirmation, destructive tools (MCP tools
//! without annotations are destructive, as the MCP specification says), and the modes (`Explore`
//! for read-only sessions, `DontAsk` for unattended ones). `default_permission(Ask)` gives the
//! reference's behaviour.
//!
//! # Example
//!
//! ```
//! use towerscope_agent::{Agent, toolkit::FunctionTool};
//! use towerscope_core::{Msg, PermissionMode, ToolResultState};
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let model = ScriptedModel::new("m", [
//!     ScriptedResponse::tool_call("c1", "delete_all", "{}"),
//!     ScriptedResponse::text("I may only look around."),
//! ]);
//! let agent = Agent::builder("a")
//!     .model(model)
//!     .tool(FunctionTool::with_schema("delete_all", "Deletes everything.", serde_json::json!({"type": "object"}),
//!         |_: serde_json::Value| async { "deleted" }))
//!     .permission_mode(PermissionMode::Explore)
//!     .build()?;
//! agent.reply(Msg::user("user", "Clean up.")).await?;
//! let state = agent.state();
//! let result = state.context[1].tool_results().next().cloned().expect("a result");
//! assert_eq!(result.state, ToolResultState::Denied);
//! assert_eq!(result.output.text_content().as_deref(), Some("Permission denied for delete_all (explore mode is read-only)"));
//! # Ok(()) }
//! ```

use std::sync::{Arc, Mutex, PoisonError};

use towerscope_core::{
    PermissionBehavior, PermissionDecision, PermissionMode, PermissionRequest, PermissionRule, ToolCallBlock,
    ToolCallState,
};

use crate::state::AgentState;
use crate::toolkit::Toolkit;

/// Decides on one call (see the [module docs](self)).
pub(crate) fn decide(
    state: &Mutex<AgentState>,
    toolkit: &Toolkit,
    default: &PermissionDecision,
    req: &PermissionRequest,
) -> PermissionDecision {
    if req.tool_call().state == ToolCallState::Allowed {
        return PermissionDecision::Allow;
    }
    let name = req.tool_call().name.as_str();
    let (mode, rules) = {
        let state = state.lock().unwrap_or_else(PoisonError::into_inner);
        (state.permission_mode, state.rules_of(name))
    };
    let tool = toolkit.get(name);
    // A rule with a pattern covers the calls its tool says it does (read outside the state's
    // lock: the tool's code); one whose tool cannot read it allows nothing and denies or asks
    // about every call.
    let applies = |behavior: PermissionBehavior| {
        rules
            .iter()
            .filter(|r| r.behavior == behavior)
            .any(|r| match &r.rule_content {
                None => true,
                Some(content) => tool
                    .as_ref()
                    .and_then(|t| t.matches_rule(content, req.input()))
                    .unwrap_or(behavior != PermissionBehavior::Allow),
            })
    };
    if applies(PermissionBehavior::Deny) {
        return PermissionDecision::Deny {
            message: format!("The tool '{name}' is denied by a permission rule."),
        };
    }
    if applies(PermissionBehavior::Ask) {
        return ask(mode, name, None);
    }
    // The checks that read the arguments, of a tool that says they do: the others keep their
    // defaults (`Tool::decides_on_input`) and are not called, so arguments checked as text are
    // not parsed for them.
    let deciding = tool.as_ref().filter(|t| t.decides_on_input());
    let read_only = req.tool().read_only || deciding.is_some_and(|t| t.read_only_call(req.input()));
    if read_only {
        return PermissionDecision::Allow;
    }
    if mode == PermissionMode::Explore {
        return PermissionDecision::Deny {
            message: format!("Permission denied for {name} (explore mode is read-only)"),
        };
    }
    let mut asked = None;
    if let Some(tool) = deciding {
        if mode != PermissionMode::Bypass && tool.requires_confirmation(req.input()) {
            return ask(mode, name, None);
        }
        match tool.check_permission(req.input()) {
            // Bypass skips the tool's asks.
            Some(PermissionDecision::Ask { .. }) if mode == PermissionMode::Bypass => {}
            Some(PermissionDecision::Ask { suggested_rules }) => asked = Some(suggested_rules),
            Some(decision) => return decision,
            None => {}
        }
    }
    if mode == PermissionMode::Bypass || applies(PermissionBehavior::Allow) {
        return PermissionDecision::Allow;
    }
    if asked.is_some() || tool.as_ref().is_some_and(|t| t.destructive()) {
        return ask(mode, name, asked);
    }
    match (mode, default) {
        (PermissionMode::AcceptEdits, _) => PermissionDecision::Allow,
        (_, PermissionDecision::Ask { .. }) => ask(mode, name, None),
        (_, other) => other.clone(),
    }
}

/// An ask, with the tool's suggestions or the reference's default one; a deny in `DontAsk`.
fn ask(mode: PermissionMode, name: &str, suggested: Option<Vec<PermissionRule>>) -> PermissionDecision {
    if mode == PermissionMode::DontAsk {
        return PermissionDecision::Deny {
            message: format!(
                "Permission denied for {name} (dont_ask mode - ASK converted to DENY, user not available)"
            ),
        };
    }
    let suggested_rules = match suggested {
        Some(rules) if !rules.is_empty() => rules,
        _ => vec![suggested_rule(name)],
    };
    PermissionDecision::Ask { suggested_rules }
}

/// The reference's default suggestion: allow this tool from now on.
pub(crate) fn suggested_rule(tool_name: &str) -> PermissionRule {
    PermissionRule::new(tool_name, PermissionBehavior::Allow, "suggested")
}

/// The rules suggested to the user so far in one batch of concurrent calls.
///
/// As in the reference, a later call whose ask an earlier call's suggested rule covers (an
/// allow rule for the same tool, with no pattern: one with a pattern covers only what it
/// names, so the later call is asked about) is not asked about: it stays pending, and is
/// decided again when the reply resumes, by then under the rules the user accepted. A call
/// that [requires confirmation](crate::toolkit::Tool::requires_confirmation) is always asked
/// about.
///
/// Only what covers a later ask is kept: the tools an allow rule was suggested for, hashed, so
/// a batch of many calls that ask is checked in time linear in their number.
#[derive(Debug, Default, Clone)]
pub(crate) struct AskedRules(Arc<Mutex<std::collections::HashSet<String>>>);

impl AskedRules {
    /// Whether `call`'s ask repeats an earlier one of the batch; records its rules if not.
    pub(crate) fn repeats(&self, call: &ToolCallBlock, suggested: &[PermissionRule], safety: bool) -> bool {
        let mut allowed = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !safety && allowed.contains(&call.name) {
            return true;
        }
        for rule in suggested
            .iter()
            .filter(|r| r.behavior == PermissionBehavior::Allow && r.rule_content.is_none())
        {
            if !allowed.contains(&rule.tool_name) {
                allowed.insert(rule.tool_name.clone());
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ask_is_covered_by_an_allow_rule_suggested_earlier_in_the_batch_for_its_tool() {
        let asked = AskedRules::default();
        let call = |name: &str| ToolCallBlock::new("c", name, "{}");
        let rule = |name: &str, behavior| PermissionRule::new(name, behavior, "suggested");
        assert!(!asked.repeats(&call("rm"), &[rule("rm", PermissionBehavior::Deny)], false));
        assert!(!asked.repeats(&call("rm"), &[], false), "a deny rule covers nothing");
        // Calls that must be confirmed are asked about, many times over, whatever was suggested.
        for _ in 0..10_000 {
            assert!(!asked.repeats(&call("rm"), &[rule("rm", PermissionBehavior::Allow)], true));
        }
        assert!(asked.repeats(&call("rm"), &[], false), "covered by the allow rule");
        assert!(!asked.repeats(&call("ls"), &[], false), "another tool is not");
        assert_eq!(
            asked.0.lock().unwrap_or_else(PoisonError::into_inner).len(),
            1,
            "kept once"
        );
    }
}
