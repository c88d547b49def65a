//! The official JSON-Schema-Test-Suite's draft 2020-12 cases, run as data against the toolkit's
//! validator.
//!
//! `scripts/json-schema-suite.sh` fetches the suite and prints its directory; this test reads it
//! from `JSON_SCHEMA_SUITE_DIR`. Without it the test says so and passes, unless
//! `TOWERSCOPE_REQUIRE_SUITE=1` (as `scripts/test.sh` sets), where it fails.
//!
//! Every case whose schema [`CompiledSchema::new`] accepts is run; a schema it refuses (a keyword
//! it does not enforce, a `$ref` out of the document, a pattern `regex-lite` cannot compile) is
//! counted as skipped with the reason. Whole files about keywords that are not enforced are
//! skipped and listed. A case that fails must be in [`KNOWN_FAILURES`], with its reason; an entry
//! there that passes fails the test too, so the list stays true.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use towerscope_agent::toolkit::{CompiledSchema, SchemaError};

/// Files about keywords the validator does not enforce, or about resolving other documents.
const SKIPPED_FILES: &[(&str, &str)] = &[
    (
        "anchor.json",
        "$anchor is not resolved: only JSON-pointer $refs into the same document",
    ),
    ("defs.json", "validates schemas against the remote meta-schema"),
    (
        "dynamicRef.json",
        "$dynamicRef is not enforced (refused by CompiledSchema::new)",
    ),
    ("refRemote.json", "remote $refs are not resolved"),
    (
        "unevaluatedItems.json",
        "unevaluatedItems is not enforced (refused by CompiledSchema::new)",
    ),
    (
        "unevaluatedProperties.json",
        "unevaluatedProperties is not enforced (refused by CompiledSchema::new)",
    ),
    (
        "vocabulary.json",
        "custom meta-schemas and $vocabulary are not supported",
    ),
];

/// Cases that fail, as (file, group, case), and why.
const KNOWN_FAILURES: &[(&str, &str, &str, &str)] = &[
    (
        "optional/format-assertion.json",
        "schema that uses custom metaschema with format-assertion: false",
        "format-assertion: false: invalid string",
        "format is an annotation only; the format-assertion vocabulary of a custom meta-schema is not read",
    ),
    (
        "optional/format-assertion.json",
        "schema that uses custom metaschema with format-assertion: true",
        "format-assertion: true: invalid string",
        "format is an annotation only; the format-assertion vocabulary of a custom meta-schema is not read",
    ),
];

struct Tally {
    passed: usize,
    known: usize,
    skipped_groups: Vec<String>,
    failures: Vec<String>,
    stale: Vec<String>,
}

#[test]
fn json_schema_test_suite_draft2020_12() {
    let Some(dir) = std::env::var_os("JSON_SCHEMA_SUITE_DIR") else {
        assert!(
            std::env::var("TOWERSCOPE_REQUIRE_SUITE").as_deref() != Ok("1"),
            "TOWERSCOPE_REQUIRE_SUITE=1 but JSON_SCHEMA_SUITE_DIR is not set; run scripts/json-schema-suite.sh"
        );
        eprintln!("JSON_SCHEMA_SUITE_DIR is not set: the JSON-Schema-Test-Suite was not run");
        return;
    };
    let dir = Path::new(&dir);
    let mut files = json_files(dir);
    assert!(files.len() > 30, "{} holds only {} files", dir.display(), files.len());
    // The optional cases (big numbers, ECMA-262 regexes, …); `optional/format/` asserts formats,
    // which are annotations only here.
    files.extend(json_files(&dir.join("optional")));

    let mut tally = Tally {
        passed: 0,
        known: 0,
        skipped_groups: Vec::new(),
        failures: Vec::new(),
        stale: Vec::new(),
    };
    let mut skipped_files = Vec::new();
    for path in &files {
        let file = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
        if let Some((_, why)) = SKIPPED_FILES.iter().find(|(f, _)| *f == file) {
            skipped_files.push(format!("{file}: {why}"));
            continue;
        }
        let groups: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for group in &groups {
            run_group(&file, group, &mut tally);
        }
    }

    let failed = tally.failures.len();
    eprintln!(
        "JSON-Schema-Test-Suite draft2020-12: {} cases passed, {} known failures, {} unexpected failures; \
         {} groups skipped, {} files skipped",
        tally.passed,
        tally.known,
        failed,
        tally.skipped_groups.len(),
        skipped_files.len()
    );
    for line in skipped_files.iter().chain(&tally.skipped_groups) {
        eprintln!("  skipped {line}");
    }
    for line in &tally.failures {
        eprintln!("  FAILED {line}");
    }
    for line in &tally.stale {
        eprintln!("  PASSES BUT LISTED AS KNOWN FAILURE {line}");
    }
    assert!(tally.failures.is_empty(), "{failed} suite cases failed");
    assert!(tally.stale.is_empty(), "known failures that pass: {:?}", tally.stale);
    assert!(tally.passed > 500, "only {} suite cases ran", tally.passed);
}

fn json_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn run_group(file: &str, group: &Value, tally: &mut Tally) {
    let description = group["description"].as_str().unwrap_or_default();
    let compiled = match CompiledSchema::new(group["schema"].clone()) {
        Ok(compiled) => compiled,
        Err(e) => {
            let reason = match e {
                SchemaError::UnsupportedKeyword { keyword, .. } => format!("uses {keyword}"),
                SchemaError::UnresolvedRef { reference, .. } => format!("$ref {reference} does not resolve"),
                SchemaError::InvalidPattern { pattern, .. } => format!("pattern {pattern} is not regex-lite"),
                other => other.to_string(),
            };
            tally.skipped_groups.push(format!("{file} / {description}: {reason}"));
            return;
        }
    };
    let known: BTreeMap<&str, &str> = KNOWN_FAILURES
        .iter()
        .filter(|(f, g, _, _)| *f == file && *g == description)
        .map(|(_, _, case, why)| (*case, *why))
        .collect();
    for case in group["tests"].as_array().unwrap() {
        let case_description = case["description"].as_str().unwrap_or_default();
        let expected = case["valid"].as_bool().unwrap();
        let result = compiled.validate(&case["data"]);
        let name = format!("{file} / {description} / {case_description}");
        match (result.is_ok() == expected, known.contains_key(case_description)) {
            (true, false) => tally.passed += 1,
            (true, true) => tally.stale.push(name),
            (false, true) => tally.known += 1,
            (false, false) => tally
                .failures
                .push(format!("{name}: expected valid={expected}, got {result:?}")),
        }
    }
}
