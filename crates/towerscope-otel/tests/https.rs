//! An `https://` collector is exported to with the `tls` feature: the exporter's HTTP client was
//! built without TLS unless another crate of the build turned it on, so `init_otlp` accepted
//! an `https://` endpoint and every export failed without connecting (without the feature,
//! `init_otlp` refuses it: `otlp::tests::what_this_build_cannot_send_is_refused`).
#![cfg(feature = "tls")]
#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use opentelemetry::trace::{Span as _, Tracer as _, TracerProvider as _};
use towerscope_otel::{OtlpConfig, init_otlp};

#[test]
fn an_https_endpoint_is_reached_with_tls() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (first_bytes, seen) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = [0u8; 3];
            if stream.read_exact(&mut head).is_ok() {
                let _ = first_bytes.send(head);
            }
        }
    });
    let guard = init_otlp(
        OtlpConfig::default()
            .endpoint(format!("https://127.0.0.1:{port}"))
            .metrics(false)
            .install_global(false),
    )
    .unwrap();
    guard.tracer_provider().unwrap().tracer("t").start("a span").end();
    // The handshake fails (no TLS server here): the export fails, after it connected.
    let _ = guard.force_flush();
    let head = seen
        .recv_timeout(Duration::from_secs(10))
        .expect("the exporter connected");
    // A TLS record of type handshake (22), version 3.x: a ClientHello, not plain HTTP.
    assert_eq!(&head[..2], &[22, 3], "not a TLS handshake: {head:?}");
}
