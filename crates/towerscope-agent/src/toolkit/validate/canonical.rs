//! Equality of JSON values as JSON Schema defines it (`1` equals `1.0`, key order does not
//! matter), and a hash that agrees with it, so that `uniqueItems` is linear in the array.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};

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
    canonical_number(x) == canonical_number(y)
}

/// A number by its mathematical value: an integer (written `5` or `5.0`) exactly, any other
/// float by its bits. Two numbers are equal exactly when these are, and they hash alike.
#[derive(PartialEq, Eq, Hash)]
enum Canonical {
    Integer(i128),
    Float(u64),
}

fn canonical_number(n: &Number) -> Canonical {
    if let Some(i) = n.as_i64() {
        return Canonical::Integer(i.into());
    }
    if let Some(u) = n.as_u64() {
        return Canonical::Integer(u.into());
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    // Integral floats within ±2^126 are exact integers; `as` is exact for them.
    if f.fract() == 0.0 && f.abs() < 8.5e37 {
        Canonical::Integer(f as i128)
    } else {
        Canonical::Float(f.to_bits())
    }
}

/// The index of the first element equal (as [`json_eq`]) to an earlier one, if any.
///
/// Each element is hashed once into a canonical hash (numbers by value, objects independent of
/// key order), and only elements of the same hash are compared: linear in the array for all but
/// adversarial hash collisions, which the randomly keyed hasher makes impractical.
pub(super) fn first_duplicate(items: &[Value]) -> Option<usize> {
    let state = RandomState::new();
    // The first item of each hash; later items of a hash already seen (equal, or a collision)
    // are compared with it and with the other items of that hash in `more`.
    let mut first: HashMap<u64, usize, BuildHasherDefault<Prehashed>> =
        HashMap::with_capacity_and_hasher(items.len(), BuildHasherDefault::default());
    let mut more: Vec<(u64, usize)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let hash = canonical_hash(item, &state);
        let Some(&j) = first.get(&hash) else {
            first.insert(hash, i);
            continue;
        };
        let same_hash = std::iter::once(j).chain(more.iter().filter(|(h, _)| *h == hash).map(|&(_, k)| k));
        for k in same_hash {
            #[cfg(test)]
            COMPARISONS.with(|c| c.set(c.get() + 1));
            if json_eq(&items[k], item) {
                return Some(i);
            }
        }
        more.push((hash, i));
    }
    None
}

/// A hasher for keys that are already hashes (by a randomly keyed SipHash): passes them on.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
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
        Value::Number(n) => (2u8, canonical_number(n)).hash(h),
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn equal_numbers_and_reordered_objects_are_duplicates() {
        assert_eq!(first_duplicate(&[json!(1), json!(2), json!(1.0)]), Some(2));
        assert_eq!(first_duplicate(&[json!(-0.0), json!(0)]), Some(1));
        assert_eq!(
            first_duplicate(&[json!(1u64 << 60), json!(1_152_921_504_606_846_976_f64)]),
            Some(1)
        );
        assert_eq!(first_duplicate(&[json!(0.5), json!(1), json!(0.5)]), Some(2));
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
            json!(1_152_921_504_606_846_977_u64),
            json!(1_152_921_504_606_846_976_f64 + 4096.0),
            json!([1, 2]),
            json!([2, 1]),
        ];
        assert_eq!(first_duplicate(&items), None);
    }
}
