//! The console's output, as a person sees it: snapshots of a reply with thinking, text, tool
//! calls, a failed tool and a confirmation, with and without colour; print hooks; silence; and
//! a whole chat driven through a channel, with y, n, a answers and Ctrl-C.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::limited;
use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::{FunctionTool, ToolError};
use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
use towerscope_core::{AgentEvent, Msg, PermissionBehavior, PermissionDecision, PermissionRule, ReplyItem};
use towerscope_layers::hooks::{Hook, HookRegistry, Hooks, PrintChunk, PrintKind};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_team::Participant;
use towerscope_team::console::{Chat, ChatEnd, Console};
use towerscope_team::user::{ChannelInput, UserAgent};

/// Get the weather of a city.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    /// The city.
    city: String,
}

fn ask_rule() -> PermissionDecision {
    PermissionDecision::Ask {
        suggested_rules: vec![PermissionRule::new("book", PermissionBehavior::Allow, "suggested")],
    }
}

/// An agent that thinks, calls a tool that works, one that fails, then one that needs the
/// user's permission, and answers.
fn travel_agent(extra: Option<Hooks>) -> Agent {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::thinking("The user wants Paris. Weather first.").and_tool_call(
                "c1",
                "weather",
                r#"{"city": "Paris"}"#,
            ),
            ScriptedResponse::tool_call("c2", "forecast", r#"{"city":"Paris"}"#),
            ScriptedResponse::text("Sunny today; no forecast.").and_tool_call("c3", "book", r#"{"city": "Paris"}"#),
            ScriptedResponse::text("Booked: Paris, sunny."),
        ],
    );
    let mut builder = Agent::builder("travel")
        .model(model)
        .tool(FunctionTool::new("weather", |c: City| async move {
            format!("{}: sunny, 21 °C", c.city)
        }))
        .tool(FunctionTool::new("forecast", |_: City| async move {
            Err::<String, _>(ToolError::new("the forecast service is down"))
        }))
        .tool(
            FunctionTool::new("book", |c: City| async move { format!("booked {}", c.city) })
                .permission(|_| Some(ask_rule())),
        );
    if let Some(hooks) = extra {
        builder = builder.middleware(hooks);
    }
    builder.build().unwrap()
}

/// Renders the whole travel conversation: the reply parks, the console shows the request, the
/// user confirms, the reply resumes.
async fn render_trip(mut console: Console<Vec<u8>>, agent: &Agent) -> String {
    console.watch(agent);
    let mut stream = Participant::reply_stream(agent, Msg::user("user", "Book me Paris if it is sunny.").into());
    let mut asked = None;
    while let Some(item) = stream.next().await {
        console.render(None, &item);
        if let Ok(ReplyItem::Event(AgentEvent::RequireUserConfirm(e))) = item {
            asked = Some(e);
        }
    }
    let asked = asked.unwrap();
    let confirm = UserConfirmResultEvent::new(
        asked.reply_id.clone(),
        vec![ConfirmResult::new(true, asked.tool_calls[0].clone())],
    );
    console
        .show(Participant::reply_stream(agent, confirm.into()))
        .await
        .unwrap();
    String::from_utf8(console.into_inner()).unwrap()
}

#[tokio::test]
async fn a_reply_with_thinking_tools_a_failure_and_a_confirmation() {
    let screen = render_trip(Console::new(Vec::new()), &travel_agent(None)).await;
    insta::assert_snapshot!("trip_plain", screen);
}

#[tokio::test]
async fn the_same_reply_in_colour() {
    let screen = render_trip(Console::new(Vec::new()).colors(true), &travel_agent(None)).await;
    assert!(screen.contains("\u{1b}[32m  ✓ weather"), "a success is green");
    insta::assert_snapshot!("trip_colour", screen.replace('\u{1b}', "<ESC>"));
}

