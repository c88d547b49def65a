//! MCP against real servers nobody here wrote, installed by scripts/mcp-server.sh (npm
//! `@modelcontextprotocol/server-everything`, PyPI `mcp-server-time` and `mcp-server-git`):
//! their tools in a reply, progress, resources and templates, prompts with arguments and with
//! an embedded resource. Skipped without them, failed with `TOWERSCOPE_REQUIRE_MCP=1`.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

mod common;
mod mcp_env;

use std::process::Command;

use common::collect;
use towerscope_agent::mcp::{McpClient, McpServer};
use towerscope_agent::toolkit::Toolkit;
use towerscope_agent::{Agent, HintConfig};
use towerscope_core::{
    AgentEvent, ContentBlock, MediaBlock, Msg, PermissionMode, Role, ToolResultBlock, ToolResultState,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

fn everything() -> Option<McpServer> {
    let [program] = mcp_env::vars(["TOWERSCOPE_MCP_EVERYTHING"])?;
    Some(McpServer::stdio("everything", program, ["stdio"]).active(true))
}

/// Runs one scripted reply whose model calls `tool` with `input`, and returns the result.
async fn call(server: McpServer, tool: &str, input: &str) -> (ToolResultBlock, Vec<AgentEvent>) {
    let mut toolkit = Toolkit::new();
    let added = toolkit.add_mcp_server(server).await.unwrap();
    assert!(added.tools.iter().any(|t| t == tool), "{tool} not in {:?}", added.tools);
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", tool, input),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .toolkit(toolkit)
        .permission_mode(PermissionMode::Bypass)
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "go"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    // What the model received back in its second call.
    let result = model.requests()[1]
        .messages
        .iter()
        .rfind(|m| m.role == Role::Assistant)
        .unwrap()
        .tool_results()
        .next()
        .cloned()
        .unwrap();
    (result, out.events)
}

#[tokio::test]
async fn everything_tools_run_in_a_reply_with_progress() {
    let Some(server) = everything() else { return };
    let (sum, _) = call(server.clone(), "mcp__everything__get-sum", r#"{"a": 2, "b": 40}"#).await;
    assert_eq!(sum.state, ToolResultState::Success);
    assert_eq!(sum.output.text_content().as_deref(), Some("The sum of 2 and 40 is 42."));

    let (done, events) = call(
        server,
        "mcp__everything__trigger-long-running-operation",
        r#"{"duration": 0.3, "steps": 3}"#,
    )
    .await;
    assert_eq!(done.state, ToolResultState::Success);
    let progress: Vec<(f64, f64)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Custom(c) if c.name == "mcp_progress" => Some((
                c.value["progress"]["progress"].as_f64().unwrap(),
                c.value["progress"]["total"].as_f64().unwrap(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(progress, [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]);
    assert!(done.output.text_content().unwrap().contains("Steps: 3"));
}

#[tokio::test]
async fn everything_resources_templates_and_prompts() {
    let Some(server) = everything() else { return };
    let client = McpClient::connect(&server).await.unwrap();

    let resources = client.list_resources().await.unwrap();
    assert!(!resources.is_empty());
    let first = client.read_resource(&resources[0].uri).await.unwrap();
    assert_eq!(first[0].uri, resources[0].uri);

    let templates = client.list_resource_templates().await.unwrap();
    let text_template = templates
        .iter()
        .find(|t| t.uri_template.ends_with("/text/{resourceId}"))
        .unwrap();
    let uri = text_template.uri_template.replace("{resourceId}", "7");
    let read = client.read_resource(&uri).await.unwrap();
    assert!(
        matches!(&read[0].block, MediaBlock::Text(t) if t.text.starts_with("Resource 7: This is a plaintext resource")),
        "{read:?}"
    );
    assert!(
        client.read_resource(&uri.replace('7', "0")).await.is_err(),
        "an id the server refuses"
    );

    let prompts = client.list_prompts().await.unwrap();
    let args = prompts.iter().find(|p| p.name == "args-prompt").unwrap();
    let listed: Vec<(&str, bool)> = args.arguments.iter().map(|a| (a.name.as_str(), a.required)).collect();
    assert_eq!(listed, [("city", true), ("state", false)]);
    let weather = client
        .get_prompt("args-prompt", [("city", "Paris"), ("state", "Texas")])
        .await
        .unwrap();
    assert_eq!(weather.messages.len(), 1);
    assert_eq!(weather.messages[0].role, Role::User);
    assert_eq!(
        weather.messages[0].text_content().as_deref(),
        Some("What's weather in Paris, Texas?")
    );

    // A prompt embedding a binary resource of type text/plain: its second message is the
    // resource named, then its text (as data, no provider would take it).
    let embedded = client
        .get_prompt("resource-prompt", [("resourceType", "Blob"), ("resourceId", "2")])
        .await
        .unwrap();
    assert_eq!(embedded.messages.len(), 2);
    let texts: Vec<&str> = embedded.messages[1]
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].starts_with("[resource demo://resource/"), "{texts:?}");
    assert!(texts[1].starts_with("Resource 2:"), "{texts:?}");
}

#[tokio::test]
async fn mcp_server_time_answers_for_a_timezone() {
    let Some([program]) = mcp_env::vars(["TOWERSCOPE_MCP_TIME"]) else {
        return;
    };
    let server = McpServer::stdio("time", program, ["--local-timezone", "UTC"]).active(true);
    let (now, _) = call(
        server.clone(),
        "mcp__time__get_current_time",
        r#"{"timezone": "Asia/Tokyo"}"#,
    )
    .await;
    assert_eq!(now.state, ToolResultState::Success);
    let json: serde_json::Value = serde_json::from_str(&now.output.text_content().unwrap()).unwrap();
    assert_eq!(json["timezone"], "Asia/Tokyo");
    assert!(json["datetime"].as_str().unwrap().ends_with("+09:00"), "{json}");

    let (converted, _) = call(
        server.clone(),
        "mcp__time__convert_time",
        r#"{"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Kolkata"}"#,
    )
    .await;
    let json: serde_json::Value = serde_json::from_str(&converted.output.text_content().unwrap()).unwrap();
    assert!(
        json["target"]["datetime"].as_str().unwrap().contains("T17:30:00"),
        "{json}"
    );

    let (bad, _) = call(
        server,
        "mcp__time__get_current_time",
        r#"{"timezone": "Nowhere/Atlantis"}"#,
    )
    .await;
    assert_eq!(
        bad.state,
        ToolResultState::Error,
        "the server's error is an error result"
    );
}

#[tokio::test]
async fn mcp_server_git_reads_a_repository() {
    let Some([program]) = mcp_env::vars(["TOWERSCOPE_MCP_GIT"]) else {
        return;
    };
    let repo = std::env::temp_dir().join(format!("towerscope-mcp-git-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&repo);
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("a.txt"), "one\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "The first commit"]);
    std::fs::write(repo.join("a.txt"), "two\n").unwrap();

    let path = repo.display().to_string();
    let server = McpServer::stdio("git", program, ["--repository", path.as_str()]).active(true);
    let input = serde_json::json!({ "repo_path": path }).to_string();
    let (log, _) = call(server.clone(), "mcp__git__git_log", &input).await;
    assert_eq!(log.state, ToolResultState::Success);
    assert!(log.output.text_content().unwrap().contains("The first commit"));
    let (diff, _) = call(server, "mcp__git__git_diff_unstaged", &input).await;
    let diff = diff.output.text_content().unwrap();
    assert!(diff.contains("-one") && diff.contains("+two"), "{diff}");
    let _ = std::fs::remove_dir_all(&repo);
}
