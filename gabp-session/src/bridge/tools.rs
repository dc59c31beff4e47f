//! The bridge's cached tool list, kept fresh by the `tools/changed` event (SPEC/1.0 extensions.md
//! §tools-changed).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use gabp_types::methods::{TOOLS_CHANGED_CHANNEL, TOOLS_CHANGED_EXTENSION};
use gabp_types::ToolDescriptor;
use parking_lot::Mutex;

use super::Bridge;
use crate::Error;

/// The last `tools/list` answer, valid until the next invalidation.
#[derive(Default)]
pub(crate) struct ToolCache {
    /// Counts invalidations: a list fetched before one is not kept.
    epoch: AtomicU64,
    list: Mutex<Option<(u64, Arc<[ToolDescriptor]>)>>,
    /// Serializes the subscription that keeps the cache fresh.
    following: tokio::sync::Mutex<()>,
}

impl ToolCache {
    /// Forgets the list: a `tools/changed` event arrived, or the connection is new.
    pub(crate) fn invalidate(&self) {
        let mut list = self.list.lock();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        *list = None;
    }

    /// Forgets the list when `outcome` says a tool is gone (SPEC/1.0 extensions.md §tools-changed).
    pub(crate) fn noted<T>(&self, outcome: Result<T, Error>) -> Result<T, Error> {
        if matches!(outcome, Err(Error::ToolNotFound { .. })) {
            self.invalidate();
        }
        outcome
    }

    /// The current epoch, and the list if it is still valid.
    fn current(&self) -> (u64, Option<Arc<[ToolDescriptor]>>) {
        let list = self.list.lock();
        let epoch = self.epoch.load(Ordering::Acquire);
        let valid = list
            .as_ref()
            .filter(|(at, _)| *at == epoch)
            .map(|(_, tools)| tools.clone());
        (epoch, valid)
    }

    /// Keeps `tools`, fetched in `epoch`, unless an invalidation came since.
    fn store(&self, epoch: u64, tools: Arc<[ToolDescriptor]>) {
        let mut list = self.list.lock();
        if self.epoch.load(Ordering::Acquire) == epoch {
            *list = Some((epoch, tools));
        }
    }
}

impl Bridge {
    /// The mod's tools, from a cache when the mod announces its changes.
    ///
    /// A mod that advertises the `tools-changed` extension announces every change of its tools on
    /// `tools/changed`: the first call subscribes to that channel (through the layers, like
    /// [`Bridge::subscribe`]), and from then on the list is asked for again (`tools/list`) only after such an
    /// event, a lost event, or a reconnect. With any other mod, every call asks (as [`Bridge::list_tools`]).
    ///
    /// ```no_run
    /// # async fn f(bridge: gabp_session::bridge::Bridge) -> Result<(), gabp_session::Error> {
    /// let tools = bridge.tools().await?;
    /// let again = bridge.tools().await?; // no round trip, unless the tools changed
    /// # let _ = (tools, again);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Bridge::list_tools`] and [`Bridge::subscribe`].
    pub async fn tools(&self) -> Result<Arc<[ToolDescriptor]>, Error> {
        if !self.follow_tool_changes().await? {
            return Ok(self.list_tools().await?.into());
        }
        let cache = &self.inner.raw.shared.tools;
        let (epoch, cached) = cache.current();
        if let Some(tools) = cached {
            return Ok(tools);
        }
        let tools: Arc<[ToolDescriptor]> = self.list_tools().await?.into();
        cache.store(epoch, tools.clone());
        Ok(tools)
    }

    /// Forgets the tool list cached by [`Bridge::tools`], so that the next call asks the mod.
    pub fn invalidate_tools(&self) {
        self.inner.raw.shared.tools.invalidate();
    }

    /// Whether the mod advertises the `tools-changed` extension and its events reach this bridge; subscribes
    /// to `tools/changed` when they do not yet.
    async fn follow_tool_changes(&self) -> Result<bool, Error> {
        let advertised = self
            .welcome()
            .capabilities
            .extensions
            .as_ref()
            .is_some_and(|e| e.get(TOOLS_CHANGED_EXTENSION).is_some());
        if !advertised {
            return Ok(false);
        }
        let shared = &self.inner.raw.shared;
        let listens = || shared.router.lock().listens(TOOLS_CHANGED_CHANNEL);
        if listens() {
            return Ok(true);
        }
        let _one_at_a_time = shared.tools.following.lock().await;
        if listens() {
            return Ok(true);
        }
        let mut changes = self.subscribe([TOOLS_CHANGED_CHANNEL]).await?;
        // Changes before the subscription went unannounced.
        shared.tools.invalidate();
        if changes.channels().is_empty() {
            return Ok(false);
        }
        // The events themselves invalidate the cache as they arrive; this only keeps the queue empty.
        tokio::spawn(async move { while let Some(Ok(_)) = changes.next().await {} });
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gabp_types::ToolName;

    fn list(name: &str) -> Arc<[ToolDescriptor]> {
        let descriptor = serde_json::json!({
            "name": name, "title": name, "description": name, "inputSchema": {}, "outputSchema": {}
        });
        let descriptor: ToolDescriptor = serde_json::from_value(descriptor).unwrap();
        assert_eq!(descriptor.name, ToolName::new(name).unwrap());
        Arc::from(vec![descriptor])
    }

    #[test]
    fn a_list_fetched_before_an_invalidation_is_not_kept() {
        let cache = ToolCache::default();
        let (epoch, none) = cache.current();
        assert!(none.is_none());
        cache.store(epoch, list("a/one"));
        assert_eq!(cache.current().1.unwrap()[0].name.as_str(), "a/one");

        let (epoch, _) = cache.current();
        cache.invalidate();
        assert!(cache.current().1.is_none());
        cache.store(epoch, list("a/stale"));
        assert!(
            cache.current().1.is_none(),
            "fetched before the invalidation"
        );
        let (epoch, _) = cache.current();
        cache.store(epoch, list("a/fresh"));
        assert_eq!(cache.current().1.unwrap()[0].name.as_str(), "a/fresh");
    }

    /// A call answered "no such tool" means the list is stale even when no `tools/changed` event has arrived
    /// yet; any other outcome leaves the list as it is.
    #[test]
    fn only_a_tool_not_found_forgets_the_list() {
        let cache = ToolCache::default();
        let kept = |cache: &ToolCache| cache.current().1.is_some();
        let (epoch, _) = cache.current();
        cache.store(epoch, list("a/one"));
        let failed = |code: i64| {
            let error = gabp_types::ErrorObject::new(gabp_types::ErrorCode(code), "no");
            Err::<(), _>(Error::from_remote(error, "tools/call", Some("a/one")))
        };
        assert!(cache.noted(Ok(())).is_ok());
        assert!(cache.noted(failed(-32403)).is_err());
        assert!(kept(&cache), "success and other errors keep the list");
        assert!(matches!(
            cache.noted(failed(-32400)),
            Err(Error::ToolNotFound { .. })
        ));
        assert!(!kept(&cache), "a tool not found forgets it");
    }
}