#[tokio::test]
async fn print_hooks_rewrite_and_suppress_what_is_printed_instance_then_class() {
    let class = HookRegistry::new();
    class.register(
        "loud",
        Hook::pre_print(|_, c| {
            (c.kind == PrintKind::Text).then(|| PrintChunk::new(c.kind, c.text.to_uppercase(), c.last))
        }),
    );
    let hooks = Hooks::with_class(&class);
    hooks.register(
        "no-thinking",
        Hook::pre_print(|_, c| (c.kind == PrintKind::Thinking).then(|| PrintChunk::new(c.kind, "", c.last))),
    );
    let printed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&printed);
    hooks.register(
        "log",
        Hook::post_print(move |who, c| log.lock().unwrap().push(format!("{who}/{}", c.kind))),
    );
    let screen = render_trip(Console::new(Vec::new()), &travel_agent(Some(hooks))).await;
    insta::assert_snapshot!("trip_hooked", screen);
    let printed = printed.lock().unwrap();
    assert!(
        !printed.iter().any(|p| p == "travel/thinking"),
        "suppressed pieces are not printed"
    );
    assert!(printed.iter().any(|p| p == "travel/tool_result"));
}

#[tokio::test]
async fn a_silent_console_prints_nothing() {
    let screen = render_trip(Console::new(Vec::new()).silent(true), &travel_agent(None)).await;
    assert_eq!(screen, "");
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_reply_says_so() {
    let model =
        ScriptedModel::new(
            "m",
            [ScriptedResponse::text("Once upon a time there was a very long story")
                .chunk_delay(Duration::from_millis(10))],
        );
    let agent = Agent::builder("teller").model(model).build().unwrap();
    let mut console = Console::new(Vec::new());
    let stopper = agent.clone();
    let stop = async move {
        tokio::time::sleep(Duration::from_millis(35)).await;
        assert!(stopper.interrupt());
    };
    let (reply, ()) = tokio::join!(
        console.show(Participant::reply_stream(&agent, Msg::user("u", "story").into())),
        stop
    );
    assert_eq!(
        reply.unwrap().finished_reason,
        Some(towerscope_core::ReplyFinishedReason::Interrupted)
    );
    insta::assert_snapshot!("interrupted", String::from_utf8(console.into_inner()).unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_chat_with_yes_no_always_and_ctrl_c() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "book", r#"{"city": "Paris"}"#),
            ScriptedResponse::text("Booked Paris."),
            ScriptedResponse::tool_call("c2", "book", r#"{"city": "Rome"}"#),
            ScriptedResponse::text("Not booked."),
            ScriptedResponse::tool_call("c3", "book", r#"{"city": "Oslo"}"#),
            ScriptedResponse::text("Booked Oslo."),
            ScriptedResponse::tool_call("c4", "book", r#"{"city": "Bern"}"#),
            ScriptedResponse::text("Booked Bern without asking."),
            ScriptedResponse::text("A long story that goes on and on and on").chunk_delay(Duration::from_millis(100)),
        ],
    );
    let agent = Agent::builder("travel")
        .model(model)
        .tool(FunctionTool::new("book", |c: City| async move {
            format!("booked {}", c.city)
        }))
        .default_permission(ask_rule())
        .build()
        .unwrap();
    let (input, person) = ChannelInput::new();
    let (ctrl_c, presses) = tokio::sync::mpsc::unbounded_channel::<()>();
    let presses = futures_util::stream::unfold(presses, |mut rx| async move { rx.recv().await.map(|()| ((), rx)) });
    for typed in ["Paris?", "y", "Rome?", "n", "Oslo?", "a", "Bern?", "A story?"] {
        person.send_text(typed).unwrap();
    }
    let chat = Chat::new(UserAgent::new("me").with_input(input), agent)
        .console(Console::new(Vec::new()))
        .interrupts(presses);
    let press = async move {
        tokio::time::sleep(Duration::from_millis(350)).await;
        ctrl_c.send(()).unwrap(); // in the middle of the story
        tokio::time::sleep(Duration::from_millis(50)).await;
        person.send_text("exit").unwrap();
    };
    let (ended, ()) = tokio::join!(chat.run(), press);
    let (end, console) = ended.unwrap();
    assert_eq!(end, ChatEnd::Exit);
    insta::assert_snapshot!("chat", String::from_utf8(console.into_inner()).unwrap());
}

#[tokio::test(start_paused = true)]
async fn speakers_streaming_at_once_never_share_a_line() {
    let agent = |name: &str, text: &str, ms: u64| {
        let model = ScriptedModel::new(
            "m",
            [ScriptedResponse::text(text).chunk_delay(Duration::from_millis(ms))],
        );
        Agent::builder(name).model(model).build().unwrap()
    };
    let panel = towerscope_team::pipeline::FanoutPipeline::new([
        agent("ann", "one two three four", 10),
        agent("bo", "five six", 3),
    ]);
    let mut console = Console::new(Vec::new());
    let finals = console
        .show_merged(panel.stream(Msg::user("host", "count").into()))
        .await;
    assert_eq!(finals.len(), 2);
    assert_eq!(
        String::from_utf8(console.into_inner()).unwrap(),
        "bo: five six\nann: one two three four\n",
        "bo's first word came first: bo holds the line; ann follows, whole"
    );
}

#[tokio::test]
async fn editing_the_arguments_runs_the_tool_with_the_new_ones() {
    let model = ScriptedModel::new(
        "m",
        [
            // The model's arguments hold a terminal control (C1 CSI, which JSON lets a string
            // hold as it is).
            ScriptedResponse::tool_call("c1", "book", "{\"city\": \"Paris\", \"x\": \"\u{9b}31mpwned\"}"),
            ScriptedResponse::text("Booked."),
        ],
    );
    let booked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = std::sync::Arc::clone(&booked);
    let agent = Agent::builder("travel")
        .model(model.clone())
        .tool(FunctionTool::new("book", move |c: City| {
            let record = std::sync::Arc::clone(&record);
            async move {
                record.lock().unwrap().push(c.city.clone());
                format!("booked {}", c.city)
            }
        }))
        .default_permission(ask_rule())
        .build()
        .unwrap();
    let (input, person) = ChannelInput::new();
    let (prompts_tx, mut prompts) = tokio::sync::mpsc::unbounded_channel();
    let input = input.with_prompts(prompts_tx);
    // `e`, then arguments that are not an object (asked again), then the new ones.
    for typed in ["Paris?", "e", "[1, 2]", r#"{"city": "Rome"}"#, "exit"] {
        person.send_text(typed).unwrap();
    }
    let chat = Chat::new(UserAgent::new("me").with_input(input), agent).console(Console::new(Vec::new()));
    let (end, console) = chat.run().await.unwrap();
    assert_eq!(end, ChatEnd::Exit);
    assert_eq!(
        *booked.lock().unwrap(),
        ["Rome"],
        "the tool ran once, with the edited arguments"
    );
    // The model saw the edited call's result.
    let requests = model.requests();
    assert!(format!("{:?}", requests[1].messages.last().unwrap()).contains("booked Rome"));
    let printed = String::from_utf8(console.into_inner()).unwrap();
    assert!(printed.contains("Booked."), "{printed}");
    // The person was asked again, told why, through their input.
    let mut asked = Vec::new();
    while let Ok(request) = prompts.try_recv() {
        asked.push(request.prompt);
    }
    let edits: Vec<&String> = asked.iter().filter(|p| p.contains("New arguments for book")).collect();
    assert_eq!(edits.len(), 2, "{asked:?}");
    assert!(!edits[0].contains("not a JSON object"), "{asked:?}");
    assert!(
        !edits[0].contains('\u{9b}') && edits[0].contains("pwned"),
        "the arguments are shown, their escape not sent: {asked:?}"
    );
    assert!(
        edits[1].starts_with("Those arguments are not a JSON object. New arguments for book"),
        "{asked:?}"
    );
}

#[test]
fn the_environment_variable_silences_the_console() {
    // A child process of this test binary prints through `Console::stdout()` with the variable
    // set, so no other test sees it.
    if std::env::var_os("CONSOLE_SILENCE_CHILD").is_some() {
        let mut console = Console::stdout();
        console.note("console-marker");
        console.end_line();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for (value, silent) in [("true", true), ("1", true), ("TRUE", true), ("no", false), ("", false)] {
        let out = std::process::Command::new(&exe)
            .args([
                "--exact",
                "the_environment_variable_silences_the_console",
                "--nocapture",
            ])
            .env("CONSOLE_SILENCE_CHILD", "1")
            .env(towerscope_team::console::DISABLE_OUTPUT_ENV, value)
            .output()
            .unwrap();
        assert!(out.status.success(), "{value}: {out:?}");
        let printed = String::from_utf8_lossy(&out.stdout).contains("console-marker");
        assert_eq!(printed, !silent, "{value:?}");
    }
}

#[tokio::test]
async fn a_chat_asks_for_every_member_parked_at_once() {
    let asking = |name: &str, path: &str, after: &str| {
        let call = ScriptedResponse::tool_call("c1", "book", format!(r#"{{"city": "{path}"}}"#));
        let model = ScriptedModel::new("m", [call, ScriptedResponse::text(after)]);
        let agent = Agent::builder(name)
            .model(model.clone())
            .tool(FunctionTool::new("book", |c: City| async move {
                format!("booked {}", c.city)
            }))
            .default_permission(ask_rule())
            .build()
            .unwrap();
        (agent, model)
    };
    let (ann, ann_model) = asking("ann", "Paris", "Ann booked.");
    let (bo, bo_model) = asking("bo", "Rome", "Bo booked.");
    let panel = towerscope_team::pipeline::FanoutPipeline::new([ann, bo]);
    let (input, person) = ChannelInput::new();
    let (prompts_tx, mut prompts) = tokio::sync::mpsc::unbounded_channel();
    let input = input.with_prompts(prompts_tx);
    for typed in ["Book both.", "y", "y", "exit"] {
        person.send_text(typed).unwrap();
    }
    let chat = Chat::new(UserAgent::new("me").with_input(input), panel).console(Console::new(Vec::new()));
    let (end, console) = chat.run().await.unwrap();
    assert_eq!(end, ChatEnd::Exit);

    let mut asked = Vec::new();
    while let Ok(request) = prompts.try_recv() {
        asked.push(request.prompt);
    }
    let confirmations = asked.iter().filter(|p| p.starts_with("Allow book?")).count();
    assert_eq!(confirmations, 2, "one prompt for each member's call: {asked:?}");
    for (name, model, city) in [("ann", &ann_model, "Paris"), ("bo", &bo_model, "Rome")] {
        let requests = model.requests();
        assert_eq!(requests.len(), 2, "{name} went on after its answer");
        let result = format!("{:?}", requests[1].messages.last().unwrap());
        assert!(result.contains(&format!("booked {city}")), "{name}: {result}");
    }
    let printed = String::from_utf8(console.into_inner()).unwrap();
    assert!(
        printed.contains("Ann booked.") && printed.contains("Bo booked."),
        "{printed}"
    );
}

/// A team member's question in the terminal chat: the chat asks it, the answer reaches the
/// member, and the leader answers with the member's result.
#[tokio::test]
async fn a_chat_asks_a_team_members_question_and_the_team_goes_on() {
    let call = ScriptedResponse::tool_call("c1", "book", r#"{"city": "Paris"}"#);
    let booker_model = ScriptedModel::new("m", [call, ScriptedResponse::text("Paris is booked.")]);
    let booker = Agent::builder("booker")
        .model(booker_model.clone())
        .tool(FunctionTool::new("book", |c: City| async move {
            format!("booked {}", c.city)
        }))
        .default_permission(ask_rule())
        .build()
        .unwrap();
    let assign = serde_json::json!({"member": "booker", "prompt": "Book Paris."}).to_string();
    let leader_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("a1", towerscope_team::pipeline::ASSIGN_TOOL, assign),
            ScriptedResponse::text("Your trip is set."),
        ],
    );
    let team = towerscope_team::pipeline::TeamPipeline::new(
        Agent::builder("lead").model(leader_model.clone()),
        [towerscope_team::pipeline::TeamMember::new(booker, "Books trips.")],
    )
    .unwrap();
    let (input, person) = ChannelInput::new();
    let (prompts_tx, mut prompts) = tokio::sync::mpsc::unbounded_channel();
    let input = input.with_prompts(prompts_tx);
    for typed in ["Paris, please.", "y", "exit"] {
        person.send_text(typed).unwrap();
    }
    let chat = Chat::new(UserAgent::new("me").with_input(input), team).console(Console::new(Vec::new()));
    let (end, console) = chat.run().await.unwrap();
    assert_eq!(end, ChatEnd::Exit);

    let mut asked = Vec::new();
    while let Ok(request) = prompts.try_recv() {
        asked.push(request.prompt);
    }
    assert_eq!(
        asked.iter().filter(|p| p.starts_with("Allow book?")).count(),
        1,
        "{asked:?}"
    );
    assert_eq!(booker_model.calls(), 2, "the member went on after the answer");
    let result = format!("{:?}", leader_model.requests()[1].messages.last().unwrap());
    assert!(result.contains("Paris is booked."), "{result}");
    let printed = String::from_utf8(console.into_inner()).unwrap();
    assert!(printed.contains("Your trip is set."), "{printed}");
}

/// A reply asks about one call while another still runs, and Ctrl-C ends it: its question is
/// closed with it, and the chat does not ask it.
#[tokio::test(start_paused = true)]
async fn a_question_whose_reply_ended_is_not_asked() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "book", r#"{"city": "Paris"}"#).and_tool_call(
                "c2",
                "weather",
                r#"{"city": "Paris"}"#,
            ),
            ScriptedResponse::text("unused"),
        ],
    );
    let agent = Agent::builder("travel")
        .model(model.clone())
        .tool(
            FunctionTool::new("book", |c: City| async move { format!("booked {}", c.city) })
                .concurrency_safe(true)
                .requires_confirmation(|_| true),
        )
        .tool(
            FunctionTool::new("weather", |c: City| async move {
                tokio::time::sleep(Duration::from_secs(10)).await;
                format!("{}: sunny", c.city)
            })
            .concurrency_safe(true),
        )
        .build()
        .unwrap();
    let (input, person) = ChannelInput::new();
    let (prompts_tx, mut prompts) = tokio::sync::mpsc::unbounded_channel();
    let input = input.with_prompts(prompts_tx);
    let (ctrl_c, presses) = tokio::sync::mpsc::unbounded_channel::<()>();
    let presses = futures_util::stream::unfold(presses, |mut rx| async move { rx.recv().await.map(|()| ((), rx)) });
    person.send_text("Book Paris if sunny.").unwrap();
    let chat = Chat::new(UserAgent::new("me").with_input(input), agent)
        .console(Console::new(Vec::new()))
        .interrupts(presses);
    let press = async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        ctrl_c.send(()).unwrap(); // while the weather runs, the booking asked about
        tokio::time::sleep(Duration::from_secs(1)).await;
        person.send_text("exit").unwrap();
    };
    let (ended, ()) = tokio::join!(chat.run(), press);
    let (end, console) = ended.unwrap();
    assert_eq!(end, ChatEnd::Exit);
    let mut asked = Vec::new();
    while let Ok(request) = prompts.try_recv() {
        asked.push(request.prompt);
    }
    let printed = String::from_utf8(console.into_inner()).unwrap();
    assert!(printed.contains("interrupted"), "{printed}");
    assert!(
        !asked.iter().any(|p| p.starts_with("Allow book?")),
        "the closed reply's question is not asked: {asked:?}\n{printed}"
    );
    assert_eq!(model.calls(), 1);
}

