//! [`ExtraMembers`]: the members a liberal read kept beyond `gabp/1` (SPEC/1.0 gabp.md §3.5), found for the
//! strict decoder and cleared before our mod writes.

use serde_json::{Map, Value};

use crate::methods::{
    AppInfo, AttentionAckResult, AttentionCurrentResult, EnvResetResult, EnvSpacesResult,
    EnvStepResult, GoodbyeResult, InputResult, PingResult, ResourceInfo, ResourcesListResult,
    ResourcesReadResult, ServerInfo, StateGetResult, StateSetError, StateSetResult,
    SubscribeResult, TimeState, ToolsCancelResult, ToolsListResult, UnsubscribeResult,
    WelcomeResult,
};
use crate::pointer::escape_pointer;
use crate::{Attention, AttentionSample, Capabilities, Limits, ToolDescriptor};

/// A type of an answer from a mod that keeps, in `extra` fields, the members `gabp/1` does not define, in
/// itself and in everything it holds.
///
/// ```
/// use gabp_types::methods::ToolsListResult;
/// use gabp_types::ExtraMembers;
///
/// let mut list: ToolsListResult = serde_json::from_value(serde_json::json!({"tools": [{
///     "name": "inventory/get", "title": "Get", "description": "The inventory.",
///     "inputSchema": {"type": "object"}, "outputSchema": {}, "requiresAuth": true
/// }]}))?;
/// assert_eq!(list.tools[0].extra["requiresAuth"], true);
/// assert_eq!(list.first_extra().as_deref(), Some("/tools/0/requiresAuth"));
/// list.clear_extra();
/// assert_eq!(list.first_extra(), None);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub trait ExtraMembers {
    /// The JSON pointer, relative to this value, of the first member `gabp/1` does not define (depth first,
    /// in key order), if any.
    fn first_extra(&self) -> Option<String>;

    /// Drops every such member, here and in everything held, so the value writes as strict `gabp/1`.
    fn clear_extra(&mut self);
}

fn own(extra: &Map<String, Value>) -> Option<String> {
    extra
        .keys()
        .next()
        .map(|k| format!("/{}", escape_pointer(k)))
}

fn inside<T: ExtraMembers>(name: &str, value: &T) -> Option<String> {
    value.first_extra().map(|p| format!("/{name}{p}"))
}

fn each<T: ExtraMembers>(name: &str, items: &[T]) -> Option<String> {
    items
        .iter()
        .enumerate()
        .find_map(|(i, item)| item.first_extra().map(|p| format!("/{name}/{i}{p}")))
}

impl<T: ExtraMembers> ExtraMembers for Option<T> {
    fn first_extra(&self) -> Option<String> {
        self.as_ref().and_then(ExtraMembers::first_extra)
    }
    fn clear_extra(&mut self) {
        if let Some(value) = self {
            value.clear_extra();
        }
    }
}

/// Types whose members are all plain values.
macro_rules! flat {
    ($($ty:ty),* $(,)?) => {$(
        impl ExtraMembers for $ty {
            fn first_extra(&self) -> Option<String> {
                own(&self.extra)
            }
            fn clear_extra(&mut self) {
                self.extra.clear();
            }
        }
    )*};
}

flat!(
    Limits,
    AppInfo,
    ServerInfo,
    PingResult,
    GoodbyeResult,
    ToolDescriptor,
    SubscribeResult,
    UnsubscribeResult,
    ResourceInfo,
    ResourcesReadResult,
    StateGetResult,
    StateSetError,
    AttentionSample,
    ToolsCancelResult,
    TimeState,
    InputResult,
    EnvSpacesResult,
    EnvResetResult,
    EnvStepResult,
);

/// Types that hold other such types: `$field => inside` for a value or an `Option`, `$field => each` for a
/// `Vec`, `$field => each_opt` for an `Option<Vec>`.
macro_rules! nested {
    ($ty:ty { $($name:literal $field:ident => $how:ident),* $(,)? }) => {
        impl ExtraMembers for $ty {
            fn first_extra(&self) -> Option<String> {
                own(&self.extra)
                    $(.or_else(|| nested!(@find $how, $name, &self.$field)))*
            }
            fn clear_extra(&mut self) {
                self.extra.clear();
                $(nested!(@clear $how, &mut self.$field);)*
            }
        }
    };
    (@find inside, $name:literal, $v:expr) => { inside($name, $v) };
    (@find each, $name:literal, $v:expr) => { each($name, $v) };
    (@find each_opt, $name:literal, $v:expr) => { $v.as_deref().and_then(|items| each($name, items)) };
    (@clear inside, $v:expr) => { $v.clear_extra() };
    (@clear each, $v:expr) => { $v.iter_mut().for_each(ExtraMembers::clear_extra) };
    (@clear each_opt, $v:expr) => {
        if let Some(items) = $v {
            items.iter_mut().for_each(ExtraMembers::clear_extra);
        }
    };
}

nested!(Capabilities { "limits" limits => inside });
nested!(WelcomeResult {
    "app" app => inside,
    "capabilities" capabilities => inside,
    "serverInfo" server_info => inside,
});
nested!(ToolsListResult { "tools" tools => each });
nested!(ResourcesListResult { "resources" resources => each });
nested!(StateSetResult { "errors" errors => each_opt });
nested!(Attention { "sample" sample => each_opt });
nested!(AttentionCurrentResult { "attention" attention => inside });
nested!(AttentionAckResult { "currentAttention" current_attention => inside });

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_reach_nested_members() {
        let welcome: WelcomeResult = serde_json::from_value(json!({
            "agentId": "a", "app": {"name": "g", "version": "1"},
            "capabilities": {"limits": {"maxEventRate": 5}}, "schemaVersion": "1.0"
        }))
        .unwrap();
        assert_eq!(
            welcome.first_extra().as_deref(),
            Some("/capabilities/limits/maxEventRate")
        );
        let set: StateSetResult = serde_json::from_value(json!({
            "applied": {}, "errors": [{"field": "a", "message": "b"}, {"field": "c", "message": "d", "x/y": 1}]
        }))
        .unwrap();
        assert_eq!(set.first_extra().as_deref(), Some("/errors/1/x~1y"));
        let mut set = set;
        set.clear_extra();
        assert_eq!(set.first_extra(), None);
        assert_eq!(
            serde_json::to_value(&set).unwrap(),
            json!({"applied": {}, "errors": [{"field": "a", "message": "b"}, {"field": "c", "message": "d"}]})
        );
    }
}
