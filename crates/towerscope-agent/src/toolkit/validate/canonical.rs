//! Equality of JSON values as JSON Schema defines it (`1` equals `1.0`, key order does not
//! matter), and a hash that agrees with it, so that `uniqueItems` is linear in the array.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};

use serde_json::{Number, Value};

/// JSON equality where `1` equals `1.0`, as in JSON Schema.
pub(super) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_eq(x, y),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| json_eq(a, b)))
        }
        _ => a == b,
    }
}

fn number_eq(x: &Number, y: &Number) -> bool {
    match (as_integer(x), as_integer(y)) {
        // Two integers: exactly, even past 2^53.
        (Some(i), Some(j)) => i == j,
        _ => x.as_f64() == y.as_f64(),
    }
}

fn as_integer(n: &Number) -> Option<i128> {
    n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))
}

/// The index of the first element equal (as [`json_eq`]) to an earlier one, if any.
///
/// Each element is hashed once into a canonical hash (numbers by value, objects independent of
/// key order), and only elements of the same hash are compared: linear in the array for all but
/// adversarial hash collisions, which the randomly keyed hasher makes impractical.
pub(super) fn first_duplicate(items: &[Value]) -> Option<usize> {
    let state = RandomState::new();
    let mut seen: HashMap<u64, Vec<usize>> = HashMap::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let bucket = seen.entry(canonical_hash(item, &state)).or_default();
        if bucket.iter().any(|&j| {
            #[cfg(test)]
            COMPARISONS.with(|c| c.set(c.get() + 1));
            json_eq(&items[j], item)
        }) {
            return Some(i);
        }
        bucket.push(i);
    }
    None
}

#[cfg(test)]
thread_local! {
    static COMPARISONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many pairs [`first_duplicate`] compared on this thread so far.
#[cfg(test)]
pub(super) fn comparisons() -> u64 {
    COMPARISONS.with(std::cell::Cell::get)
}

fn canonical_hash(value: &Value, state: &RandomState) -> u64 {
    let mut h = state.build_hasher();
    hash_into(value, state, &mut h);
    h.finish()
}

fn hash_into(value: &Value, state: &RandomState, h: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => {
            2u8.hash(h);
            // Equal numbers hash alike: an integral float as the integer it equals, others by
            // their bits (with -0.0 as 0.0). Integers too large for an f64 to tell apart land in
            // the same bucket as their neighbours and are told apart by `json_eq`.
            match (as_integer(n), n.as_f64()) {
                (Some(i), _) => hash_f64(i as f64, h),
                (None, Some(f)) => hash_f64(f, h),
                (None, None) => n.to_string().hash(h),
            }
        }
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            for item in items {
                hash_into(item, state, h);
            }
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(h);
            // Independent of key order: a sum of the members' own hashes.
            let mut sum = 0u64;
            for (k, v) in map {
                let mut member = state.build_hasher();
                k.hash(&mut member);
                hash_into(v, state, &mut member);
                sum = sum.wrapping_add(member.finish());
            }
            sum.hash(h);
        }
    }
}

fn hash_f64(f: f64, h: &mut impl Hasher) {
    let f = if f == 0.0 { 0.0 } else { f };
    f.to_bits().hash(h);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn equal_numbers_and_reordered_objects_are_duplicates() {
        assert_eq!(first_duplicate(&[json!(1), json!(2), json!(1.0)]), Some(2));
        assert_eq!(first_duplicate(&[json!(-0.0), json!(0)]), Some(1));
        let a: Value = serde_json::from_str(r#"{"a": 1, "b": [1.0, {"c": null}]}"#).unwrap_or_default();
        let b: Value = serde_json::from_str(r#"{"b": [1, {"c": null}], "a": 1.0}"#).unwrap_or_default();
        assert_eq!(first_duplicate(&[a, json!("x"), b]), Some(2));
    }

    #[test]
    fn distinct_values_are_not_duplicates() {
        let items = [
            json!(null),
            json!(false),
            json!(0),
            json!("0"),
            json!([0]),
            json!({"0": 0}),
            json!([]),
            json!({}),
            json!(9_007_199_254_740_993_u64),
            json!(9_007_199_254_740_992_u64),
            json!([1, 2]),
            json!([2, 1]),
        ];
        assert_eq!(first_duplicate(&items), None);
    }
}