/// The interrupt stream ends (a front end feeding Ctrl-C through a channel went away) before
/// and during a reply: that is no Ctrl-C, the reply runs to its end, and the chat goes on.
#[tokio::test(start_paused = true)]
async fn an_interrupt_stream_that_ends_interrupts_nothing() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("A story told slowly").chunk_delay(Duration::from_millis(10))],
    );
    let agent = Agent::builder("teller").model(model).build().unwrap();
    let (input, person) = ChannelInput::new();
    person.send_text("A story?").unwrap();
    person.send_text("exit").unwrap();
    let chat = Chat::new(UserAgent::new("me").with_input(input), agent)
        .console(Console::new(Vec::new()))
        .interrupts(futures_util::stream::empty());
    let (end, console) = chat.run().await.unwrap();
    assert_eq!(end, ChatEnd::Exit);
    let printed = String::from_utf8(console.into_inner()).unwrap();
    assert!(printed.contains("A story told slowly"), "{printed}");
    assert!(!printed.contains("nterrupted"), "{printed}");
}

/// A tool's result and the model's text hold escape sequences (a clipboard write, the
/// alternate screen): the console shows them, the terminal never receives them.
#[tokio::test]
async fn text_a_terminal_would_act_on_is_shown_not_sent() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "fetch", r#"{"city": "Oslo"}"#),
            ScriptedResponse::text("done \x1b[?1049h \u{202e}txt.exe"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(FunctionTool::new("fetch", |_: City| async move {
            "\x1b]52;c;aGk=\x07page\r\n".to_owned()
        }))
        .build()
        .unwrap();
    let mut console = Console::new(Vec::new());
    console
        .show(Participant::reply_stream(&agent, Msg::user("u", "go").into()))
        .await
        .unwrap();
    let printed = String::from_utf8(console.into_inner()).unwrap();
    assert!(!printed.contains(['\x1b', '\x07', '\r']), "{printed:?}");
    assert!(printed.contains("^[]52;c;aGk=^Gpage"), "{printed}");
    assert!(printed.contains("done ^[[?1049h"), "{printed}");
    // A bidirectional override, which makes the terminal show the text reversed, is named.
    assert!(
        !printed.contains('\u{202e}') && printed.contains("<U+202E>txt.exe"),
        "{printed}"
    );
}

