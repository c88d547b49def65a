//! The modes: one reply at a time, many replies in flight, and the runtime's floor under the
//! second.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::alloc::{Snapshot, set_counting};
use crate::cli::{Mode, parse};
use crate::json::Line;
use crate::process::{cpu_seconds, peak_rss_mib};
use crate::stats::summarize;
use crate::{BoxError, FINAL_TEXT, Peer, Setup};

/// Agents built to measure the live bytes of one idle agent.
const IDLE_AGENTS: usize = 1000;

/// Model calls per reply in the scenario.
const MODEL_CALLS: usize = 4;

/// How long the scripted model sleeps before each answer in `many` mode.
const MANY_MODEL_DELAY: Duration = Duration::from_millis(50);

/// Runs the mode named on the command line and prints its JSON line; errors go to stderr with
/// exit status 1.
pub fn main<P: Peer>() -> ExitCode {
    let result = parse(std::env::args().skip(1)).and_then(|mode| match mode {
        Mode::Single {
            replies,
            middlewares,
            warmup,
            layer_on,
            events,
        } => single::<P>(replies, middlewares, warmup, layer_on, events),
        Mode::Many { n, workers } => many::<P>(n, workers),
        Mode::Floor { n, workers } => floor::<P>(n, workers),
    });
    match result {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{} bench: error: {e}", P::NAME);
            ExitCode::FAILURE
        }
    }
}

fn header<P: Peer>(mode: &str) -> Line {
    Line::new()
        .str("peer", P::NAME)
        .str("version", P::VERSION)
        .str("mode", mode)
}

/// One reply, checked: 4 model calls, 3 tool calls, the scripted final text.
async fn checked_reply<P: Peer>(agent: &mut P) -> Result<(), BoxError> {
    let text = agent.reply().await?;
    agent.calls().check_reply()?;
    if text.trim() != FINAL_TEXT {
        return Err(format!("the reply's text is {text:?}, expected {FINAL_TEXT:?}").into());
    }
    Ok(())
}

fn single<P: Peer>(
    replies: usize,
    middlewares: usize,
    warmup: usize,
    layer_on: Option<String>,
    events: bool,
) -> Result<String, BoxError> {
    if middlewares > 0 && !P::MIDDLEWARE {
        return Ok(header::<P>("single")
            .null("middlewares")
            .num("requested_middlewares", middlewares as f64)
            .str("skipped", "this peer has no middleware to install")
            .finish());
    }
    if let Some(position) = layer_on.as_deref().filter(|p| !P::POSITIONS.contains(p)) {
        return Ok(header::<P>("single")
            .str("requested_layer_on", position)
            .str("skipped", "this peer has no such position")
            .finish());
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let setup = Setup {
        middlewares,
        model_delay: None,
        layer_on: layer_on.clone(),
        events,
    };
    rt.block_on(async {
        let mut agent = P::build(&setup)?;
        checked_reply(&mut agent).await?;

        // Live bytes of idle agents: the first agent above paid for one-time globals.
        let mut idle: Vec<Box<P>> = Vec::with_capacity(IDLE_AGENTS);
        let before = Snapshot::now();
        for _ in 0..IDLE_AGENTS {
            idle.push(Box::new(P::build(&setup)?));
        }
        let idle_bytes = Snapshot::now().since(before).live as f64 / IDLE_AGENTS as f64;
        drop(idle);

        for _ in 0..warmup {
            checked_reply(&mut agent).await?;
        }
        let mut samples = Vec::with_capacity(replies);
        let before = Snapshot::now();
        for _ in 0..replies {
            let start = Instant::now();
            let text = agent.reply().await?;
            samples.push(start.elapsed());
            agent.calls().check_reply()?;
            if text.trim() != FINAL_TEXT {
                return Err(format!("the reply's text is {text:?}, expected {FINAL_TEXT:?}").into());
            }
        }
        let used = Snapshot::now().since(before);
        let s = summarize(&samples);
        Ok(header::<P>("single")
            .num("middlewares", middlewares as f64)
            .str("layer_on", layer_on.as_deref().unwrap_or(""))
            .str("events", if events { "read" } else { "none" })
            .num("replies", replies as f64)
            .num("warmup", warmup as f64)
            .fixed("median_us", s.median_us, 2)
            .fixed("p10_us", s.p10_us, 2)
            .fixed("p90_us", s.p90_us, 2)
            .fixed("mean_us", s.mean_us, 2)
            .fixed("allocs_per_reply", used.allocs as f64 / replies as f64, 1)
            .fixed("bytes_per_reply", used.bytes as f64 / replies as f64, 0)
            .fixed("idle_agent_bytes", idle_bytes, 0)
            .num("model_calls_per_reply", MODEL_CALLS as f64)
            .num("tool_calls_per_reply", 3.0)
            .finish())
    })
}

/// The runtime of `many`: tokio's multi-thread scheduler with `workers` workers (the scenario's
/// is 2), or its current-thread one for 0.
fn many_runtime(workers: usize) -> Result<tokio::runtime::Runtime, BoxError> {
    let mut builder = match workers {
        0 => tokio::runtime::Builder::new_current_thread(),
        w => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(w);
            b
        }
    };
    Ok(builder.enable_all().build()?)
}

