//! Decoding a streamed answer of 1,000 chunks with tool calls: towerscope's OpenAI provider and
//! async-openai, on the same bytes, side by side; then allocations per chunk of each.
//!
//! ```sh
//! cd benches/providers && cargo bench
//! ```
//!
//! Two framings of the same body: one event per read (as servers flush them), and 1,460-byte
//! segments. Throughput is in chunks (data events) per second.
//!
//! Then how each grows with its input (one timing each, not criterion: the slower side takes
//! seconds): one content delta of 1 to 4 MiB read in 16 KiB pieces, and 2,500 to 10,000
//! small deltas in one read. Linear, the time doubles with the size; async-openai's SSE
//! framing (eventsource-stream, which towerscope used until it was replaced by
//! `towerscope_core::sse`) parses its buffer from the start at every read and copies the rest
//! of it after every line.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use criterion::{Criterion, Throughput};
use provider_bench::{CHUNKS, async_openai, large, segments, towerscope, transcript};

/// Counts allocations (a reallocation counts as one).
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` unchanged; the counters are atomics that never
// allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new_size as u64, Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

type Decoder = fn(&[Vec<u8>]) -> usize;

const DECODERS: [(&str, Decoder); 2] = [("towerscope", towerscope), ("async-openai", async_openai)];

fn bench(c: &mut Criterion, framings: &[(&str, Vec<Vec<u8>>)]) {
    let mut group = c.benchmark_group("decode_1000_chunks");
    group.throughput(Throughput::Elements(CHUNKS as u64));
    for (framing, pieces) in framings {
        for (name, decode) in DECODERS {
            group.bench_function(format!("{name}/{framing}"), |b| b.iter(|| decode(black_box(pieces))));
        }
    }
    group.finish();
}

/// Allocations and bytes per chunk, and a plain timing, for one decode of each.
fn report(framings: &[(&str, Vec<Vec<u8>>)]) {
    println!("\n| decoder | framing | allocations / chunk | bytes allocated / chunk | µs / chunk (min of 20) |");
    println!("|---|---|---|---|---|");
    for (framing, pieces) in framings {
        for (name, decode) in DECODERS {
            decode(pieces); // warm up
            let (allocs, bytes) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
            decode(pieces);
            let allocs = ALLOCS.load(Relaxed) - allocs;
            let bytes = BYTES.load(Relaxed) - bytes;
            let best = (0..20)
                .map(|_| {
                    let start = Instant::now();
                    black_box(decode(black_box(pieces)));
                    start.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min);
            let per_chunk = |n: u64| n as f64 / CHUNKS as f64;
            println!(
                "| {name} | {framing} | {:.2} | {:.0} | {:.3} |",
                per_chunk(allocs),
                per_chunk(bytes),
                best * 1e6 / CHUNKS as f64
            );
        }
    }
}

fn main() {
    let events = transcript();
    let framings = [
        ("per_event", events.clone()),
        ("1460B", segments(&events, 1460)),
        ("16KiB", segments(&events, 16 * 1024)),
    ];
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion, &framings);
    criterion.final_summary();
    report(&framings);
    report_large();
}

/// One decode of each large body by each decoder, in milliseconds.
fn report_large() {
    println!("\n| decoder | body | ms |");
    println!("|---|---|---|");
    let bodies = [
        ("one delta of 1 MiB, 16 KiB reads", large(1 << 20, true)),
        ("one delta of 2 MiB, 16 KiB reads", large(2 << 20, true)),
        ("one delta of 4 MiB, 16 KiB reads", large(4 << 20, true)),
        ("2,500 small deltas in one read", large(2_500, false)),
        ("5,000 small deltas in one read", large(5_000, false)),
        ("10,000 small deltas in one read", large(10_000, false)),
    ];
    for (body, pieces) in &bodies {
        for (name, decode) in DECODERS {
            let start = Instant::now();
            black_box(decode(black_box(pieces)));
            println!("| {name} | {body} | {:.1} |", start.elapsed().as_secs_f64() * 1e3);
        }
    }
}
