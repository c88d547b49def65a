//! Record a real session's provider traffic once, replay it as a deterministic test (feature
//! `cassette`): the VCR pattern, as a layer on the providers' HTTP transport.
//!
//! ```text
//!  agent ─▶ OpenAiChatModel / AnthropicChatModel ─▶ CassetteLayer ─▶ reqwest::Client ─▶ server
//!                                                      │   ▲
//!                                  record: append ─────┘   └──── replay: answer from the file
//!                                                  tests/cassettes/weather.jsonl
//! ```
//!
//! A [`Cassette`] is one human-readable file of JSON lines per test. In
//! [`Record`](CassetteMode::Record) mode every request goes to the server and is appended
//! with its whole response: status, headers, and the body chunk by chunk, as it arrived
//! (a streamed answer's chunk boundaries included, and how it ended: completely, cut, or left
//! unread). In [`Replay`](CassetteMode::Replay) mode (the default) a request is matched to a
//! recorded one and answered from the file with the same chunks, so the SSE decoding runs
//! exactly as it did; a request with no match is an error naming the cassette and showing,
//! part by part, how it differs from the closest recorded request ([`CassetteError`]), and
//! nothing is ever sent. [`RecordMissing`](CassetteMode::RecordMissing) replays what the file
//! holds and records the rest. The environment variable [`TOWERSCOPE_CASSETTE`](MODE_VAR)
//! (`record`, `replay`, `record-missing`) sets the mode of every cassette opened without one.
//!
//! Requests are matched on the method, the path, the model, each message's role, name and
//! contents (texts, tool calls with their arguments, tool results, a digest of each image,
//! audio or file part), the offered tools' whole definitions, and every other field of the
//! body (`tool_choice`, `temperature`, `max_tokens`, `stream`, a response format, extra
//! fields), in order, each recorded interaction answering once. Tool-call ids are not matched, and in
//! texts times (the agent's hints) and generated ids are not either, so a real agent's second
//! run matches its first.
//!
//! Secrets never reach the file: request header values are written only for the content
//! type, accept, user agent and the providers' version headers (the API key, bearer tokens,
//! cookies and any configured header read `[REDACTED]`); the request body goes through
//! [`towerscope_core::redact`], the rules tracing applies; the value of every credential
//! header sent is replaced wherever it appears in what is written.
//!
//! [`Cassette::scope`] makes the agent around it deterministic too: ids count from 1 and the
//! time (timestamps, the hints' clock) stands still while the reply runs, so a replayed
//! reply's events and stored messages are the same on every run. The count goes on across one
//! cassette's scopes (the turns of a conversation get ids of their own), so run them one after
//! another: two scopes of one cassette polled at once interleave their ids as they are
//! scheduled. Tests that run in parallel each use a cassette of their own.
//!
//! # Example
//!
//! A transport recorded once, then replayed without it:
//!
//! ```
//! use std::convert::Infallible;
//! use tower::{Layer, Service, ServiceExt, service_fn};
//! use towerscope_models::cassette::{Cassette, CassetteMode};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let path = std::env::temp_dir().join(format!("cassette-doc-{}.jsonl", std::process::id()));
//! let request = || {
//!     let mut request = reqwest::Request::new(reqwest::Method::POST, "http://127.0.0.1:9/v1/chat/completions".parse().unwrap());
//!     *request.body_mut() = Some(r#"{"model": "m", "messages": [{"role": "user", "content": "Hi"}]}"#.into());
//!     request
//! };
//! let server = service_fn(|_: reqwest::Request| async {
//!     Ok::<_, Infallible>(reqwest::Response::from(http::Response::new("Hello!")))
//! });
//!
//! let recording = Cassette::builder(&path).mode(CassetteMode::Record).open()?;
//! let answer = recording.layer().layer(server).oneshot(request()).await?;
//! assert_eq!(answer.text().await?, "Hello!");
//!
//! let replaying = Cassette::builder(&path).mode(CassetteMode::Replay).open()?;
//! let offline = service_fn(|_: reqwest::Request| async { Err::<reqwest::Response, _>("no network in replay") });
//! let answer = replaying.layer().layer(offline).oneshot(request()).await?;
//! assert_eq!(answer.text().await?, "Hello!");
//! assert!(replaying.unplayed().is_empty());
//! # std::fs::remove_file(&path)?;
//! # Ok(()) }
//! ```

mod body;
pub(crate) use body::Replayed;
mod diff;
mod file;
mod future;
mod key;
mod layer;
mod mode;
mod redact;
mod service;
mod store;

pub use diff::CassetteError;
pub use future::CassetteFuture;
pub use layer::CassetteLayer;
pub use mode::{CassetteMode, MODE_VAR};
pub use service::CassetteService;
pub use store::{Cassette, CassetteBuilder};
