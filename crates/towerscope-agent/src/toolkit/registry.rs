//! [`Toolkit`]: the tools by name, their groups, their schemas, and the checks before a call.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use towerscope_core::{ToolCallBlock, ToolInfo, ToolSchema};

use super::add_error::{AddToolError, ToolSchemaError, UnknownGroupError};
use super::group::{BASIC_GROUP, RESET_TOOLS, ResetTools, ToolGroup};
use super::input::parse_compiled;
use super::{CompiledSchema, InputLimits, Tool};

/// How many distinct active-group lists [`Toolkit::schemas`] remembers.
const SCHEMA_CACHE_SIZE: usize = 16;

/// A registered tool with what is derived from it once.
#[derive(Clone)]
pub(super) struct Entry {
    pub(super) tool: Arc<dyn Tool>,
    pub(super) info: Arc<ToolInfo>,
    schema: ToolSchema,
    /// The input schema, checked and compiled once.
    compiled: Arc<CompiledSchema>,
    /// Index into `Toolkit::groups` (0 is `basic`).
    group: usize,
    /// Whether the permission checks ignore the arguments (`!Tool::decides_on_input`, asked
    /// once): then a call whose text the schema accepts as it is needs no parse to be decided.
    text_suffices: bool,
}

impl Entry {
    fn new(tool: Arc<dyn Tool>, group: usize) -> Result<Self, ToolSchemaError> {
        let shared = tool.shared_input_schema();
        let compiled = CompiledSchema::with_patterns(Arc::clone(&shared), tool.checks_patterns()).map_err(|error| {
            ToolSchemaError {
                tool: tool.name().to_owned(),
                error,
            }
        })?;
        let info = Arc::new(tool.info());
        let schema = ToolSchema::new(tool.name(), tool.description(), shared);
        let text_suffices = !tool.decides_on_input();
        Ok(Self {
            tool,
            info,
            schema,
            compiled: Arc::new(compiled),
            group,
            text_suffices,
        })
    }

    /// Parses, repairs, coerces and validates `raw` as this tool's arguments, as
    /// [`Toolkit::prepare`] does.
    pub(super) fn parse(&self, raw: &str, limits: &InputLimits) -> Result<Value, String> {
        parse_compiled(&self.info.name, raw, &self.compiled, limits)
    }
}

/// A tool call that passed the toolkit's checks: the tool exists, its group is active, and the
/// arguments parsed (with repair and coercion) and validated.
#[derive(Clone)]
pub struct PreparedCall {
    /// The tool.
    pub tool: Arc<dyn Tool>,
    /// What middleware sees of the tool.
    pub info: Arc<ToolInfo>,
    /// The parsed, coerced and validated arguments.
    pub input: Value,
}

impl fmt::Debug for PreparedCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedCall")
            .field("info", &self.info)
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

struct CachedSchemas {
    /// The active groups exactly as asked for.
    key: Vec<String>,
    /// Which groups that turned out to activate (index 0, `basic`, always).
    mask: Vec<bool>,
    schemas: Arc<[ToolSchema]>,
}

/// The tools an agent can call, by name, in groups.
///
/// Tools are offered to the model and run in registration order. A tool belongs to one group;
/// the `basic` group always exists and is always active, and the others are switched on and off
/// by the model through the meta tool `reset_tools`, offered once a non-basic group exists.
///
/// The list of active groups belongs to the agent's state, not to the toolkit: methods take it
/// as an argument, and `reset_tools` returns the groups it chose in its result's metadata under
/// [`ACTIVATED_GROUPS_KEY`](super::ACTIVATED_GROUPS_KEY) for the agent to apply.
///
/// Adding or removing tools and groups takes `&mut self`: build the toolkit, then share it
/// (`Arc<Toolkit>`) with the agent.
pub struct Toolkit {
    entries: Vec<Entry>,
    /// The entries by name, once there are [`INDEXED_FROM`] or more; empty (no table) below,
    /// where a lookup compares names.
    index: HashMap<String, usize>,
    groups: Vec<ToolGroup>,
    reset: Option<(Arc<ResetTools>, Entry)>,
    cache: Mutex<Vec<CachedSchemas>>,
    limits: InputLimits,
}

/// From this many tools on, names are hashed. Below, a lookup compares names: cheaper than
/// hashing one (SipHash costs hundreds of instructions, and a call looks its tool up several
/// times), and an agent with a few tools keeps no table.
const INDEXED_FROM: usize = 9;

