//! Pre/post hooks around `reply`, `observe`, reasoning and acting, registered by name on one
//! agent or on a registry shared by many (the reference's 1.x hook system).
//!
//! [`Hooks`] is a [`Middleware`](towerscope_core::Middleware): installed with
//! `AgentBuilder::middleware`, it puts one [`HooksLayer`] on `on_reply`, `on_reasoning` and
//! `on_acting`, and an [`ObserveHook`](towerscope_core::ObserveHook) around `observe`. There is no
//! second mechanism: hooks are middleware, placed where the bundle is installed in the onion.
//! The print hooks are the exception, since an agent streams events and never prints: a console
//! that renders an agent's reply runs them ([`Hooks::pre_print`], [`Hooks::post_print`]) around
//! each piece it prints, finding the agent's bundle with `Agent::middleware::<Hooks>()`.
//!
//! - **Instance and class hooks.** Each `Hooks` has its own registry (instance hooks) and
//!   optionally a shared [`HookRegistry`] (class hooks) given to every agent built with
//!   [`Hooks::with_class`]. Instance hooks run first, then class hooks, each in registration
//!   order.
//! - **Registration.** [`HookRegistry::register`] keeps the order; registering a name again
//!   replaces the hook in place. [`HookRegistry::remove`] of an unknown name fails with
//!   [`UnknownHook`]. [`HookRegistry::clear`] clears one hook type, [`HookRegistry::clear_all`]
//!   all. The registries sit behind an `Arc<RwLock<..>>` (never held while a hook runs), so
//!   changes made after the agent is built take effect on its next call.
//! - **Replacing.** A pre hook returns a replacement input or `None` to keep the current one; a
//!   post hook a replacement output or `None`. Each hook sees what the previous ones returned;
//!   hooks receive references, so in-place edits are impossible (the reference loses them).
//! - **What is stored.** As in the reference, a `post_reply` or `post_reasoning` replacement is
//!   what the caller gets, not what the agent stored: the answer went into the context (and
//!   out as events) before the hook ran, so the model sees the original on the next turn. A
//!   `post_acting` replacement is the tool's result, stored and sent to the model. A guardrail
//!   that must change what the model sees next belongs on `on_reasoning` or `on_model_call`.
//! - **Once per call.** Each position's layer runs its hooks once per call (the reference needs a
//!   re-entrancy guard for `super().reply()`; a position is called once).
//!
//! # Hook types, in Rust terms
//!
//! | Hook             | Reference arguments → output            | Receives                                        | May replace                        |
//! |------------------|------------------------------------------|-------------------------------------------------|------------------------------------|
//! | `pre_reply`      | `msg`, `structured_model`                | `&AgentContext`, `&ReplyInput`                  | the [`ReplyInput`](towerscope_core::ReplyInput) (messages, or a resume event) |
//! | `post_reply`     | → `Msg`                                  | context, input, final `&Msg`                    | the final [`Msg`](towerscope_core::Msg) |
//! | `pre_observe`    | `msg`                                    | agent name, `&[Msg]`                            | the messages to store              |
//! | `post_observe`   | → `None`                                 | agent name, the stored `&[Msg]`                 | nothing (`observe` has no output)  |
//! | `pre_reasoning`  | `tool_choice`                            | context, `Option<&ToolChoice>`                  | the tool choice                    |
//! | `post_reasoning` | → `Msg`                                  | context, tool choice, candidate `Option<&Msg>` (`None`: the round ended in tool calls) | the candidate final message |
//! | `pre_acting`     | `tool_call`                              | context, `&ToolCallBlock`                       | the tool call (its `input`)        |
//! | `post_acting`    | → structured output or `None`            | context, tool call, the final `&ToolResponse`   | the tool's response                |
//! | `pre_print`      | `msg`, `last`, `speech`                  | agent name, `&PrintChunk` (one streamed piece)  | the chunk (empty text: print nothing) |
//! | `post_print`     | → `None`                                 | agent name, the printed `&PrintChunk`           | nothing (printing has no output)   |
//!
//! The reference prints a whole message again at every streamed chunk; a console here prints
//! each piece once (a text delta, a tool-call line), so the print hooks see pieces, each with
//! its [`PrintKind`] and whether it ends its block.
//! Hook types are an enum, so the reference's errors for unknown hook types cannot happen.
//! Hooks are synchronous closures; the post hooks of replies, reasoning steps and tool calls run
//! when the final message or response passes through the stream (events already streamed are
//! not changed).
//!
//! # Example
//!
//! ```
//! use towerscope_agent::Agent;
//! use towerscope_core::{Msg, ReplyInput};
//! use towerscope_layers::hooks::{Hook, HookRegistry, HookType, Hooks};
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! // Class hooks: shared by every agent built with `Hooks::with_class(&class)`.
//! let class = HookRegistry::new();
//! class.register("sign", Hook::post_reply(|_ctx, _input, msg| {
//!     let mut msg = msg.clone();
//!     msg.content.push(towerscope_core::TextBlock::new(" -- the team").into());
//!     Some(msg)
//! }));
//!
//! let hooks = Hooks::with_class(&class);
//! hooks.register("polite", Hook::pre_reply(|_ctx, input| {
//!     let msgs = input.messages()?;
//!     let text = msgs.last()?.text_content()?;
//!     Some(ReplyInput::from(Msg::user("user", format!("{text} Please answer politely."))))
//! }));
//!
//! let model = ScriptedModel::new("scripted", [ScriptedResponse::text("Hello!")]);
//! let agent = Agent::builder("assistant").model(model.clone()).middleware(hooks.clone()).build()?;
//! let answer = agent.reply(Msg::user("user", "Hi.")).await?;
//! assert_eq!(answer.text_content().as_deref(), Some("Hello!\n -- the team"));
//! // The last user message the model saw (the runtime-state hint comes after it).
//! let request = &model.requests()[0];
//! let seen = request.messages.iter().rev().find(|m| m.role == towerscope_core::Role::User);
//! let seen = seen.and_then(|m| m.text_content());
//! assert_eq!(seen.as_deref(), Some("Hi. Please answer politely."));
//!
//! // Removing an unknown hook is an error that says what is registered.
//! let err = hooks.remove(HookType::PreReply, "rude").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "no pre_reply hook named 'rude' is registered (registered: polite); check the name and the hook type"
//! );
//! # Ok(()) }
//! ```

