//! The README's first command and the hub example run with no setup and print what their docs
//! promise: `quickstart` (the README's main example, on the scripted model) and `msghub` (three
//! agents through a hub). `chat` has its own terminal test (tests/chat_terminal.rs).
#![allow(clippy::unwrap_used)]

use std::process::Command;

mod support;

use support::example;

/// Runs an example with no network configured; its stdout and stderr, joined.
fn run(name: &str) -> String {
    let out = Command::new(example(name))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{name} failed: {text}");
    text
}

#[test]
fn the_quickstart_streams_a_tool_round_and_the_answer() {
    let out = run("quickstart");
    let order = [
        "user: What's the weather in Paris?",
        "Friday (thinking):",
        "Friday → get_weather {\"city\":\"Paris\"}",
        "✓ get_weather:",
        "Friday: It is sunny in Paris",
        "usage:",
    ];
    let mut from = 0;
    for line in order {
        let at = out[from..]
            .find(line)
            .unwrap_or_else(|| panic!("{line:?} missing or out of order in:\n{out}"));
        from += at + line.len();
    }
    assert_eq!(
        out.matches("[timing]").count(),
        2,
        "the from_fn layer timed both model calls:\n{out}"
    );
}

#[test]
fn the_msghub_example_lets_every_agent_hear_the_others() {
    let out = run("msghub");
    let heard = out
        .split("— What Carol heard —")
        .nth(1)
        .unwrap_or_else(|| panic!("no transcript of what Carol heard:\n{out}"));
    for speaker in ["host:", "alice:", "bob:", "carol:"] {
        assert!(heard.contains(speaker), "Carol heard nothing from {speaker}\n{out}");
    }
}

/// `examples/cassette.rs` replays its checked-in cassette with no network and no key, and
/// prints the same reply, with the same ids, on every run.
#[cfg(all(feature = "cassette", feature = "openai"))]
#[test]
fn the_cassette_example_replays_the_same_reply_every_run() {
    let replay = || {
        let out = Command::new(support::example_with_features("cassette", &["cassette", "openai"]))
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("TOWERSCOPE_CASSETTE")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
        text
    };
    let first = replay();
    assert!(
        first.starts_with("mode: replay\nreply 00000000000000000000000000000006: Paris"),
        "{first}"
    );
    assert!(
        first.contains("stored messages: 2\nunplayed interactions: []"),
        "{first}"
    );
    assert_eq!(replay(), first);
}
