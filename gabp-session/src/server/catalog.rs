//! [`ToolCatalog`]: the descriptors of a server's tools, for layers that decide by tool (name, tags).

use std::fmt;
use std::sync::Arc;

use gabp_types::ToolDescriptor;

use super::registry::ToolTable;

/// The descriptors of the tools a [`ModServer`](super::ModServer) serves, by name: what a layer needs to
/// decide by a tool's tags (an access policy, an attention gate) without calling `tools/list`.
///
/// Get it from [`ModServerBuilder::tool_catalog`](super::ModServerBuilder::tool_catalog) while building, to
/// hand to a layer; it is empty until the server is built, then holds the tools served at each moment: those
/// registered by then, and those a [`ToolRegistry`](super::ToolRegistry) adds or removes later. Cheap to
/// clone (clones share the same catalog).
///
/// ```
/// use gabp_session::server::{CallError, ModServer, Tool};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let builder = ModServer::builder()
///     .token(gabp_transport::Token::generate()?)
///     .tool(Tool::new("game/status", |_: serde_json::Value| async { Ok::<_, CallError>("ok") }).tags(["status"]));
/// let catalog = builder.tool_catalog();
/// assert!(!catalog.is_built());
/// let _server = builder.build()?;
/// assert!(catalog.get("game/status").is_some_and(|tool| tool.has_tag("status")));
/// assert!(catalog.get("game/unknown").is_none());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct ToolCatalog {
    table: Arc<ToolTable>,
}

impl fmt::Debug for ToolCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCatalog")
            .field("built", &self.is_built())
            .field("tools", &self.len())
            .finish()
    }
}

impl ToolCatalog {
    pub(crate) fn new(table: Arc<ToolTable>) -> Self {
        ToolCatalog { table }
    }

    /// Whether the server has been built (before that, the catalog is empty).
    #[must_use]
    pub fn is_built(&self) -> bool {
        self.table.is_built()
    }

    /// The descriptor of tool `name`, if the server serves it now.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<Arc<ToolDescriptor>> {
        self.table
            .snapshot()
            .get(name)
            .map(|e| e.descriptor.clone())
    }

    /// How many tools the server serves now (0 before it is built).
    #[must_use]
    pub fn len(&self) -> usize {
        self.table.snapshot().entries().len()
    }

    /// Whether the catalog holds no tool.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use crate::server::{CallError, ModServer, Tool};
    use gabp_transport::Token;

    fn tool(name: &str, tags: &[&str]) -> Tool {
        Tool::new(name, |_: serde_json::Value| async {
            Ok::<_, CallError>(())
        })
        .tags(tags.iter().copied())
    }

    #[test]
    fn filled_at_build_with_every_tool() {
        let builder = ModServer::builder()
            .token(Token::new("t".repeat(40)).unwrap())
            .tool(tool("a/read", &["read-only"]));
        let catalog = builder.tool_catalog();
        assert!(catalog.is_empty() && !catalog.is_built());
        // Tools registered after the catalog was taken are in it too.
        let server = builder.tool(tool("a/write", &[])).build().unwrap();
        assert!(catalog.is_built());
        assert_eq!(catalog.len(), 2);
        assert!(catalog.get("a/read").unwrap().has_tag("read-only"));
        assert!(!catalog.get("a/write").unwrap().has_tag("read-only"));
        assert!(server.tools().remove("a/write").is_err(), "fixed tools");
        assert_eq!(catalog.len(), 2);
        assert_eq!(server.welcome().agent_id.as_str(), "gabp-rs mod");
    }
}
