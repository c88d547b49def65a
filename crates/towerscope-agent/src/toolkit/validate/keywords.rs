//! The keywords that take more than a line: numbers, sizes, arrays and choices.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use super::repr::{repr, repr_list};
use super::{Found, MAX_DEPTH, Path, Seg, Validator, is_type, resolve_ref};

/// A count in a schema (`minLength`, `maxItems`, …): a non-negative integer, possibly written as
/// an integral float (`2.0`).
pub(super) fn as_count(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < u64::MAX as f64)
            .map(|f| f as u64)
    })
}

/// The values an integer `format` allows (what `schemars` writes for Rust's integer types:
/// `int32` for `i32`, `uint` for `usize`, …), or `None` for any other format, which only
/// annotates. A value out of range would not decode into the Rust type the schema was made
/// from, so it is refused here, where the model sees why.
pub(super) fn integer_range(format: &str) -> Option<(i128, i128)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        "uint64" | "uint" => (0, u64::MAX.into()),
        _ => return None,
    })
}

/// Whether the number `n` lies in `range`: an integral float only when it converts into it
/// exactly (`u64::MAX as f64` rounds up to 2^64, which no `u64` holds). A fraction is not the
/// format's to refuse: `"type": "integer"` does, with its own message.
pub(super) fn in_range(n: &Number, (min, max): (i128, i128)) -> bool {
    match (n.as_i64(), n.as_u64()) {
        (Some(i), _) => (min..=max).contains(&i128::from(i)),
        (_, Some(u)) => (min..=max).contains(&i128::from(u)),
        // Past ±2^127 the cast saturates, and 2^127 is out of every range.
        _ => n
            .as_f64()
            .is_some_and(|f| f.fract() != 0.0 || (f.abs() < 2f64.powi(127) && (min..=max).contains(&(f as i128)))),
    }
}

