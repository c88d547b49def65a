//! 1,000 AG-UI runs in flight at once in one process: each answered in full, none refused, and
//! the memory they held given back once they end. Prints the bytes one stream in flight holds.
#![allow(clippy::unwrap_used)]

mod support;

use std::alloc::System;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::json;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::ServiceExt;

use support::{events, factory, model, session_dir};

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const STREAMS: usize = 1000;

fn request(round: usize, i: usize) -> Request<Body> {
    let body = json!({"threadId": format!("load-{round}-{i}"), "runId": "r", "messages": [
        {"id": "u1", "role": "user", "content": "slow"}
    ]});
    Request::post("/agui")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// Starts `STREAMS` runs (each waits 400 ms for its model), holds them all open, then reads
/// them all. Returns the net bytes held while all were in flight.
async fn round(router: &axum::Router, round: usize) -> i64 {
    let region = Region::new(ALLOCATOR);
    let started = Instant::now();
    let mut opening = Vec::with_capacity(STREAMS);
    for i in 0..STREAMS {
        let router = router.clone();
        opening.push(tokio::spawn(
            async move { router.oneshot(request(round, i)).await.unwrap() },
        ));
    }
    let mut responses = Vec::with_capacity(STREAMS);
    for task in opening {
        let response = task.await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        responses.push(response);
    }
    let held = region.change();
    let in_flight = held.bytes_allocated as i64 - held.bytes_deallocated as i64;
    let mut reading = Vec::with_capacity(STREAMS);
    for response in responses {
        reading.push(tokio::spawn(async move {
            axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()
        }));
    }
    for task in reading {
        let sse = task.await.unwrap();
        let events = events(std::str::from_utf8(&sse).unwrap());
        assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
        assert!(events.iter().any(|e| e["delta"] == "Finally."));
    }
    // Concurrent: a sequential round would take STREAMS × 400 ms.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the runs did not overlap: {:?}",
        started.elapsed()
    );
    in_flight
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_streams_complete_and_give_their_memory_back() {
    let model = model().record(false);
    let router = towerscope_serve::router(factory(model, session_dir("load")));
    // The first round warms what lives as long as the process (the runtime's queues, the
    // allocator's caches, the file store's folders).
    round(&router, 0).await;
    let after_warmup = Region::new(ALLOCATOR);
    let in_flight = round(&router, 1).await;
    // Let the tasks that finish a run's save end.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let change = after_warmup.change();
    let kept = change.bytes_allocated as i64 - change.bytes_deallocated as i64;
    println!(
        "{STREAMS} streams in flight held {in_flight} bytes ({} per stream); {kept} bytes kept after they ended",
        in_flight / STREAMS as i64
    );
    assert!(in_flight > 0);
    assert!(
        kept < 256 * 1024,
        "{kept} bytes were not given back after {STREAMS} streams ended"
    );
}
