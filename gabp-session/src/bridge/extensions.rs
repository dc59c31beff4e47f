//! [`Extensions`]: the type map a request or a response carries along the call path, for layers.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;

/// A type map carried by a [`BridgeRequest`](super::BridgeRequest) or a
/// [`BridgeResponse`](super::BridgeResponse), for layers to pass data along a call
/// (like `http::Extensions`). Empty extensions allocate nothing.
///
/// ```
/// use gabp_session::bridge::Extensions;
///
/// #[derive(Debug, PartialEq)]
/// struct Audit(&'static str);
///
/// let mut ext = Extensions::new();
/// assert!(ext.is_empty());
/// ext.insert(Audit("agent-7"));
/// assert_eq!(ext.get::<Audit>(), Some(&Audit("agent-7")));
/// assert_eq!(ext.remove::<Audit>(), Some(Audit("agent-7")));
/// ```
#[derive(Default)]
pub struct Extensions {
    map: Option<HashMap<TypeId, Box<dyn Any + Send + Sync>>>,
}

impl Extensions {
    /// No extensions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts a value, returning the previous value of that type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        self.map
            .get_or_insert_with(HashMap::new)
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast().ok().map(|b| *b))
    }

    /// The value of type `T`, if any.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map.as_ref()?.get(&TypeId::of::<T>())?.downcast_ref()
    }

    /// The value of type `T`, mutably, if any.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.map
            .as_mut()?
            .get_mut(&TypeId::of::<T>())?
            .downcast_mut()
    }

    /// Removes and returns the value of type `T`, if any.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        self.map
            .as_mut()?
            .remove(&TypeId::of::<T>())?
            .downcast()
            .ok()
            .map(|b| *b)
    }

    /// Whether there are no extensions.
    pub fn is_empty(&self) -> bool {
        self.map.as_ref().is_none_or(|m| m.is_empty())
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.map.as_ref().map_or(0, |m| m.len()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_replace_by_type() {
        let mut ext = Extensions::new();
        assert_eq!(ext.insert(1u32), None);
        assert_eq!(ext.insert(2u32), Some(1));
        *ext.get_mut::<u32>().unwrap() += 1;
        assert_eq!(ext.get::<u32>(), Some(&3));
        assert_eq!(ext.get::<u64>(), None);
        assert!(!ext.is_empty());
    }
}
