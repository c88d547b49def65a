//! Tool groups and the `reset_tools` meta tool that activates them.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use towerscope_core::ToolChunk;

use super::{Tool, ToolChunkStream};

/// The name of the group that always exists and is always active.
pub const BASIC_GROUP: &str = "basic";

/// The name of the meta tool that sets the active groups.
pub const RESET_TOOLS: &str = "reset_tools";

/// The key of `reset_tools`' result metadata holding the groups it activated (an array of
/// strings: the complete set of active groups, `basic` left out).
pub const ACTIVATED_GROUPS_KEY: &str = "activated_groups";

/// A named set of tools the model activates with `reset_tools`.
///
/// The tools of a group are offered to the model, and may be called, only while the group is
/// active. The `basic` group always exists and is always active.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolGroup {
    /// The group's name: the name of its flag in `reset_tools`.
    pub name: String,
    /// What the group's tools are for: the description of its flag in `reset_tools`.
    pub description: String,
    /// How to use the group's tools, returned to the model when `reset_tools` activates it.
    pub instructions: String,
    /// Whether the group is active when the agent starts (its initial active groups are those of
    /// [`Toolkit::default_active_groups`](super::Toolkit::default_active_groups)).
    pub active: bool,
}

impl ToolGroup {
    /// An inactive group without instructions.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            instructions: String::new(),
            active: false,
        }
    }

    /// Sets the instructions returned when the group is activated.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = instructions.into();
        self
    }

    /// Sets whether the group is active from the start.
    #[must_use]
    pub fn with_active(mut self, active: bool) -> Self {
        self.active = active;
        self
    }
}

/// The groups active before a call, for `reset_tools` to tell which groups it newly activates.
///
/// The toolkit does not own the list of active groups; an agent that inserts this into the
/// reply's [`AgentContext`](towerscope_core::AgentContext) before running `reset_tools` gets
/// only the instructions of newly activated groups in the result. Without it, the result holds
/// the instructions of every group the call activates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveToolGroups(pub Arc<[String]>);

/// The `reset_tools` meta tool over the non-basic groups of a toolkit.
pub(crate) struct ResetTools {
    schema: Value,
    /// Names and instructions of the non-basic groups, in registration order.
    groups: Vec<(String, String)>,
}

impl ResetTools {
    const DESCRIPTION: &'static str = "Set which tool groups are active. Each argument is a group: set it to true to \
        activate the group, false (or leave it out) to deactivate it. The tools of a group can only be called while \
        the group is active.";

    /// The meta tool of these non-basic groups.
    pub(crate) fn new<'a>(groups: impl IntoIterator<Item = &'a ToolGroup>) -> Self {
        let mut properties = Map::new();
        let mut names = Vec::new();
        for group in groups {
            let flag = json!({"type": "boolean", "description": group.description, "default": false});
            properties.insert(group.name.clone(), flag);
            names.push((group.name.clone(), group.instructions.clone()));
        }
        let schema = json!({"type": "object", "properties": properties, "additionalProperties": false});
        Self { schema, groups: names }
    }

    /// The result of a call: which groups are active now, and how to use those newly activated.
    pub(crate) fn run(&self, input: &Value, previous: Option<&[String]>) -> ToolChunk {
        let chosen: Vec<&(String, String)> = self
            .groups
            .iter()
            .filter(|(name, _)| input.get(name).and_then(Value::as_bool) == Some(true))
            .collect();
        let mut text = if chosen.is_empty() {
            String::from("No tool group is active now; only the basic tools can be called.")
        } else {
            let names: Vec<String> = chosen.iter().map(|(name, _)| format!("'{name}'")).collect();
            format!("The active tool groups are now: {}.", names.join(", "))
        };
        for (name, instructions) in &chosen {
            let was_active = previous.is_some_and(|p| p.iter().any(|g| g == name));
            if !was_active && !instructions.is_empty() {
                let _ = write!(text, "\n\nInstructions of the tool group '{name}':\n{instructions}");
            }
        }
        let activated: Vec<Value> = chosen.iter().map(|(name, _)| Value::String(name.clone())).collect();
        let mut metadata = Map::new();
        metadata.insert(ACTIVATED_GROUPS_KEY.to_owned(), Value::Array(activated));
        ToolChunk::text(text).with_metadata(metadata)
    }
}

impl Tool for ResetTools {
    fn name(&self) -> &str {
        RESET_TOOLS
    }

    fn description(&self) -> &str {
        Self::DESCRIPTION
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    /// It changes what later calls may do, so it runs alone.
    fn concurrency_safe(&self) -> bool {
        false
    }

    /// It only changes which tools are offered, so it needs no permission.
    fn read_only(&self) -> bool {
        true
    }

    fn call(&self, input: Value) -> ToolChunkStream {
        Box::pin(futures_util::stream::iter([Ok(self.run(&input, None))]))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn groups() -> Vec<ToolGroup> {
        vec![
            ToolGroup::new("web", "Search and browse the web.").with_instructions("Cite your sources."),
            ToolGroup::new("files", "Read and write files."),
        ]
    }

    fn text(chunk: &ToolChunk) -> &str {
        chunk.content[0].as_text().map(|t| t.text.as_str()).unwrap()
    }

    #[test]
    fn schema_has_one_flag_per_group() {
        let reset = ResetTools::new(&groups());
        assert_eq!(reset.input_schema()["properties"]["web"]["type"], "boolean");
        assert_eq!(
            reset.input_schema()["properties"]["files"]["description"],
            "Read and write files."
        );
        assert_eq!(reset.input_schema()["additionalProperties"], false);
        assert!(reset.read_only() && !reset.concurrency_safe());
    }

    #[test]
    fn run_reports_groups_and_new_instructions() {
        let reset = ResetTools::new(&groups());
        let chunk = reset.run(&json!({"web": true, "files": true}), None);
        assert_eq!(
            text(&chunk),
            "The active tool groups are now: 'web', 'files'.\n\nInstructions of the tool group 'web':\nCite your sources."
        );
        assert_eq!(chunk.metadata[ACTIVATED_GROUPS_KEY], json!(["web", "files"]));

        let previous = vec!["web".to_owned()];
        let chunk = reset.run(&json!({"web": true}), Some(&previous));
        assert_eq!(text(&chunk), "The active tool groups are now: 'web'.");

        let chunk = reset.run(&json!({"web": false}), Some(&previous));
        assert_eq!(
            text(&chunk),
            "No tool group is active now; only the basic tools can be called."
        );
        assert_eq!(chunk.metadata[ACTIVATED_GROUPS_KEY], json!([]));
    }
}
