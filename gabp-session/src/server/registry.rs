//! The live tool table of a server, and [`ToolRegistry`], the handle that adds and removes tools while it
//! serves (SPEC/1.0 extensions.md §tools-changed).
//!
//! Readers (the router, the time limits, [`ToolCatalog`](super::ToolCatalog)) take the current snapshot under a
//! read lock held only to clone an `Arc`; a change builds a new snapshot, swaps it in, then announces itself on
//! `tools/changed`. Changes are serialized, so their events go out in the order they took effect.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gabp_types::methods::{ToolsChangedPayload, TOOLS_CHANGED_CHANNEL};
use gabp_types::{ToolDescriptor, ToolName, UniqueVec};
use parking_lot::{Mutex, RwLock};

use super::context::StateMap;
use super::events::EventPublisher;
use super::tool::RegisteredTool;
use super::Tool;
use crate::Error;

/// One served tool: what runs it, and its descriptor shared with the catalog.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) tool: Arc<RegisteredTool>,
    pub(crate) descriptor: Arc<ToolDescriptor>,
}

/// The tools served at one moment, in registration order.
#[derive(Default)]
pub(crate) struct Snapshot {
    entries: Vec<Entry>,
    index: crate::OwnKeyMap<String, usize>,
    /// The longest time limit a tool was registered with.
    longest_timeout: Option<Duration>,
}

impl Snapshot {
    fn new(entries: Vec<Entry>) -> Self {
        let index = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.descriptor.name.as_str().to_owned(), i))
            .collect();
        let longest_timeout = entries.iter().filter_map(|e| e.tool.timeout).max();
        Snapshot {
            entries,
            index,
            longest_timeout,
        }
    }

    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Entry> {
        self.index.get(name).and_then(|&i| self.entries.get(i))
    }
}

/// The live table: one per server, shared by the router, the timeout layer, the catalog and the registry.
#[derive(Default)]
pub(crate) struct ToolTable {
    current: RwLock<Arc<Snapshot>>,
    /// Serializes changes and their events.
    changes: Mutex<()>,
    built: AtomicBool,
    dynamic: AtomicBool,
    /// Whether a tool served now was registered with its own time limit.
    own_limits: AtomicBool,
    publisher: Mutex<Option<EventPublisher>>,
    /// The shared states registered, which the tools added later may take.
    states: Mutex<Arc<StateMap>>,
}

