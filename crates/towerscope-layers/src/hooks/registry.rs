//! Named hooks of every type, in registration order, behind a lock shared by clones.

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use towerscope_core::AgentError;

use super::{Hook, HookType};

type Table = [Vec<(String, Hook)>; HookType::ALL.len()];

/// Named hooks of every [`HookType`], in registration order. Clones share the hooks: changes
/// made after an agent is built take effect on its next call.
///
/// Used twice by [`Hooks`](super::Hooks): once per agent (instance hooks), and optionally shared
/// by all agents built with it (class hooks). See the [module docs](super).
#[derive(Clone, Default)]
pub struct HookRegistry {
    table: Arc<RwLock<Table>>,
}

impl HookRegistry {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Table> {
        self.table.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `hook` under `name` for its type. Registering a name again replaces that hook in
    /// place, keeping its position in the order.
    pub fn register(&self, name: impl Into<String>, hook: Hook) -> &Self {
        let name = name.into();
        let mut table = self.write();
        let hooks = &mut table[hook.hook_type().index()];
        match hooks.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = hook,
            None => hooks.push((name, hook)),
        }
        self
    }

    /// Removes the hook of type `hook_type` named `name`.
    pub fn remove(&self, hook_type: HookType, name: &str) -> Result<Hook, UnknownHook> {
        let mut table = self.write();
        let hooks = &mut table[hook_type.index()];
        match hooks.iter().position(|(n, _)| n == name) {
            Some(pos) => Ok(hooks.remove(pos).1),
            None => Err(UnknownHook {
                hook_type,
                name: name.to_owned(),
                registered: hooks.iter().map(|(n, _)| n.clone()).collect(),
            }),
        }
    }

    /// Removes every hook of `hook_type`.
    pub fn clear(&self, hook_type: HookType) {
        self.write()[hook_type.index()].clear();
    }

    /// Removes every hook.
    pub fn clear_all(&self) {
        for hooks in self.write().iter_mut() {
            hooks.clear();
        }
    }

    /// The names of the hooks of `hook_type`, in the order they run.
    pub fn names(&self, hook_type: HookType) -> Vec<String> {
        self.read()[hook_type.index()].iter().map(|(n, _)| n.clone()).collect()
    }

    /// How many hooks are registered, all types together.
    pub fn len(&self) -> usize {
        self.read().iter().map(Vec::len).sum()
    }

    /// Whether no hook is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the hooks of `hook_type` picked by `pick` to `out`; the lock is released before
    /// any hook runs.
    pub(crate) fn collect<T>(&self, hook_type: HookType, pick: fn(&Hook) -> Option<T>, out: &mut Vec<T>) {
        out.extend(self.read()[hook_type.index()].iter().filter_map(|(_, h)| pick(h)));
    }
}

impl fmt::Debug for HookRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = self.read();
        let mut map = f.debug_map();
        for t in HookType::ALL {
            let names: Vec<&str> = table[t.index()].iter().map(|(n, _)| n.as_str()).collect();
            if !names.is_empty() {
                map.entry(&t.as_str(), &names);
            }
        }
        map.finish()
    }
}

/// Removing a hook that is not registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownHook {
    /// The hook type asked for.
    pub hook_type: HookType,
    /// The name asked for.
    pub name: String,
    /// The names registered for that type.
    pub registered: Vec<String>,
}

impl fmt::Display for UnknownHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no {} hook named '{}' is registered", self.hook_type, self.name)?;
        if self.registered.is_empty() {
            write!(f, " (none of that type is)")
        } else {
            write!(f, " (registered: {})", self.registered.join(", "))
        }?;
        write!(f, "; check the name and the hook type")
    }
}

impl std::error::Error for UnknownHook {}

impl From<UnknownHook> for AgentError {
    fn from(err: UnknownHook) -> Self {
        AgentError::validation(err.to_string())
    }
}