impl<'s> Validator<'_, 's> {
    /// An integer `format`'s range (see [`integer_range`]); a side the schema bounds itself at
    /// least as tightly (`minimum`, `maximum`) is left to that keyword and its message.
    pub(super) fn check_format(&mut self, n: &Number, format: &str, obj: &Map<String, Value>, path: &Path<'_>) {
        let Some(range) = integer_range(format) else {
            return;
        };
        if in_range(n, range) {
            return;
        }
        let below = n.as_f64().is_some_and(|f| f < range.0 as f64);
        let (what, limit, own) = if below {
            ("less than the minimum", range.0, "minimum")
        } else {
            ("greater than the maximum", range.1, "maximum")
        };
        // Only for a whole number: a float near the type's edge rounds, in `f64`, to the edge
        // (2^64 to `u64::MAX`), so the schema's own bound could let it through.
        let whole = n.is_i64() || n.is_u64();
        let own_is_tighter = whole
            && obj.get(own).and_then(Value::as_f64).is_some_and(|bound| {
                if below {
                    bound >= limit as f64
                } else {
                    bound <= limit as f64
                }
            });
        if !own_is_tighter {
            self.error(path, || format!("{n} is {what} of {limit} ({format})"));
        }
    }

    pub(super) fn check_number(
        &mut self,
        n: &Number,
        keyword: &str,
        limit: &Number,
        obj: &Map<String, Value>,
        path: &Path<'_>,
    ) {
        let (Some(x), Some(l)) = (n.as_f64(), limit.as_f64()) else {
            return;
        };
        let Some(order) = compare(n, limit) else {
            return;
        };
        let (below, above) = (order.is_lt(), order.is_gt());
        let draft4_exclusive = |key: &str| obj.get(key).and_then(Value::as_bool).unwrap_or(false);
        let failed = match keyword {
            "minimum" if draft4_exclusive("exclusiveMinimum") => {
                (!above).then_some("less than or equal to the minimum")
            }
            "minimum" => below.then_some("less than the minimum"),
            "maximum" if draft4_exclusive("exclusiveMaximum") => {
                (!below).then_some("greater than or equal to the maximum")
            }
            "maximum" => above.then_some("greater than the maximum"),
            "exclusiveMinimum" => (!above).then_some("less than or equal to the minimum"),
            "exclusiveMaximum" => (!below).then_some("greater than or equal to the maximum"),
            _ => {
                if l > 0.0 && !is_multiple(n, x, limit, l) {
                    self.error(path, || format!("{n} is not a multiple of {limit}"));
                }
                None
            }
        };
        if let Some(what) = failed {
            self.error(path, || format!("{n} is {what} of {limit}"));
        }
    }

    pub(super) fn check_size(&mut self, inst: &Value, len: usize, min: bool, limit: u64, path: &Path<'_>, noun: &str) {
        let len = len as u64;
        if (min && len >= limit) || (!min && len <= limit) {
            return;
        }
        // The messages of `jsonschema` 4.21+.
        self.error(path, || {
            let message = match (min, noun.is_empty()) {
                (true, _) if limit == 1 => "should be non-empty".to_owned(),
                (false, _) if limit == 0 => "is expected to be empty".to_owned(),
                (true, true) => "is too short".to_owned(),
                (false, true) => "is too long".to_owned(),
                (true, false) => format!("does not have enough {noun}"),
                (false, false) => format!("has too many {noun}"),
            };
            format!("{} {message}", repr(inst))
        });
    }

    pub(super) fn check_items(
        &mut self,
        inst: &Value,
        keyword: &str,
        sv: &'s Value,
        obj: &'s Map<String, Value>,
        path: &Path<'_>,
        depth: u32,
    ) {
        let Value::Array(items) = inst else { return };
        let (skip, sub) = match (keyword, sv) {
            // A tuple: `prefixItems` (2020-12) or an array under `items` (drafts 4 to 2019-09).
            ("prefixItems", Value::Array(schemas)) | ("items", Value::Array(schemas)) => {
                for (i, (item, sub)) in items.iter().zip(schemas).enumerate() {
                    self.check(item, sub, &path.child(Seg::Index(i)), depth + 1);
                }
                return;
            }
            ("items", sub) => (
                obj.get("prefixItems").and_then(Value::as_array).map_or(0, Vec::len),
                sub,
            ),
            // The rest after a tuple under `items`, in drafts 4 to 2019-09.
            ("additionalItems", sub) => match obj.get("items") {
                Some(Value::Array(tuple)) => (tuple.len(), sub),
                _ => return,
            },
            _ => return,
        };
        if keyword == "additionalItems" && *sub == Value::Bool(false) && items.len() > skip {
            let extras = &items[skip..];
            let verb = if extras.len() == 1 { "was" } else { "were" };
            return self.error(path, || {
                format!(
                    "Additional items are not allowed ({} {verb} unexpected)",
                    repr_list(extras)
                )
            });
        }
        for (i, item) in items.iter().enumerate().skip(skip) {
            if self.stopped() {
                return;
            }
            self.check(item, sub, &path.child(Seg::Index(i)), depth + 1);
        }
    }

    /// `contains` with `minContains` and `maxContains`, with the messages of `jsonschema`.
    pub(super) fn check_contains(
        &mut self,
        inst: &Value,
        sv: &'s Value,
        obj: &Map<String, Value>,
        path: &Path<'_>,
        depth: u32,
    ) {
        let Value::Array(items) = inst else { return };
        let min = obj.get("minContains").and_then(as_count).unwrap_or(1);
        let max = obj.get("maxContains").and_then(as_count);
        let mut matches = 0u64;
        for item in items {
            if max.is_none() && matches >= min {
                break;
            }
            if self.is_valid(item, sv, depth + 1) {
                matches += 1;
                if let Some(max) = max.filter(|&m| matches > m) {
                    return self.error(path, || {
                        format!("Too many items match the given schema (expected at most {max})")
                    });
                }
            }
        }
        if matches >= min {
            return;
        }
        self.error(path, || {
            if matches == 0 {
                format!("{} does not contain items matching the given schema", repr(inst))
            } else {
                format!("Too few items match the given schema (expected at least {min} but only {matches} matched)")
            }
        });
    }

    /// `anyOf` and `oneOf`. Each branch is applied once: in `fail_fast` mode unless its error
    /// may become the message (the only branch whose type admits the instance).
    pub(super) fn check_choice(&mut self, inst: &Value, one_of: bool, sv: &'s Value, path: &Path<'_>, depth: u32) {
        let Value::Array(branches) = sv else { return };
        // When exactly one branch admits the instance's type, its own error says more.
        let mut typed = branches
            .iter()
            .enumerate()
            .filter(|(_, b)| self.admits_type(inst, b, depth));
        let explaining = match (typed.next(), typed.next()) {
            (Some((i, _)), None) if !self.fail_fast => Some(i),
            _ => None,
        };
        let mut valid: Vec<&Value> = Vec::new();
        let mut explanation: Option<Found> = None;
        for (i, branch) in branches.iter().enumerate() {
            if self.run.abort.get().is_some() {
                return;
            }
            let mut sub = self.sub(explaining != Some(i));
            sub.check(inst, branch, path, depth + 1);
            if !sub.failed {
                valid.push(branch);
                // anyOf needs one; oneOf needs a second only to fail, and all of them to say so.
                if !one_of || (self.fail_fast && valid.len() > 1) {
                    break;
                }
            } else if explaining == Some(i) {
                explanation = sub.best;
            }
        }
        match valid.as_slice() {
            [] => match explanation {
                Some(found) => self.offer(found),
                None => self.push(path, true, || {
                    format!("{} is not valid under any of the given schemas", repr(inst))
                }),
            },
            [_] => {}
            // As `jsonschema`: the other valid branches, then the first.
            [first, rest @ ..] => self.error(path, || {
                format!(
                    "{} is valid under each of {}",
                    repr(inst),
                    repr_list(rest.iter().copied().chain([*first]))
                )
            }),
        }
    }

    /// Whether a branch's declared type (through `$ref`s) admits the instance.
    pub(super) fn admits_type(&self, inst: &Value, schema: &'s Value, depth: u32) -> bool {
        let Some(obj) = schema.as_object() else {
            return schema.as_bool().unwrap_or(true);
        };
        if let Some(types) = obj.get("type") {
            return match types {
                Value::String(t) => is_type(inst, t),
                Value::Array(ts) => ts.iter().any(|t| t.as_str().is_some_and(|t| is_type(inst, t))),
                _ => true,
            };
        }
        match obj
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve_ref(self.run.root, r))
        {
            Some(target) if depth < MAX_DEPTH => self.admits_type(inst, target, depth + 1),
            _ => true,
        }
    }
}

