//! [`ToolCache`]: the bridge's cached tool list, kept fresh by the `tools/changed` event (SPEC/1.0 extensions.md
//! §tools-changed).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use gabp_types::ToolDescriptor;
use parking_lot::Mutex;

use crate::Error;

/// The last `tools/list` answer, valid until the next invalidation.
#[derive(Default)]
pub(crate) struct ToolCache {
    /// Counts invalidations: a list fetched before one is not kept.
    epoch: AtomicU64,
    list: Mutex<Option<(u64, Arc<[ToolDescriptor]>)>>,
    /// Serializes the subscription that keeps the cache fresh.
    pub(super) following: tokio::sync::Mutex<()>,
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
    pub(super) fn current(&self) -> (u64, Option<Arc<[ToolDescriptor]>>) {
        let list = self.list.lock();
        let epoch = self.epoch.load(Ordering::Acquire);
        let valid = list
            .as_ref()
            .filter(|(at, _)| *at == epoch)
            .map(|(_, tools)| tools.clone());
        (epoch, valid)
    }

    /// Keeps `tools`, fetched in `epoch`, unless an invalidation came since.
    pub(super) fn store(&self, epoch: u64, tools: Arc<[ToolDescriptor]>) {
        let mut list = self.list.lock();
        if self.epoch.load(Ordering::Acquire) == epoch {
            *list = Some((epoch, tools));
        }
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
