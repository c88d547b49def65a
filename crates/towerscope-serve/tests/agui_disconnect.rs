//! A client that disconnects in the middle of a run stops the reply; the conversation keeps
//! what was streamed, and the thread is free again.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use towerscope_core::Role;

use support::{LONG, factory, model, session_dir};

fn request(body: &str) -> String {
    format!(
        "POST /agui HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Posts `body` and reads the whole answer.
async fn post(addr: SocketAddr, body: &str) -> String {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.write_all(request(body).as_bytes()).await.unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnect_mid_stream_interrupts_the_reply_and_keeps_what_was_streamed() {
    let model = model();
    let router = towerscope_serve::router(factory(model.clone(), session_dir("disconnect")));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(towerscope_serve::run_until(listener, router, async {
        let _ = stopped.await;
    }));

    let body =
        json!({"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "long please"}]});
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.write_all(request(&body.to_string()).as_bytes()).await.unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while seen.matches("TEXT_MESSAGE_CONTENT").count() < 3 {
        let n = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut buf))
            .await
            .expect("the run streams")
            .unwrap();
        assert!(n > 0, "the stream ended early: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    drop(socket);

    // The thread is busy until the interrupted reply has closed and saved, then free.
    let next = json!({"threadId": "t1", "runId": "r2", "messages": [{"id": "u2", "role": "user", "content": "hi"}]});
    let mut answer = String::new();
    for _ in 0..100 {
        answer = post(addr, &next.to_string()).await;
        if !answer.starts_with("HTTP/1.1 409") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("RUN_FINISHED"), "{answer}");

    // What the model saw on the next run: the question, the part of the answer that was
    // streamed (not all of it), the next question.
    let last = model.requests().pop().unwrap();
    let texts: Vec<_> = last
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .filter_map(|m| m.text_content())
        .collect();
    assert_eq!(texts.first().map(String::as_str), Some("long please"));
    assert_eq!(texts.last().map(String::as_str), Some("hi"));
    let partial = texts
        .iter()
        .find(|t| t.starts_with("one two"))
        .expect("the streamed part was kept");
    assert!(partial.len() < LONG.len(), "the reply was stopped: {partial}");
    assert_eq!(model.calls(), 2, "the interrupted reply made no further model call");

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
