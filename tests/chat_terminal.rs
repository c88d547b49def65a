//! `examples/chat.rs` in a real terminal: tmux runs it in a pseudo-terminal, the test types
//! into it and reads the screen. A question, answers `y`, `n` and `a` to the confirmations (and
//! no question asked once `a` accepted the rule), Ctrl-C in the middle of a streamed story (the
//! interruption and a fresh prompt), then Ctrl-C at the prompt to quit.
//!
//! Needs tmux (`scripts/test.sh` installs it when missing).
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod support;

/// A tmux server of this test only (its own socket), killed when the test ends.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(command: &str) -> Self {
        let version = Command::new("tmux").arg("-V").output();
        assert!(
            version.as_ref().is_ok_and(|o| o.status.success()),
            "tmux is needed to drive the chat in a terminal: run ./scripts/test.sh (it installs tmux) or apt-get install -y tmux"
        );
        let tmux = Self {
            socket: format!("towerscope-chat-test-{}", std::process::id()),
        };
        let out = tmux.run(&["new-session", "-d", "-s", "chat", "-x", "120", "-y", "50", command]);
        assert!(
            out.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap()
    }

    /// Types `keys` (tmux key names: `Enter`, `C-c`, or literal text).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "chat"];
        args.extend_from_slice(keys);
        assert!(self.run(&args).status.success());
    }

    fn type_line(&self, text: &str) {
        let out = self.run(&["send-keys", "-t", "chat", "-l", text]);
        assert!(out.status.success());
        self.keys(&["Enter"]);
    }

    /// The whole screen, scrollback included, without colours.
    fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-J", "-t", "chat", "-S", "-500"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until `ready` holds for the screen; fails with the screen after 60 s.
    fn wait(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "timed out waiting for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn count(screen: &str, needle: &str) -> usize {
    screen.matches(needle).count()
}

#[test]
fn chat_in_a_terminal_confirms_interrupts_and_quits() {
    let command = format!("{}; echo CHAT-EXITED=$?; sleep 600", support::example("chat").display());
    let tmux = Tmux::start(&command);
    tmux.wait("the first prompt", |s| count(s, "you> ") == 1);

    tmux.type_line("What's the weather in Paris?");
    tmux.wait("a confirmation", |s| s.contains("Allow get_weather? [y/N/a/e]"));
    tmux.type_line("y");
    let screen = tmux.wait("the answer", |s| count(s, "you> ") == 2);
    assert!(
        screen.contains("assistant → get_weather {\"city\":\"Paris\"}"),
        "{screen}"
    );
    assert!(screen.contains("  ✓ get_weather: sunny, 21 °C in Paris"), "{screen}");
    assert!(
        screen.contains("assistant: It is sunny, 21 °C in Paris right now."),
        "{screen}"
    );

    tmux.type_line("And London?");
    tmux.wait("a second confirmation", |s| count(s, "Allow get_weather?") == 2);
    tmux.type_line("n");
    let screen = tmux.wait("the answer", |s| count(s, "you> ") == 3);
    assert!(screen.contains("⊘ get_weather denied"), "{screen}");
    assert!(screen.contains("assistant: All right, I won't look it up."), "{screen}");

    tmux.type_line("Rome?");
    tmux.wait("a third confirmation", |s| count(s, "Allow get_weather?") == 3);
    tmux.type_line("a");
    let screen = tmux.wait("the answer", |s| count(s, "you> ") == 4);
    assert!(
        screen.contains("assistant: It is clear, 25 °C in Rome right now."),
        "{screen}"
    );

    tmux.type_line("Paris again?");
    let screen = tmux.wait("the answer", |s| count(s, "you> ") == 5);
    assert_eq!(
        count(&screen, "Allow get_weather?"),
        3,
        "always: not asked again\n{screen}"
    );
    assert_eq!(count(&screen, "It is sunny, 21 °C in Paris right now."), 2, "{screen}");

    tmux.type_line("Tell me a story");
    tmux.wait("the story to start", |s| s.contains("Once upon a time"));
    tmux.keys(&["C-c"]);
    let screen = tmux.wait("the interruption and a fresh prompt", |s| count(s, "you> ") == 6);
    assert!(screen.contains("⚠ assistant: interrupted"), "{screen}");
    assert!(!screen.contains("climbed the hill"), "the story stopped\n{screen}");
    assert!(!screen.contains("CHAT-EXITED"), "one Ctrl-C does not quit\n{screen}");

    tmux.keys(&["C-c"]);
    let screen = tmux.wait("the chat to end", |s| s.contains("CHAT-EXITED="));
    assert!(screen.contains("Bye."), "{screen}");
    assert!(screen.contains("CHAT-EXITED=0"), "{screen}");
}
