//! What scripts/mcp-server.sh exports for the MCP tests. A missing variable skips the test,
//! unless `TOWERSCOPE_REQUIRE_MCP=1` (scripts/test.sh sets it): then the test fails.
#![allow(dead_code, unreachable_pub)]

/// The variables `names`, or `None` (with the reason printed) when one is missing.
pub fn vars<const N: usize>(names: [&str; N]) -> Option<[String; N]> {
    let got = names.map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()));
    if got.iter().all(Option::is_some) {
        return Some(got.map(Option::unwrap_or_default));
    }
    let missing: Vec<&str> = names
        .iter()
        .zip(&got)
        .filter(|(_, v)| v.is_none())
        .map(|(k, _)| *k)
        .collect();
    assert!(
        std::env::var("TOWERSCOPE_REQUIRE_MCP").as_deref() != Ok("1"),
        "TOWERSCOPE_REQUIRE_MCP=1 but {missing:?} are not set; run scripts/test.sh \
         (or eval \"$(scripts/mcp-server.sh start)\")"
    );
    eprintln!("skipped: {missing:?} not set (run scripts/test.sh)");
    None
}