impl Toolkit {
    /// An empty toolkit with its `basic` group.
    pub fn new() -> Self {
        let basic = ToolGroup::new(BASIC_GROUP, "The basic tools, always available.").with_active(true);
        Self {
            entries: Vec::new(),
            index: HashMap::new(),
            groups: vec![basic],
            reset: None,
            cache: Mutex::default(),
            limits: InputLimits::default(),
        }
    }

    /// Bounds on the raw arguments of every call, checked before they are parsed (default: 1 MiB,
    /// 64 levels of nesting). A call over them gets an error result.
    pub fn set_input_limits(&mut self, limits: InputLimits) -> &mut Self {
        self.limits = limits;
        self
    }

    /// The bounds on the raw arguments of every call.
    pub fn input_limits(&self) -> &InputLimits {
        &self.limits
    }

    /// Adds a tool to the `basic` group. A tool of the same name is replaced (keeping its place),
    /// with a warning.
    ///
    /// # Panics
    ///
    /// If the tool's input schema cannot be enforced: it uses a keyword the validator does not
    /// check (such as `unevaluatedProperties`), a `$ref` out of the document, or a pattern it
    /// cannot compile. Such a schema is a programming error, found the first time the toolkit is
    /// built; use [`try_add`](Self::try_add) for schemas known only at run time.
    pub fn add(&mut self, tool: impl Tool) -> &mut Self {
        if let Err(e) = self.try_add(tool) {
            panic!("{e}");
        }
        self
    }

    /// Adds a tool to the `basic` group, or says why its input schema cannot be enforced.
    ///
    /// ```
    /// use serde_json::json;
    /// use towerscope_agent::toolkit::{FunctionTool, Toolkit};
    ///
    /// let strict = json!({"type": "object", "unevaluatedProperties": false});
    /// let tool = FunctionTool::with_schema("strict", "A strict tool.", strict, |_: serde_json::Value| async { "ok" });
    /// let err = Toolkit::new().try_add(tool).unwrap_err();
    /// assert!(err.to_string().starts_with(
    ///     "the input schema of the tool 'strict' cannot be enforced: the keyword 'unevaluatedProperties'"
    /// ));
    /// ```
    pub fn try_add(&mut self, tool: impl Tool) -> Result<&mut Self, ToolSchemaError> {
        self.insert(Arc::new(tool), 0)?;
        Ok(self)
    }

    /// Adds a tool to a group created with [`create_group`](Self::create_group), or says why it
    /// cannot: the group does not exist, or the tool's input schema cannot be enforced (see
    /// [`try_add`](Self::try_add)).
    pub fn add_to_group(&mut self, group: &str, tool: impl Tool) -> Result<&mut Self, AddToolError> {
        let Some(index) = self.groups.iter().position(|g| g.name == group) else {
            return Err(UnknownGroupError {
                group: group.to_owned(),
            }
            .into());
        };
        self.insert(Arc::new(tool), index)?;
        Ok(self)
    }

    fn insert(&mut self, tool: Arc<dyn Tool>, group: usize) -> Result<(), ToolSchemaError> {
        let entry = Entry::new(tool, group)?;
        let name = entry.info.name.clone();
        if name == RESET_TOOLS {
            tracing::warn!("a tool named '{RESET_TOOLS}' replaces the toolkit's meta tool of the same name");
        }
        match self.position(&name) {
            Some(i) => {
                tracing::warn!(tool = %name, "a tool of this name was already registered; it is replaced");
                self.entries[i] = entry;
            }
            None => {
                if self.entries.is_empty() {
                    // An agent often has one tool: room for four (the first growth) would be
                    // kept by every agent built with it.
                    self.entries.reserve_exact(1);
                }
                self.entries.push(entry);
                if self.index.is_empty() {
                    self.reindex();
                } else {
                    self.index.insert(name, self.entries.len() - 1);
                }
            }
        }
        self.clear_cache();
        Ok(())
    }