/// A fan-out shown in the console: each member's answer once, as it streamed (the combined
/// message that ends the fan-out's reply repeats them, and was printed again).
#[tokio::test]
async fn a_fanouts_answers_show_once() {
    let says = |name: &str, text: &str| {
        Agent::builder(name)
            .model(ScriptedModel::new("m", [ScriptedResponse::text(text)]))
            .build()
            .unwrap()
    };
    // A fan-out inside another: its combined message stands for its members' replies.
    let inner =
        towerscope_team::pipeline::FanoutPipeline::new([says("ann", "Tea please."), says("bo", "Coffee please.")]);
    let panel = towerscope_team::pipeline::FanoutPipeline::from_shared([
        std::sync::Arc::new(inner.named("pair")) as std::sync::Arc<dyn Participant>,
        std::sync::Arc::new(says("cy", "Water please.")),
    ]);
    let mut console = Console::new(Vec::new());
    let combined = console
        .show(Participant::reply_stream(
            &panel,
            Msg::user("host", "Tea or coffee?").into(),
        ))
        .await
        .unwrap();
    assert!(combined.text_content().unwrap().contains("ann: Tea please."));
    let screen = String::from_utf8(console.into_inner()).unwrap();
    for answer in ["Tea please.", "Coffee please.", "Water please."] {
        assert_eq!(screen.matches(answer).count(), 1, "{screen}");
    }
}