impl fmt::Debug for ToolTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolTable")
            .field("tools", &self.snapshot().entries.len())
            .field("dynamic", &self.dynamic.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

impl ToolTable {
    /// The tools served now.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        self.current.read().clone()
    }

    /// Tool `name`, if served now.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        self.current.read().get(name).map(|e| e.tool.clone())
    }

    /// The time limit tool `name` was registered with, if any.
    pub(crate) fn timeout(&self, name: &str) -> Option<Duration> {
        self.current.read().get(name).and_then(|e| e.tool.timeout)
    }

    /// The longest time limit any tool served now was registered with.
    pub(crate) fn longest_timeout(&self) -> Option<Duration> {
        self.current.read().longest_timeout
    }

    /// Whether a tool served now was registered with its own time limit (a load, not a lookup).
    pub(crate) fn has_own_limits(&self) -> bool {
        self.own_limits.load(Ordering::Acquire)
    }

    /// Serves `snapshot` from now on.
    fn swap_in(&self, snapshot: Snapshot) {
        // Raised before the snapshot that needs it, lowered after the last one that did. A call racing the
        // change may still run under the default limit, as if it had come just before it.
        let own_limits = snapshot.longest_timeout.is_some();
        if own_limits {
            self.own_limits.store(true, Ordering::Release);
        }
        *self.current.write() = Arc::new(snapshot);
        if !own_limits {
            self.own_limits.store(false, Ordering::Release);
        }
    }

    pub(crate) fn is_built(&self) -> bool {
        self.built.load(Ordering::Acquire)
    }

    /// Fills the table at build time; later calls change nothing. `dynamic`: whether changes are allowed
    /// (announced through `publisher` on `tools/changed`).
    pub(crate) fn fill(
        &self,
        tools: Vec<RegisteredTool>,
        dynamic: Option<EventPublisher>,
        states: Arc<StateMap>,
    ) -> Result<(), Error> {
        let _change = self.changes.lock();
        if self.is_built() {
            return Ok(());
        }
        let mut entries: Vec<Entry> = Vec::with_capacity(tools.len());
        let mut seen = HashMap::with_capacity(tools.len());
        for tool in tools {
            let name = tool.descriptor.name.as_str().to_owned();
            if seen.insert(name.clone(), ()).is_some() {
                return Err(Error::Duplicate { kind: "tool", name });
            }
            entries.push(entry(tool));
        }
        self.swap_in(Snapshot::new(entries));
        self.dynamic.store(dynamic.is_some(), Ordering::Release);
        *self.publisher.lock() = dynamic;
        *self.states.lock() = states;
        self.built.store(true, Ordering::Release);
        Ok(())
    }

    /// Adds `added` and removes `removed` in one change, then announces it. Returns the names removed (those
    /// that were served).
    fn change(&self, added: Vec<Tool>, removed: &[&str]) -> Result<Vec<ToolName>, Error> {
        if !self.is_built() {
            return Err(Error::ServerNotBuilt);
        }
        if !self.dynamic.load(Ordering::Acquire) {
            return Err(Error::DynamicToolsDisabled);
        }
        let states = self.states.lock().clone();
        let registered = added
            .into_iter()
            .map(|tool| {
                if let Some(state) = tool.states().iter().find(|s| !states.contains(**s)) {
                    return Err(Error::MissingState {
                        handler: format!("tool {}", tool.name()),
                        state: state.name(),
                    });
                }
                tool.register()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let _change = self.changes.lock();
        let before = self.snapshot();
        let mut entries: Vec<Entry> = before
            .entries
            .iter()
            .filter(|e| !removed.contains(&e.descriptor.name.as_str()))
            .cloned()
            .collect();
        let gone: Vec<ToolName> = before
            .entries
            .iter()
            .filter(|e| removed.contains(&e.descriptor.name.as_str()))
            .map(|e| e.descriptor.name.clone())
            .collect();
        let mut new_names: Vec<ToolName> = Vec::with_capacity(registered.len());
        for tool in registered {
            let name = tool.descriptor.name.clone();
            if entries.iter().any(|e| e.descriptor.name == name) || new_names.contains(&name) {
                return Err(Error::Duplicate {
                    kind: "tool",
                    name: name.as_str().to_owned(),
                });
            }
            new_names.push(name);
            entries.push(entry(tool));
        }
        if new_names.is_empty() && gone.is_empty() {
            return Ok(gone);
        }
        self.swap_in(Snapshot::new(entries));
        // SPEC/1.0 extensions.md §tools-changed: announced once the change is in effect.
        self.announce(new_names, gone.clone());
        Ok(gone)
    }

    fn announce(&self, added: Vec<ToolName>, removed: Vec<ToolName>) {
        let Some(publisher) = self.publisher.lock().clone() else {
            return;
        };
        let payload = ToolsChangedPayload {
            added: UniqueVec::new(added).unwrap_or_default(),
            removed: UniqueVec::new(removed).unwrap_or_default(),
        };
        let published = match publisher.publish(TOOLS_CHANGED_CHANNEL, &payload) {
            // Names too long for one event: announce the change without them.
            Err(Error::EventTooLarge { .. }) => {
                publisher.publish(TOOLS_CHANGED_CHANNEL, ToolsChangedPayload::default())
            }
            other => other,
        };
        if let Err(e) = published {
            tracing::warn!(error = %e, "the tools changed, but tools/changed could not be published");
        }
    }
}

fn entry(tool: RegisteredTool) -> Entry {
    Entry {
        descriptor: Arc::new(tool.descriptor.clone()),
        tool: Arc::new(tool),
    }
}

/// Adds and removes a server's tools while it serves (SPEC/1.0 extensions.md §tools-changed).
///
/// Get it from [`ModServerBuilder::tool_registry`](super::ModServerBuilder::tool_registry) (to hand to a
/// handler before the server is built) or [`ModServer::tools`](super::ModServer::tools). Changes need a server
/// built with [`ModServerBuilder::dynamic_tools`](super::ModServerBuilder::dynamic_tools); each one takes
/// effect at once for every connection (calls already running finish), then is announced on `tools/changed`
/// with the names added and removed. Cheap to clone; usable from any thread.
///
/// ```
/// use gabp_session::server::{CallError, ModServer, Tool};
/// use gabp_session::Error;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ModServer::builder()
///     .token(gabp_transport::Token::generate()?)
///     .dynamic_tools(true)
///     .build()?;
/// let tools = server.tools();
/// tools.add(Tool::new("world/fill", |_: serde_json::Value| async { Ok::<_, CallError>("filled") }))?;
/// assert!(tools.contains("world/fill"));
/// assert!(matches!(
///     tools.add(Tool::new("world/fill", |_: serde_json::Value| async { Ok::<_, CallError>(()) })),
///     Err(Error::Duplicate { kind: "tool", .. })
/// ));
/// assert!(tools.remove("world/fill")?);
/// assert!(!tools.remove("world/fill")?);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ToolRegistry {
    table: Arc<ToolTable>,
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("built", &self.table.is_built())
            .field("dynamic", &self.is_dynamic())
            .field("tools", &self.len())
            .finish()
    }
}