/// How `a` compares with `b`, exactly: integers (as written, without a fraction) as integers,
/// an integer and a float by their values (in `f64`, `i64::MAX` and `i64::MAX + 1` are one
/// number), two floats as floats.
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    let int = |n: &Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    match (int(a), int(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        (Some(x), None) => compare_with_float(x, b.as_f64()?),
        (None, Some(y)) => compare_with_float(y, a.as_f64()?).map(Ordering::reverse),
        (None, None) => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// How the integer `i` compares with the float `f`, exactly.
fn compare_with_float(i: i128, f: f64) -> Option<Ordering> {
    // ±2^127 bound every i128 that a JSON integer (an i64 or a u64) can be.
    let bound = 2f64.powi(127);
    if f.is_nan() {
        return None;
    }
    if f >= bound {
        return Some(Ordering::Less);
    }
    if f < -bound {
        return Some(Ordering::Greater);
    }
    // Within the bounds, the floor of a float converts to i128 exactly.
    let floor = f.floor();
    Some(match i.cmp(&(floor as i128)) {
        Ordering::Equal if f != floor => Ordering::Less,
        order => order,
    })
}

/// `multipleOf`: exactly for integers; otherwise in decimal, on the numbers as JSON writes them
/// (their shortest round-trip texts), so that `19.99` is a multiple of `0.01` as its writer
/// meant (in binary floating point, 19.99 / 0.01 is 1998.9999999999998, which `jsonschema`
/// refuses). A number whose text does not read as a decimal falls back to the float quotient.
fn is_multiple(n: &Number, x: f64, limit: &Number, l: f64) -> bool {
    let int = |n: &Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    if let (Some(a), Some(b)) = (int(n), int(limit)) {
        return a % b == 0;
    }
    if let Some(multiple) = decimal(n).zip(decimal(limit)).and_then(|(x, l)| decimal_multiple(x, l)) {
        return multiple;
    }
    let q = x / l;
    if q.is_finite() {
        q.fract() == 0.0
    } else {
        exact_multiple(x, l)
    }
}

/// The absolute value of `n` as `digits × 10^exponent`, read from its shortest round-trip text
/// (`19.99` is `1999 × 10^-2`, `1e-8` is `1 × 10^-8`), trailing zeros moved to the exponent.
fn decimal(n: &Number) -> Option<(u128, i32)> {
    let text = n.to_string();
    let text = text.strip_prefix('-').unwrap_or(&text);
    let (digits, exponent) = match text.split_once(['e', 'E']) {
        Some((digits, exponent)) => (digits, exponent.parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let mut m: u128 = 0;
    for c in whole.chars().chain(fraction.chars()) {
        m = m.checked_mul(10)?.checked_add(c.to_digit(10)?.into())?;
    }
    let mut e = exponent.checked_sub(i32::try_from(fraction.len()).ok()?)?;
    while m != 0 && m.is_multiple_of(10) {
        m /= 10;
        e += 1;
    }
    Some((m, e))
}

/// Whether `mx × 10^ex` is a whole multiple of `ml × 10^el` (`ml` not zero), exactly; `None`
/// if the arithmetic would overflow.
fn decimal_multiple((mx, ex): (u128, i32), (ml, el): (u128, i32)) -> Option<bool> {
    if mx == 0 {
        return Some(true);
    }
    if ml == 0 {
        return None;
    }
    if ex >= el {
        // mx × 10^(ex − el) modulo ml, a digit of ten at a time (JSON numbers' exponents are
        // within a few hundred of each other).
        let mut rest = mx % ml;
        for _ in 0..(ex - el) {
            if rest == 0 {
                break;
            }
            rest = rest.checked_mul(10)? % ml;
        }
        Some(rest == 0)
    } else {
        // A divisor past u128 is larger than mx, which it then cannot divide.
        let divisor = u32::try_from(el - ex)
            .ok()
            .and_then(|k| 10u128.checked_pow(k))
            .and_then(|p| ml.checked_mul(p));
        Some(divisor.is_some_and(|d| mx % d == 0))
    }
}

/// Whether `x / l` is a whole number, exactly, for finite floats: each is `odd × 2^e`, and the
/// quotient is whole when the divisor's odd part divides the dividend's and the power of two
/// left is not negative. This is the fallback, as `jsonschema` falls back to fractions, when the
/// float quotient overflows.
fn exact_multiple(x: f64, l: f64) -> bool {
    let (Some((mx, ex)), Some((ml, el))) = (odd_and_exponent(x), odd_and_exponent(l)) else {
        return x == 0.0;
    };
    mx % ml == 0 && ex >= el
}

/// A finite non-zero float as `odd × 2^exponent`.
fn odd_and_exponent(f: f64) -> Option<(u64, i32)> {
    if !f.is_finite() || f == 0.0 {
        return None;
    }
    let bits = f.abs().to_bits();
    let exponent_bits = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, exponent) = if exponent_bits == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), exponent_bits - 1075)
    };
    let shift = mantissa.trailing_zeros();
    Some((mantissa >> shift, exponent + shift as i32))
}