/// A confirmation prompt names the tool with its control characters shown, not sent: a name
/// from an MCP server may hold escape sequences.
#[test]
fn a_confirmation_prompt_shows_a_tool_names_control_characters() {
    let call = towerscope_core::ToolCallBlock::new("c1", "get\u{1b}]0;pwned\u{7}weather", "{}");
    assert_eq!(
        towerscope_team::console::prompt(&call),
        "Allow get^[]0;pwned^Gweather? [y/N/e] "
    );
}

/// A reply that ended with an error shows the error once, on its `✗` line, never again as the
/// agent's words.
#[tokio::test]
async fn an_error_is_shown_once_and_not_as_the_agents_words() {
    let bot = limited("bot");
    let mut console = Console::new(Vec::new());
    let _ = console
        .show(Participant::reply_stream(&bot, Msg::user("user", "Go.").into()))
        .await;
    let screen = String::from_utf8(console.into_inner()).unwrap();
    assert_eq!(screen.matches("model calls limit of 1").count(), 1, "{screen}");
    assert!(screen.contains("✗ bot: model calls limit"), "{screen}");
}

/// A fan-out whose member said no text (data only): each answer is shown once, and the combined
/// message, which holds nothing not shown, is not shown again.
#[tokio::test]
async fn a_fanout_with_a_member_of_data_only_shows_each_answer_once() {
    let ann = Agent::builder("ann")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("Tea please.")]))
        .build()
        .unwrap();
    let bo = Agent::builder("bo")
        .model(ScriptedModel::new(
            "m",
            [ScriptedResponse::empty().and_data("aGk=", "image/png")],
        ))
        .build()
        .unwrap();
    let panel = towerscope_team::pipeline::FanoutPipeline::new([ann, bo]);
    let mut console = Console::new(Vec::new());
    console
        .show(Participant::reply_stream(&panel, Msg::user("host", "Tea?").into()))
        .await
        .unwrap();
    let screen = String::from_utf8(console.into_inner()).unwrap();
    assert_eq!(screen.matches("Tea please.").count(), 1, "{screen}");
    assert_eq!(screen.matches("image/png").count(), 1, "{screen}");
}
