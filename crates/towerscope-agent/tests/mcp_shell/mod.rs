//! MCP servers written as `sh` one-liners, for tests of what a server does wrong or slowly (goes
//! quiet, takes its time): they need nothing installed. Shared by the `mcp` module's unit tests
//! (through `#[path]`) and the integration tests (`mod mcp_shell;`); the parent module has
//! `McpServer` in scope, as `crate::mcp` and a test that uses `towerscope_agent::mcp::McpServer`
//! both do.
#![allow(dead_code, unreachable_pub)]

use super::McpServer;

/// The answer to the SDK's first request, the initialisation (id 0): a server with tools,
/// prompts and resources.
const INITIALISED: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"shell","version":"0"}}}"#;

/// A server that answers the initialisation and then reads nothing more and never answers.
pub fn goes_quiet() -> McpServer {
    let script = format!("read -r _; printf '%s\\n' '{INITIALISED}'; exec sleep 60");
    McpServer::stdio("quiet", "sh", ["-c".to_owned(), script])
}

/// [`goes_quiet`], writing its process id to `pid` first.
pub fn goes_quiet_telling_its_pid(pid: &std::path::Path) -> McpServer {
    let script = format!("echo $$ > \"$1\"; read -r _; printf '%s\\n' '{INITIALISED}'; exec sleep 60");
    let pid = pid.display().to_string();
    McpServer::stdio("quiet", "sh", ["-c".to_owned(), script, "quiet".to_owned(), pid])
}

/// A server that writes the variables `names` of its environment to `path`, one `NAME=value`
/// a line (empty when unset), answers the initialisation, and goes quiet.
pub fn tells_its_environment(path: &std::path::Path, names: &[&str]) -> McpServer {
    let lines: String = names.iter().map(|n| format!("{n}=${{{n}}}\\n")).collect();
    let script = format!("printf \"{lines}\" > \"$1\"; read -r _; printf '%s\\n' '{INITIALISED}'; exec sleep 60");
    let path = path.display().to_string();
    McpServer::stdio("env", "sh", ["-c".to_owned(), script, "env".to_owned(), path])
}

/// The number in `"key":N` of the JSON-RPC line in the shell variable `line`, as `sh` code
/// (the SDK's request ids and progress tokens are numbers).
fn number_of(key: &str, line: &str) -> String {
    format!(r#"$(printf '%s' "${line}" | sed -n 's/.*"{key}":\([0-9]*\).*/\1/p')"#)
}

/// A server with one tool, `work`, whose call reports progress `steps` times, `every` apart,
/// and answers "done" `every` after the last: it never stays silent longer than `every`.
pub fn reports_progress(steps: u32, every: std::time::Duration) -> McpServer {
    let tools = r#"{"tools":[{"name":"work","description":"Works a while.","inputSchema":{"type":"object"}}]}"#;
    let script = [
        format!("read -r _; printf '%s\\n' '{INITIALISED}'; read -r _"),
        format!("read -r list; id={}", number_of("id", "list")),
        format!(r#"printf '{{"jsonrpc":"2.0","id":%s,"result":%s}}\n' "$id" '{tools}'"#),
        format!(
            "read -r call; id={}; token={}",
            number_of("id", "call"),
            number_of("progressToken", "call")
        ),
        format!(r#"i=1; while [ "$i" -le {steps} ]; do"#),
        format!(
            r#"printf '{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":%s,"progress":%s,"total":{steps}}}}}\n' "$token" "$i""#
        ),
        format!("sleep {}; i=$((i + 1)); done", every.as_secs_f64()),
        r#"printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"done"}]}}\n' "$id""#.to_owned(),
        "exec sleep 60".to_owned(),
    ]
    .join("\n");
    McpServer::stdio("worker", "sh", ["-c".to_owned(), script])
}

/// A server that answers the initialisation, then writes every message it reads to `path`, one
/// JSON-RPC message a line, and answers nothing (`cat` without `exec`, so that `sh` holds the
/// answers' pipe open).
pub fn records_requests(path: &std::path::Path) -> McpServer {
    let script = format!("read -r _; printf '%s\\n' '{INITIALISED}'; cat > \"$1\"");
    let path = path.display().to_string();
    McpServer::stdio("recorder", "sh", ["-c".to_owned(), script, "recorder".to_owned(), path])
}

/// A server with one tool, `get`, whose every call is answered with `result` (a JSON object, the
/// call's `result`), then goes quiet.
pub fn answers_calls_with(result: &str) -> McpServer {
    describes_and_answers("Gets it.", result)
}

/// [`answers_calls_with`], its tool described by `description` (plain text, no quotes).
pub fn describes_and_answers(description: &str, result: &str) -> McpServer {
    let tools =
        format!(r#"{{"tools":[{{"name":"get","description":"{description}","inputSchema":{{"type":"object"}}}}]}}"#);
    let script = [
        format!("read -r _; printf '%s\\n' '{INITIALISED}'; read -r _"),
        format!("read -r list; id={}", number_of("id", "list")),
        format!(r#"printf '{{"jsonrpc":"2.0","id":%s,"result":%s}}\n' "$id" '{tools}'"#),
        format!("read -r call; id={}", number_of("id", "call")),
        format!(r#"printf '{{"jsonrpc":"2.0","id":%s,"result":%s}}\n' "$id" '{result}'"#),
        "exec sleep 60".to_owned(),
    ]
    .join("\n");
    McpServer::stdio("answers", "sh", ["-c".to_owned(), script])
}

/// A server with one tool, `get`, whose call it answers with a JSON-RPC error of id `null`
/// carrying `message` (what JSON-RPC asks of a server that could not read a request), then goes
/// quiet.
pub fn answers_calls_with_a_null_id_error(message: &str) -> McpServer {
    let tools = r#"{"tools":[{"name":"get","description":"Gets it.","inputSchema":{"type":"object"}}]}"#;
    let script = [
        format!("read -r _; printf '%s\\n' '{INITIALISED}'; read -r _"),
        format!("read -r list; id={}", number_of("id", "list")),
        format!(r#"printf '{{"jsonrpc":"2.0","id":%s,"result":%s}}\n' "$id" '{tools}'"#),
        "read -r call".to_owned(),
        format!(r#"printf '%s\n' '{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":"{message}"}}}}'"#),
        "exec sleep 60".to_owned(),
    ]
    .join("\n");
    McpServer::stdio("null-id", "sh", ["-c".to_owned(), script])
}