fn many<P: Peer>(n: usize, workers: usize) -> Result<String, BoxError> {
    set_counting(false);
    let rt = many_runtime(workers)?;
    let setup = Setup {
        middlewares: 0,
        model_delay: Some(MANY_MODEL_DELAY),
        layer_on: None,
        events: false,
    };
    rt.block_on(async {
        let build_start = Instant::now();
        let agents = (0..n).map(|_| P::build(&setup)).collect::<Result<Vec<P>, _>>()?;
        let build_s = build_start.elapsed().as_secs_f64();

        let cpu_before = cpu_seconds()?;
        let start = Instant::now();
        let tasks: Vec<_> = agents
            .into_iter()
            .map(|mut agent| tokio::spawn(async move { checked_reply(&mut agent).await }))
            .collect();
        let mut failed = 0;
        let mut first_error = None;
        for task in tasks {
            let outcome = task.await.map_err(BoxError::from).and_then(|r| r);
            if let Err(e) = outcome {
                failed += 1;
                first_error.get_or_insert(e);
            }
        }
        let wall_s = start.elapsed().as_secs_f64();
        let cpu_s = cpu_seconds()? - cpu_before;
        if let Some(e) = first_error {
            return Err(format!("{failed} of {n} replies failed; the first: {e}").into());
        }
        Ok(header::<P>("many")
            .num("n", n as f64)
            .num("workers", workers as f64)
            .fixed("model_delay_ms", MANY_MODEL_DELAY.as_secs_f64() * 1e3, 0)
            .fixed("wall_s", wall_s, 3)
            .fixed("peak_rss_mb", peak_rss_mib()?, 1)
            .fixed("cpu_s", cpu_s, 3)
            .fixed("cpu_us_per_reply", cpu_s * 1e6 / n as f64, 1)
            .fixed("build_s", build_s, 3)
            .finish())
    })
}

/// `many` without the agent: `n` tasks spawned at once, each sleeping the model's delay once
/// per model call of a reply. What this costs per task is the floor of `many`'s CPU per reply,
/// spent by the runtime whatever the framework.
fn floor<P: Peer>(n: usize, workers: usize) -> Result<String, BoxError> {
    set_counting(false);
    let rt = many_runtime(workers)?;
    rt.block_on(async {
        let cpu_before = cpu_seconds()?;
        let start = Instant::now();
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                tokio::spawn(async {
                    for _ in 0..MODEL_CALLS {
                        tokio::time::sleep(MANY_MODEL_DELAY).await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await?;
        }
        let wall_s = start.elapsed().as_secs_f64();
        let cpu_s = cpu_seconds()? - cpu_before;
        Ok(header::<P>("floor")
            .num("n", n as f64)
            .num("workers", workers as f64)
            .fixed("model_delay_ms", MANY_MODEL_DELAY.as_secs_f64() * 1e3, 0)
            .fixed("wall_s", wall_s, 3)
            .fixed("cpu_s", cpu_s, 3)
            .fixed("cpu_us_per_reply", cpu_s * 1e6 / n as f64, 1)
            .finish())
    })
}