impl ToolRegistry {
    pub(crate) fn new(table: Arc<ToolTable>) -> Self {
        ToolRegistry { table }
    }

    /// Serves `tool` from now on, and announces it on `tools/changed`.
    ///
    /// # Errors
    ///
    /// [`Error::ServerNotBuilt`], [`Error::DynamicToolsDisabled`], [`Error::Duplicate`] when a tool of that
    /// name is served, or the builder's error for an invalid tool ([`Error::InvalidName`], [`Error::InvalidSchema`]).
    pub fn add(&self, tool: Tool) -> Result<(), Error> {
        self.table.change(vec![tool], &[]).map(drop)
    }

    /// Serves all of `tools` from now on, announced in one `tools/changed` event; if any is refused, none is
    /// added.
    ///
    /// # Errors
    ///
    /// As [`ToolRegistry::add`].
    pub fn add_all(&self, tools: impl IntoIterator<Item = Tool>) -> Result<(), Error> {
        self.table
            .change(tools.into_iter().collect(), &[])
            .map(drop)
    }

    /// Stops serving tool `name` (calls already running finish; later calls are answered `-32400`) and
    /// announces it on `tools/changed`. `Ok(false)` when no such tool is served (nothing is announced).
    ///
    /// # Errors
    ///
    /// [`Error::ServerNotBuilt`], [`Error::DynamicToolsDisabled`].
    pub fn remove(&self, name: &str) -> Result<bool, Error> {
        self.table
            .change(Vec::new(), &[name])
            .map(|gone| !gone.is_empty())
    }

    /// Whether tools may be added and removed (the server was built with
    /// [`ModServerBuilder::dynamic_tools`](super::ModServerBuilder::dynamic_tools)).
    #[must_use]
    pub fn is_dynamic(&self) -> bool {
        self.table.dynamic.load(Ordering::Acquire)
    }

    /// Whether tool `name` is served now.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.table.snapshot().get(name).is_some()
    }

    /// The names of the tools served now, in registration order.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.table
            .snapshot()
            .entries()
            .iter()
            .map(|e| e.descriptor.name.as_str().to_owned())
            .collect()
    }

    /// How many tools are served now.
    #[must_use]
    pub fn len(&self) -> usize {
        self.table.snapshot().entries().len()
    }

    /// Whether no tool is served now.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
