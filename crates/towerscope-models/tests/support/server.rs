//! A scripted HTTP/1.1 server on loopback: it records every request and answers each with the
//! next scripted reply, writing the body in the given pieces (one flush each), so a test
//! decides where chunk boundaries fall, and whether the connection is cut mid-body.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON request body")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// How the body is sent.
#[derive(Debug, Clone)]
enum Framing {
    /// `Content-Length`, in one write.
    Fixed,
    /// `Transfer-Encoding: chunked`, one HTTP chunk per piece, properly ended.
    Chunked,
    /// Chunked, but the connection closes after the pieces, without the last chunk.
    Cut,
    /// Neither length nor chunking: the body ends when the connection closes.
    UntilClose,
}

/// A scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    pieces: Vec<Vec<u8>>,
    framing: Framing,
}

impl Reply {
    /// A 200 SSE stream sent in these pieces.
    pub fn sse(pieces: Vec<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            pieces,
            framing: Framing::Chunked,
        }
    }

    /// A JSON body with this status.
    pub fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            pieces: vec![body.as_bytes().to_vec()],
            framing: Framing::Fixed,
        }
    }

    /// Any body with this status and content type.
    pub fn body(status: u16, content_type: &str, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            pieces: vec![body.as_bytes().to_vec()],
            framing: Framing::Fixed,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Closes the connection after the pieces, without ending the chunked body.
    pub fn cut(mut self) -> Self {
        self.framing = Framing::Cut;
        self
    }

    /// Sends the body without length or chunking; it ends when the connection closes.
    pub fn until_close(mut self) -> Self {
        self.framing = Framing::UntilClose;
        self
    }
}

/// The server; dropping it stops it.
pub struct MockServer {
    pub base: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: JoinHandle<()>,
}

impl MockServer {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().expect("local address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let recorded = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let recorded = Arc::clone(&recorded);
                let replies = Arc::clone(&replies);
                tokio::spawn(serve(socket, recorded, replies));
            }
        });
        Self { base, requests, task }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("requests").clone()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut socket: TcpStream, recorded: Arc<Mutex<Vec<Recorded>>>, replies: Arc<Mutex<VecDeque<Reply>>>) {
    let mut buffer = Vec::new();
    loop {
        let Some(request) = read_request(&mut socket, &mut buffer).await else {
            return;
        };
        recorded.lock().expect("requests").push(request);
        let reply = replies
            .lock()
            .expect("replies")
            .pop_front()
            .unwrap_or_else(|| Reply::json(500, r#"{"error": {"message": "no scripted reply left"}}"#));
        if !write_reply(&mut socket, reply).await {
            return;
        }
    }
}

async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Recorded> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    buffer.drain(..head_end + 4);
    while buffer.len() < length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body: Vec<u8> = buffer.drain(..length).collect();
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

/// Writes a reply; `false` when the connection must close.
async fn write_reply(socket: &mut TcpStream, reply: Reply) -> bool {
    let reason = match reply.status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        529 => "Overloaded",
        _ => "Status",
    };
    let mut head = format!("HTTP/1.1 {} {reason}\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match reply.framing {
        Framing::Fixed => {
            let length: usize = reply.pieces.iter().map(Vec::len).sum();
            head.push_str(&format!("content-length: {length}\r\n"));
        }
        Framing::Chunked | Framing::Cut => head.push_str("transfer-encoding: chunked\r\n"),
        Framing::UntilClose => head.push_str("connection: close\r\n"),
    }
    head.push_str("\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    for piece in &reply.pieces {
        let written = match reply.framing {
            Framing::Chunked | Framing::Cut => {
                let mut framed = format!("{:X}\r\n", piece.len()).into_bytes();
                framed.extend_from_slice(piece);
                framed.extend_from_slice(b"\r\n");
                socket.write_all(&framed).await
            }
            Framing::Fixed | Framing::UntilClose => socket.write_all(piece).await,
        };
        if written.is_err() || socket.flush().await.is_err() {
            return false;
        }
        if reply.pieces.len() > 1 {
            // Give the client a chance to read each piece on its own.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    match reply.framing {
        Framing::Chunked => socket.write_all(b"0\r\n\r\n").await.is_ok(),
        Framing::Fixed => true,
        Framing::Cut | Framing::UntilClose => {
            let _ = socket.shutdown().await;
            false
        }
    }
}

/// `bytes` in pieces of `size` bytes (the last one shorter).
pub fn pieces(bytes: &[u8], size: usize) -> Vec<Vec<u8>> {
    bytes.chunks(size.max(1)).map(<[u8]>::to_vec).collect()
}

/// `bytes` cut at these offsets.
pub fn cut_at(bytes: &[u8], offsets: &[usize]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut start = 0;
    for &at in offsets {
        out.push(bytes[start..at].to_vec());
        start = at;
    }
    out.push(bytes[start..].to_vec());
    out
}
