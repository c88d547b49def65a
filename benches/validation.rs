//! What checking a tool call costs on adversarial arguments, through `Toolkit::prepare` (size and
//! depth limits, parsing with repair, coercion, validation), against a normal small argument.
//!
//! - `small_argument`: `{"city": "Paris", "days": 3}` for a two-field tool: the baseline.
//! - `recursive_24_levels`: `struct Node { v: i32, next: Option<Box<Node>> }` (schemars schema)
//!   with a 451-byte argument nested 24 levels and an invalid leaf; exponential before.
//! - `unique_items_40000`: 40,000 distinct integers under `uniqueItems`; quadratic before.
//! - `string_10mb_into_integer`: a 10 MB string where an integer is wanted, with the input limit
//!   raised to 16 MiB so it is parsed and validated (the error quotes 256 bytes of it);
//!   `string_10mb_over_limit` is the same call refused by the default 1 MiB limit.
//! - `nesting_63_levels`: arrays nested 63 levels (the default cap is 64) under a recursive
//!   `anyOf` schema, with an invalid leaf; `nesting_100k_over_limit` is 100,000 `[`s, refused by
//!   the one-pass depth check.
//!
//! The `prepare/…` ids time the whole check; `validate/…` times `CompiledSchema::validate` alone
//! on the same arguments parsed beforehand.
//!
//! ```text
//! cargo bench --bench validation
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use towerscope::ToolCallBlock;
use towerscope::agent::toolkit::{CompiledSchema, FunctionTool, InputLimits, Toolkit};

/// Get the weather of a city.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Weather {
    /// The city.
    city: String,
    /// How many days.
    days: u8,
}

/// A linked list.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Node {
    v: i32,
    next: Option<Box<Node>>,
}

fn toolkit() -> Toolkit {
    let mut toolkit = Toolkit::new();
    toolkit.add(FunctionTool::new("weather", |_: Weather| async { "sunny" }));
    toolkit.add(FunctionTool::new("node", |_: Node| async { "ok" }));
    let schema = |items: Value| json!({"type": "object", "properties": {"x": items}, "required": ["x"]});
    let echo = |name: &str, schema: Value| FunctionTool::with_schema(name, "Echo.", schema, |v: Value| async { v });
    toolkit.add(echo("ids", schema(json!({"type": "array", "uniqueItems": true}))));
    toolkit.add(echo("count", schema(json!({"type": "integer"}))));
    let nested = json!({
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/n"}},
        "$defs": {"n": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/n"}}]}}
    });
    toolkit.add(echo("nested", nested));
    toolkit
}

/// `{"v": 0, "next": {"v": 1, "next": … {"v": "x", "next": null}}}`, `levels` objects deep.
fn nodes(levels: usize) -> String {
    let mut text = String::new();
    for i in 0..levels - 1 {
        text.push_str(&format!(r#"{{"v": {i}, "next": "#));
    }
    text.push_str(r#"{"v": "x", "next": null}"#);
    text.push_str(&"}".repeat(levels - 1));
    text
}

fn bench(c: &mut Criterion) {
    let toolkit = toolkit();
    let mut raised = toolkit.clone();
    raised.set_input_limits(InputLimits::new().with_max_bytes(16 * 1024 * 1024));
    let call = |name: &str, input: String| ToolCallBlock::new("call_1", name, input);

    let small = call("weather", r#"{"city": "Paris", "days": 3}"#.to_owned());
    let recursive = call("node", nodes(24));
    assert_eq!(recursive.input.len(), 451);
    let ids: Vec<u32> = (0..40_000).collect();
    let unique = call("ids", json!({"x": ids}).to_string());
    let huge = call("count", format!(r#"{{"x": "{}"}}"#, "7".repeat(10 * 1024 * 1024)));
    let deep = call(
        "nested",
        format!(r#"{{"x": {}"bad"{}}}"#, "[".repeat(62), "]".repeat(62)),
    );
    let too_deep = call("nested", format!(r#"{{"x": {}"#, "[".repeat(100_000)));

    let mut group = c.benchmark_group("prepare");
    let mut case = |id: &str, toolkit: &Toolkit, call: &ToolCallBlock, ok: bool| {
        assert_eq!(toolkit.prepare(call, &[]).is_ok(), ok, "{id}");
        group.bench_function(id, |b| b.iter(|| toolkit.prepare(black_box(call), &[])));
    };
    case("small_argument", &toolkit, &small, true);
    case("recursive_24_levels", &toolkit, &recursive, false);
    case("unique_items_40000", &toolkit, &unique, true);
    case("string_10mb_into_integer", &raised, &huge, false);
    case("string_10mb_over_limit", &toolkit, &huge, false);
    case("nesting_63_levels", &toolkit, &deep, false);
    case("nesting_100k_over_limit", &toolkit, &too_deep, false);
    group.finish();

    // Validation alone, on arguments parsed beforehand.
    let mut group = c.benchmark_group("validate");
    let mut case = |id: &str, tool: &str, call: &ToolCallBlock| {
        let schema = CompiledSchema::new(toolkit.get(tool).map(|t| t.input_schema().clone()).unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}"));
        let input: Value = serde_json::from_str(&call.input).unwrap_or_default();
        group.bench_function(id, |b| b.iter(|| schema.validate(black_box(&input))));
    };
    case("small_argument", "weather", &small);
    case("recursive_24_levels", "node", &recursive);
    case("unique_items_40000", "ids", &unique);
    case("string_10mb_into_integer", "count", &huge);
    case("nesting_63_levels", "nested", &deep);
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench
}
criterion_main!(benches);