mod bundle;
mod hook;
mod post;
mod print;
mod registry;
mod service;

pub use bundle::Hooks;
pub use hook::{Hook, HookType};
pub use post::{ActingPostHooks, ReasoningPostHooks, ReplyPostHooks};
pub use print::{PrintChunk, PrintKind};
pub use registry::{HookRegistry, UnknownHook};
pub use service::{HooksLayer, HooksService, ResponseFuture};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};

    use towerscope_core::{AgentContext, Msg, ObserveHook, ReplyInput};

    use super::*;

    fn log_hook(log: &Arc<Mutex<Vec<String>>>, tag: &str) -> Hook {
        let (log, tag) = (Arc::clone(log), tag.to_owned());
        Hook::pre_reply(move |_, _| {
            log.lock().unwrap().push(tag.clone());
            None
        })
    }

    fn run_pre_reply(hooks: &Hooks) {
        let ctx = AgentContext::new("a", "s", "r");
        let input = ReplyInput::from(Msg::user("u", "x"));
        for hook in hooks.collect(HookType::PreReply, Hook::as_pre_reply) {
            hook(&ctx, &input);
        }
    }

    #[test]
    fn order_replacement_in_place_and_instance_before_class() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let class = HookRegistry::new();
        class.register("c1", log_hook(&log, "c1"));
        let hooks = Hooks::with_class(&class);
        hooks
            .register("a", log_hook(&log, "a"))
            .register("b", log_hook(&log, "b"));
        hooks.register("a", log_hook(&log, "a2")); // replaces "a", keeps its place
        class.register("c0", log_hook(&log, "c0"));
        run_pre_reply(&hooks);
        assert_eq!(*log.lock().unwrap(), ["a2", "b", "c1", "c0"]);
        assert_eq!(hooks.instance().names(HookType::PreReply), ["a", "b"]);
        assert_eq!(class.names(HookType::PreReply), ["c1", "c0"]);
    }

    #[test]
    fn remove_and_clear() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let hooks = Hooks::new();
        hooks.register("a", log_hook(&log, "a"));
        hooks.register("obs", Hook::post_observe(|_, _| {}));
        let err = hooks.remove(HookType::PostReply, "a").unwrap_err();
        assert_eq!(err.registered, Vec::<String>::new());
        assert!(
            err.to_string()
                .contains("no post_reply hook named 'a' is registered (none of that type is)")
        );
        let agent_err: towerscope_core::AgentError = err.into();
        assert!(
            agent_err
                .to_string()
                .starts_with("validation failed: no post_reply hook")
        );
        assert_eq!(
            hooks.remove(HookType::PreReply, "a").unwrap().hook_type(),
            HookType::PreReply
        );
        assert!(hooks.remove(HookType::PreReply, "a").is_err(), "removed already");
        hooks.register("a", log_hook(&log, "a"));
        hooks.clear(HookType::PreReply);
        assert_eq!(hooks.instance().len(), 1, "only the observe hook is left");
        hooks.clear_all();
        assert!(hooks.instance().is_empty());
    }

    #[test]
    fn print_hooks_rewrite_suppress_and_see_what_was_printed() {
        let class = HookRegistry::new();
        class.register(
            "shout",
            Hook::pre_print(|_, chunk| Some(PrintChunk::new(chunk.kind, chunk.text.to_uppercase(), chunk.last))),
        );
        let hooks = Hooks::with_class(&class);
        assert!(hooks.has_print_hooks());
        hooks.register(
            "no-thinking",
            Hook::pre_print(|_, chunk| {
                (chunk.kind == PrintKind::Thinking).then(|| PrintChunk::new(chunk.kind, "", chunk.last))
            }),
        );
        let printed = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&printed);
        hooks.register(
            "log",
            Hook::post_print(move |name, chunk| sink.lock().unwrap().push(format!("{name}:{}", chunk.text))),
        );
        let text = hooks.pre_print("bot", PrintChunk::new(PrintKind::Text, "hello", false));
        assert_eq!(text.text, "HELLO", "instance hooks run first, then class hooks");
        hooks.post_print("bot", &text);
        let thinking = hooks.pre_print("bot", PrintChunk::new(PrintKind::Thinking, "hmm", false));
        assert!(thinking.is_suppressed());
        assert_eq!(*printed.lock().unwrap(), ["bot:HELLO"]);
        assert_eq!(HookType::PrePrint.as_str(), "pre_print");
        assert!(!Hooks::new().has_print_hooks());
    }

    #[test]
    fn observe_hooks_replace_and_see_the_messages() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let hooks = Hooks::new();
        hooks.register(
            "tag",
            Hook::pre_observe(|name, msgs| {
                Some(
                    msgs.iter()
                        .map(|m| Msg::user("user", format!("[{name}] {}", m.text_content().unwrap_or_default())))
                        .collect(),
                )
            }),
        );
        let sink = Arc::clone(&seen);
        hooks.register(
            "log",
            Hook::post_observe(move |_, msgs| sink.lock().unwrap().extend(msgs.iter().filter_map(Msg::text_content))),
        );
        let stored = hooks.pre_observe("bot", vec![Msg::user("user", "hello")]).unwrap();
        hooks.post_observe("bot", &stored).unwrap();
        assert_eq!(*seen.lock().unwrap(), ["[bot] hello"]);
    }
}
