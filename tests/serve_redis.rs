//! Two server processes (examples/serve.rs) on one Redis session store: a conversation alternates
//! between them. A confirmation parked by one is answered through the other, and each goes on
//! from what the other saved.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A server process, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    _stderr: BufReader<ChildStderr>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn redis_url() -> Option<String> {
    match std::env::var("TOWERSCOPE_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("TOWERSCOPE_REQUIRE_REDIS").as_deref() == Ok("1") => panic!(
            "two_servers_on_one_redis_alternate_a_conversation needs Redis: TOWERSCOPE_REQUIRE_REDIS=1 but \
             TOWERSCOPE_REDIS_URL is not set; run `eval \"$(scripts/redis-server.sh start)\"`"
        ),
        _ => {
            eprintln!("skipped: TOWERSCOPE_REDIS_URL is not set");
            None
        }
    }
}

async fn start(url: &str) -> Server {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // Each process gets a folder of its own for file sessions: only Redis is shared.
    let own = std::env::temp_dir().join(format!("towerscope-serve-redis-{}", towerscope::Id::new()));
    let mut child = Command::new(support::example_with("serve", "serve,redis"))
        .env("TOWERSCOPE_ADDR", addr.to_string())
        .env("TOWERSCOPE_REDIS_URL", url)
        .env("TOWERSCOPE_SESSIONS", own)
        // The scripted model, whatever the environment names.
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut banner = String::new();
    while !banner.contains("serving on") {
        assert!(
            stderr.read_line(&mut banner).unwrap() > 0,
            "the server exited: {banner}"
        );
    }
    assert!(
        banner.contains("sessions in Redis"),
        "the example was built without the redis feature: {banner}"
    );
    let server = Server {
        child,
        addr,
        _stderr: stderr,
    };
    for _ in 0..200 {
        if TcpStream::connect(addr).await.is_ok() {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the server on {addr} did not start");
}

/// Posts a run and returns its status line and events.
async fn post(addr: SocketAddr, body: &Value) -> (String, Vec<Value>) {
    let body = body.to_string();
    let mut socket = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /agui HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.unwrap();
    let status = answer.lines().next().unwrap_or_default().to_owned();
    let events = answer
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    (status, events)
}

fn text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_redis_alternate_a_conversation() {
    let Some(url) = redis_url() else {
        return;
    };
    let a = start(&url).await;
    let b = start(&url).await;
    let thread = format!("two-servers-{}", towerscope::Id::new());

    // A parks a confirmation.
    let ask = json!({"id": "u1", "role": "user", "content": "Email the forecast"});
    let (status, first) = post(a.addr, &json!({"threadId": thread, "runId": "r1", "messages": [ask]})).await;
    assert!(status.contains("200"), "{status}");
    let finished = first.last().unwrap();
    assert_eq!(finished["outcome"]["type"], "interrupt", "{first:?}");
    let call_id = finished["outcome"]["interrupts"][0]["id"].as_str().unwrap().to_owned();
    let call = json!({"id": call_id, "role": "assistant", "toolCalls": [
        {"id": call_id, "type": "function", "function": {"name": "email_forecast", "arguments": "{\"to\": \"me@example.com\"}"}}
    ]});

    // B, which never saw the thread, answers it from Redis.
    let resume = json!({"threadId": thread, "runId": "r2", "messages": [ask, call],
        "resume": [{"interruptId": call_id, "status": "resolved", "payload": {"approved": true}}]});
    let (status, second) = post(b.addr, &resume).await;
    assert!(status.contains("200"), "{status}");
    let result = second
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .expect("the call ran on B");
    assert_eq!(result["content"], "forecast emailed to me@example.com");
    assert_eq!(second.last().unwrap()["type"], "RUN_FINISHED", "{second:?}");

    // A goes on from what B saved (a stale session would end in a conflict).
    let weather = json!({"id": "u2", "role": "user", "content": "What's the weather in London?"});
    let (status, third) = post(
        a.addr,
        &json!({"threadId": thread, "runId": "r3", "messages": [ask, call, weather]}),
    )
    .await;
    assert!(status.contains("200"), "{status}");
    assert_eq!(third.last().unwrap()["type"], "RUN_FINISHED", "{third:?}");
    assert!(text(&third).contains("drizzle"), "{third:?}");

    // And B from what A saved; a resume of the answered confirmation is refused by either.
    let hello = json!({"id": "u3", "role": "user", "content": "hello"});
    let (status, fourth) = post(b.addr, &json!({"threadId": thread, "runId": "r4", "messages": [hello]})).await;
    assert!(status.contains("200"), "{status}");
    assert!(text(&fourth).starts_with("I am Friday"), "{fourth:?}");
    let (status, _) = post(a.addr, &resume).await;
    assert!(status.contains("409"), "{status}");
}
