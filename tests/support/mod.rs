//! What the facade's integration tests share.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

/// The binary of the example `name`, next to the running test's (built if it is not there yet).
pub fn example(name: &str) -> PathBuf {
    example_with_features(name, &[])
}

/// The binary of the example `name`, built with `features` if it is not there yet (an example
/// with required features).
pub fn example_with_features(name: &str, features: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let binary = profile_dir.join("examples").join(name);
    if !binary.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut command = Command::new(cargo);
        command.args(["build", "--example", name]);
        if !features.is_empty() {
            command.args(["--features", &features.join(",")]);
        }
        let status = command.current_dir(env!("CARGO_MANIFEST_DIR")).status().unwrap();
        assert!(status.success(), "building the {name} example failed");
    }
    binary
}

/// The binary of the example `name` built with `features` (built if it is not there yet).
pub fn example_with(name: &str, features: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let binary = profile_dir.join("examples").join(name);
    if !binary.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let status = Command::new(cargo)
            .args(["build", "--example", name, "--features", features])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "building the {name} example failed");
    }
    binary
}
