//! MCP resources and prompts against a real server (tests/mcp/server.py, started by
//! scripts/test.sh): listing resources and templates, reading text, binary and templated
//! resources, listing prompts and rendering one with arguments into messages an agent replies
//! to, and the server's errors as typed errors.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

mod mcp_env;

use towerscope_agent::mcp::{McpClient, McpServer};
use towerscope_agent::toolkit::Toolkit;
use towerscope_agent::{Agent, HintConfig};
use towerscope_core::{AgentError, ContentBlock, DataSource, MediaBlock, Msg, Role};
use towerscope_models::{ScriptedModel, ScriptedResponse};

async fn stdio() -> Option<McpClient> {
    let [python, script] = mcp_env::vars(["TOWERSCOPE_MCP_PYTHON", "TOWERSCOPE_MCP_SERVER"])?;
    let server = McpServer::stdio("py", python, [script, "stdio".to_owned()]);
    Some(McpClient::connect(&server).await.unwrap())
}

#[tokio::test]
async fn resources_and_templates_are_listed_and_read() {
    let Some(client) = stdio().await else { return };
    let resources = client.list_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["towerscope://greeting", "towerscope://pixel"]);
    assert_eq!(resources[0].name, "greeting");
    assert_eq!(resources[0].description.as_deref(), Some("A greeting."));
    assert_eq!(resources[0].mime_type.as_deref(), Some("text/plain"));

    let templates = client.list_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 1);
    assert_eq!(templates[0].uri_template, "towerscope://notes/{name}");
    assert_eq!(templates[0].name, "note");

    let text = client.read_resource("towerscope://greeting").await.unwrap();
    assert_eq!(text.len(), 1);
    assert_eq!(text[0].uri, "towerscope://greeting");
    assert!(
        matches!(&text[0].block, MediaBlock::Text(t) if t.text == "Hello from the resource."),
        "{text:?}"
    );

    let binary = client.read_resource("towerscope://pixel").await.unwrap();
    match &binary[0].block {
        MediaBlock::Data(d) => match &d.source {
            DataSource::Base64 { media_type, data } => {
                assert_eq!(media_type, "image/png");
                assert_eq!(data, "iVBORw0KGgo=", "the PNG signature, base64");
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }

    let filled = client.read_resource("towerscope://notes/groceries").await.unwrap();
    assert!(matches!(&filled[0].block, MediaBlock::Text(t) if t.text == "The note called groceries."));

    let err = client.read_resource("towerscope://nothing").await.unwrap_err();
    assert!(
        matches!(&err, AgentError::State(m) if m.contains("towerscope://nothing")),
        "{err}"
    );
}

#[tokio::test]
async fn a_prompt_rendered_with_arguments_is_what_the_model_receives() {
    let Some(client) = stdio().await else { return };
    let prompts = client.list_prompts().await.unwrap();
    let review = prompts.iter().find(|p| p.name == "review").unwrap();
    assert_eq!(review.description.as_deref(), Some("Ask for a code review."));
    let args: Vec<(&str, bool)> = review.arguments.iter().map(|a| (a.name.as_str(), a.required)).collect();
    assert_eq!(args, [("code", true), ("language", false)]);
    let plain = prompts.iter().find(|p| p.name == "plain").unwrap();
    assert!(plain.arguments.is_empty());

    let rendered = client
        .get_prompt("review", [("code", "fn main() {}"), ("language", "Rust")])
        .await
        .unwrap();
    let roles: Vec<Role> = rendered.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant]);
    assert!(
        rendered.messages.iter().all(|m| &*m.name == "py"),
        "named after the server"
    );
    assert_eq!(
        rendered.messages[0].text_content().as_deref(),
        Some("Review this Rust code:\nfn main() {}")
    );

    // The rendered messages are a conversation an agent takes as it is.
    let model = ScriptedModel::new("m", [ScriptedResponse::text("Looks fine.")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .build()
        .unwrap();
    agent.observe(rendered.messages[..1].to_vec()).unwrap();
    agent.reply(Msg::user("user", "Go on.")).await.unwrap();
    let seen: Vec<String> = model.requests()[0]
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .filter_map(Msg::text_content)
        .collect();
    assert_eq!(seen, ["Review this Rust code:\nfn main() {}", "Go on."]);

    let no_args = client
        .get_prompt("plain", Vec::<(String, String)>::new())
        .await
        .unwrap();
    assert_eq!(no_args.messages[0].text_content().as_deref(), Some("Say hello."));

    let missing = client.get_prompt("review", [("language", "Rust")]).await.unwrap_err();
    assert!(
        matches!(&missing, AgentError::State(m) if m.contains("rendering the prompt 'review'")),
        "{missing}"
    );
    let unknown = client.get_prompt("nope", [("a", "b")]).await.unwrap_err();
    assert!(matches!(unknown, AgentError::State(_)));
}

#[tokio::test]
async fn the_toolkits_connection_reads_resources_over_http() {
    let Some([url]) = mcp_env::vars(["TOWERSCOPE_MCP_HTTP_URL"]) else {
        return;
    };
    let mut toolkit = Toolkit::new();
    let added = toolkit.add_mcp_server(McpServer::http("web", url)).await.unwrap();
    assert!(added.tools.contains(&"mcp__web__echo".to_owned()));
    let read = added.client.read_resource("towerscope://greeting").await.unwrap();
    assert!(matches!(&read[0].block, MediaBlock::Text(t) if t.text == "Hello from the resource."));
    let rendered = added.client.get_prompt("review", [("code", "x")]).await.unwrap();
    assert!(matches!(
        &rendered.messages[0].content[0],
        ContentBlock::Text(t) if t.text == "Review this unknown code:\nx"
    ));
}
