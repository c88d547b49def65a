//! Decodes the benchmark's answer in a loop, for a profiler: `profile towerscope|async-openai`.
fn main() {
    let events = provider_bench::transcript();
    let which = std::env::args().nth(1).unwrap_or_default();
    let decode = if which == "async-openai" { provider_bench::async_openai } else { provider_bench::towerscope };
    let mut n = 0;
    let rounds: usize = std::env::args().nth(2).and_then(|n| n.parse().ok()).unwrap_or(3000);
    for _ in 0..rounds {
        n += decode(std::hint::black_box(&events));
    }
    println!("{n}");
}
