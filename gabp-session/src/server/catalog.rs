//! [`ToolCatalog`]: the descriptors of a server's tools, for layers that decide by tool (name, tags).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use gabp_types::ToolDescriptor;

/// The descriptors of the tools a [`ModServer`](super::ModServer) serves, by name: what a layer needs to
/// decide by a tool's tags (an access policy, an attention gate) without calling `tools/list`.
///
/// Get it from [`ModServerBuilder::tool_catalog`](super::ModServerBuilder::tool_catalog) while building, to
/// hand to a layer; it is empty until the server is built, then holds every tool registered by then. Cheap to
/// clone (clones share the same catalog).
///
/// ```
/// use gabp_session::server::{ModServer, Tool, ToolError};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let builder = ModServer::builder()
///     .token(gabp_transport::Token::generate()?)
///     .tool(Tool::new("game/status", |_: serde_json::Value| async { Ok::<_, ToolError>("ok") }).tags(["status"]));
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
    tools: Arc<OnceLock<HashMap<String, ToolDescriptor>>>,
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
    /// Fills the catalog once (at build time); later calls change nothing.
    pub(crate) fn fill(&self, tools: impl IntoIterator<Item = ToolDescriptor>) {
        let _ = self.tools.set(
            tools
                .into_iter()
                .map(|d| (d.name.as_str().to_owned(), d))
                .collect(),
        );
    }

    /// Whether the server has been built (before that, the catalog is empty).
    #[must_use]
    pub fn is_built(&self) -> bool {
        self.tools.get().is_some()
    }

    /// The descriptor of tool `name`, if the server serves it.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&ToolDescriptor> {
        self.tools.get()?.get(name)
    }

    /// How many tools the server serves (0 before it is built).
    #[must_use]
    pub fn len(&self) -> usize {
        self.tools.get().map_or(0, HashMap::len)
    }

    /// Whether the catalog holds no tool.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use crate::server::{ModServer, Tool, ToolError};
    use gabp_transport::Token;

    fn tool(name: &str, tags: &[&str]) -> Tool {
        Tool::new(name, |_: serde_json::Value| async {
            Ok::<_, ToolError>(())
        })
        .tags(tags.iter().copied())
    }

    #[test]
    fn filled_once_at_build_with_every_tool() {
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
        catalog.fill(Vec::new());
        assert_eq!(catalog.len(), 2, "filled only once");
        assert_eq!(server.welcome().agent_id.as_str(), "gabp-rs mod");
    }
}