    /// Removes a tool, returning it.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        let i = self.position(name)?;
        let entry = self.entries.remove(i);
        self.reindex();
        self.clear_cache();
        Some(entry.tool)
    }

    /// Where the tool `name` is in `entries`.
    fn position(&self, name: &str) -> Option<usize> {
        if self.index.is_empty() {
            self.entries.iter().position(|e| e.info.name == name)
        } else {
            self.index.get(name).copied()
        }
    }

    /// Builds the index from `entries` when there are enough of them to hash, else drops it.
    fn reindex(&mut self) {
        self.index = if self.entries.len() >= INDEXED_FROM {
            self.entries
                .iter()
                .enumerate()
                .map(|(i, e)| (e.info.name.clone(), i))
                .collect()
        } else {
            HashMap::new()
        };
    }

    /// Creates a group (inactive at the start), or updates the description and instructions of
    /// an existing one. `instructions` may be empty.
    pub fn create_group(
        &mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        instructions: impl Into<String>,
    ) -> &mut Self {
        self.add_group(ToolGroup::new(name, description).with_instructions(instructions))
    }

    /// Adds a group, or replaces the group of the same name (its tools stay in it). The `basic`
    /// group stays active whatever `group.active` says.
    pub fn add_group(&mut self, mut group: ToolGroup) -> &mut Self {
        match self.groups.iter_mut().position(|g| g.name == group.name) {
            Some(0) => {
                group.active = true;
                self.groups[0] = group;
            }
            Some(i) => self.groups[i] = group,
            None => self.groups.push(group),
        }
        let reset = Arc::new(ResetTools::new(&self.groups[1..]));
        match Entry::new(Arc::clone(&reset) as Arc<dyn Tool>, 0) {
            Ok(entry) => self.reset = Some((reset, entry)),
            // The meta tool's schema is a plain object of booleans; refusing it would be a bug.
            Err(e) => tracing::error!(error = %e, "the meta tool '{RESET_TOOLS}' could not be built"),
        }
        self.clear_cache();
        self
    }

    /// The tool of this name (`reset_tools` included while a non-basic group exists).
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.entry(name).map(|e| Arc::clone(&e.tool))
    }

    /// What middleware sees of the tool of this name; computed once per tool.
    pub fn info(&self, name: &str) -> Option<Arc<ToolInfo>> {
        self.entry(name).map(|e| Arc::clone(&e.info))
    }

    /// The groups, `basic` first, then in creation order.
    pub fn groups(&self) -> &[ToolGroup] {
        &self.groups
    }

    /// The group a tool belongs to.
    pub fn group_of(&self, name: &str) -> Option<&ToolGroup> {
        self.entry(name).map(|e| &self.groups[e.group])
    }

    /// The non-basic groups marked active, to seed an agent's list of active groups.
    pub fn default_active_groups(&self) -> Vec<String> {
        self.groups[1..]
            .iter()
            .filter(|g| g.active)
            .map(|g| g.name.clone())
            .collect()
    }

    /// The registered tools, in registration order (without `reset_tools`).
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> + '_ {
        self.entries.iter().map(|e| &e.tool)
    }

    /// How many tools are registered (without `reset_tools`).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn entry(&self, name: &str) -> Option<&Entry> {
        let found = self.position(name).and_then(|i| self.entries.get(i));
        match found {
            Some(entry) => Some(entry),
            None if name == RESET_TOOLS => self.reset.as_ref().map(|(_, entry)| entry),
            None => None,
        }
    }

    /// The meta tool, when `name` calls it.
    /// Whether tools belong to groups other than `basic` (so `reset_tools` exists and the
    /// active groups matter).
    pub(crate) fn has_groups(&self) -> bool {
        self.reset.is_some()
    }

    pub(super) fn reset_tool(&self, name: &str) -> Option<&ResetTools> {
        match &self.reset {
            Some((reset, _)) if name == RESET_TOOLS && self.position(name).is_none() => Some(reset),
            _ => None,
        }
    }

    /// The schemas offered to the model while `active_groups` are active: the tools of `basic`
    /// and of the active groups in registration order, then `reset_tools` if a non-basic group
    /// exists. Names of unknown groups are ignored.
    ///
    /// The list is built once per set of groups and shared: asking again with the same groups
    /// returns a clone of the same `Arc`.
    pub fn schemas(&self, active_groups: &[String]) -> Arc<[ToolSchema]> {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(hit) = cache.iter().find(|c| c.key.as_slice() == active_groups) {
            return Arc::clone(&hit.schemas);
        }
        let mask: Vec<bool> = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| i == 0 || active_groups.contains(&g.name))
            .collect();
        let schemas = match cache.iter().find(|c| c.mask == mask) {
            Some(same) => Arc::clone(&same.schemas),
            None => self.build_schemas(&mask),
        };
        if cache.len() >= SCHEMA_CACHE_SIZE {
            cache.remove(0);
        }
        if cache.is_empty() {
            // Most agents ask with one set of groups: no room for four kept per agent.
            cache.reserve_exact(1);
        }
        cache.push(CachedSchemas {
            key: active_groups.to_vec(),
            mask,
            schemas: Arc::clone(&schemas),
        });
        schemas
    }

    fn build_schemas(&self, mask: &[bool]) -> Arc<[ToolSchema]> {
        let tools = self.entries.iter().filter(|e| mask[e.group]);
        let reset = self
            .reset
            .as_ref()
            .filter(|_| self.position(RESET_TOOLS).is_none())
            .map(|(_, e)| e);
        tools.chain(reset).map(|e| e.schema.clone()).collect()
    }

    fn clear_cache(&mut self) {
        self.cache.get_mut().unwrap_or_else(PoisonError::into_inner).clear();
    }

    /// Checks a call before it is run: the tool exists, its group is active, and its arguments
    /// parse (repaired and coerced, see [`parse_with_repair`](super::parse_with_repair)) and validate against its schema.
    ///
    /// The error is the text of the error result for the model, as in the reference:
    ///
    /// * `ToolNotFoundError: The tool named '{name}' doesn't exist.` (a name over 256 bytes is cut,
    ///   ending in `…[truncated, N bytes total]`)
    /// * `ToolGroupInactiveError: The tool '{name}' in group '{group}' is currently inactive. You should first activate the group by calling the 'reset_tools' tool.`
    /// * `Input validation failed for tool '{name}': {message} (at {json_path})`, where the message
    ///   may also say that the input is over the toolkit's [`InputLimits`]
    pub fn prepare(&self, call: &ToolCallBlock, active_groups: &[String]) -> Result<PreparedCall, String> {
        let entry = self.callable(call, active_groups)?;
        let input = parse_compiled(&call.name, &call.input, &entry.compiled, &self.limits)?;
        Ok(PreparedCall {
            tool: Arc::clone(&entry.tool),
            info: Arc::clone(&entry.info),
            input,
        })
    }

    /// [`prepare`](Self::prepare) as the agent runs it: the parse is left out (`None`) when the
    /// call's text already is what the tool's schema asks for, as it is, and the tool's
    /// permission checks ignore the arguments ([`Tool::decides_on_input`]). The tool then
    /// gets the text ([`Tool::call_text`]), and a layer asking for the arguments their parse.
    pub(crate) fn check(
        &self,
        call: &ToolCallBlock,
        active_groups: &[String],
    ) -> Result<(Arc<ToolInfo>, Option<Value>), String> {
        let entry = self.callable(call, active_groups)?;
        let text = call.input.as_str();
        // Text accepted as it is nests one level (see `FlatObject::accepts_text`): its size is
        // the only limit left to check.
        let within_limits = text.len() <= self.limits.max_bytes() && self.limits.max_depth() >= 1;
        if entry.text_suffices && within_limits && entry.compiled.accepts_text_as_is(text) {
            return Ok((Arc::clone(&entry.info), None));
        }
        let input = parse_compiled(&call.name, text, &entry.compiled, &self.limits)?;
        Ok((Arc::clone(&entry.info), Some(input)))
    }

    /// The entry of the tool `call` names, if it exists and its group is active; otherwise the
    /// error result of [`prepare`](Self::prepare).
    fn callable(&self, call: &ToolCallBlock, active_groups: &[String]) -> Result<&Entry, String> {
        let name = call.name.as_str();
        let Some(entry) = self.entry(name) else {
            let name = super::truncate_name(name);
            return Err(format!("ToolNotFoundError: The tool named '{name}' doesn't exist."));
        };
        let group = &self.groups[entry.group].name;
        if entry.group != 0 && !active_groups.contains(group) {
            return Err(format!(
                "ToolGroupInactiveError: The tool '{name}' in group '{group}' is currently inactive. You should first \
                 activate the group by calling the '{RESET_TOOLS}' tool."
            ));
        }
        Ok(entry)
    }
}

impl Default for Toolkit {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for Toolkit {
    fn clone(&self) -> Self {
        Self {
            entries: self.entries.clone(),
            index: self.index.clone(),
            groups: self.groups.clone(),
            reset: self.reset.clone(),
            cache: Mutex::default(),
            limits: self.limits,
        }
    }
}

impl fmt::Debug for Toolkit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools: Vec<(&str, &str)> = self
            .entries
            .iter()
            .map(|e| (e.info.name.as_str(), self.groups[e.group].name.as_str()))
            .collect();
        f.debug_struct("Toolkit")
            .field("tools", &tools)
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}
