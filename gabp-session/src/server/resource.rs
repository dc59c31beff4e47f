//! Resources: [`Resource`], read by `resources/read` and listed by `resources/list`.

use std::fmt;
use std::future::Future;

use base64::Engine as _;
use gabp_types::methods::{ContentEncoding, ResourceInfo, ResourcesReadResult};
use gabp_types::{ErrorObject, Uri};
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use super::context::{CallContext, StateType};
use super::error::CallError;
use super::handler::{boxed, BoxedHandler, Handler};
use crate::Error;

#[derive(Clone)]
enum Reader {
    Text(BoxedHandler<IgnoredAny, String>),
    Binary(BoxedHandler<IgnoredAny, Vec<u8>>),
}

/// A readable resource to register with [`ModServerBuilder::resource`](super::ModServerBuilder::resource).
///
/// A text resource is sent as is with `encoding: "utf-8"`; a binary one as base64 with `encoding: "base64"`.
/// The provider runs on every `resources/read`.
///
/// ```
/// use gabp_session::server::Resource;
///
/// let world = Resource::text("gabp://game/world", "World", || async {
///     Ok(r#"{"size":16}"#.to_owned())
/// })
/// .mime_type("application/json")
/// .description("Size of the world");
///
/// let icon = Resource::binary("gabp://mod/icon", "Icon", || async { Ok(vec![0x89, b'P', b'N', b'G']) })
///     .mime_type("image/png");
/// assert_eq!(icon.uri(), "gabp://mod/icon");
/// # let _ = world;
/// ```
#[derive(Clone)]
pub struct Resource {
    uri: String,
    name: String,
    description: Option<String>,
    mime_type: Option<String>,
    size: Option<u64>,
    reader: Reader,
    states: Vec<StateType>,
}

impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resource")
            .field("uri", &self.uri)
            .field("name", &self.name)
            .field("binary", &matches!(self.reader, Reader::Binary(_)))
            .finish_non_exhaustive()
    }
}

impl Resource {
    /// A text resource whose content `read` provides: a [`Handler`] that takes only extractors
    /// ([`CallContext`], [`State<T>`](super::State), ...).
    pub fn text<M, H>(uri: impl Into<String>, name: impl Into<String>, read: H) -> Self
    where
        H: Handler<M, Input = IgnoredAny, Output = String>,
        H::Call: Future<Output = Result<String, CallError>> + Send + 'static,
    {
        Self::with_reader(uri, name, Reader::Text(boxed(read, Ok)), H::states())
    }

    /// A binary resource whose bytes `read` provides (sent base64-encoded); `read` may take extractors.
    pub fn binary<M, H>(uri: impl Into<String>, name: impl Into<String>, read: H) -> Self
    where
        H: Handler<M, Input = IgnoredAny, Output = Vec<u8>>,
        H::Call: Future<Output = Result<Vec<u8>, CallError>> + Send + 'static,
    {
        Self::with_reader(uri, name, Reader::Binary(boxed(read, Ok)), H::states())
    }

    fn with_reader(
        uri: impl Into<String>,
        name: impl Into<String>,
        reader: Reader,
        states: Vec<StateType>,
    ) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
            size: None,
            reader,
            states,
        }
    }

    /// The shared states the resource's reader takes.
    pub(crate) fn states(&self) -> &[StateType] {
        &self.states
    }

    /// The resource's URI.
    #[must_use]
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type (listed, and sent with the content).
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the size in bytes shown by `resources/list`.
    #[must_use]
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    pub(crate) fn register(self) -> Result<RegisteredResource, Error> {
        let uri = Uri::new(self.uri).map_err(|e| Error::InvalidName {
            kind: "resource",
            reason: e.to_string(),
        })?;
        Ok(RegisteredResource {
            info: ResourceInfo {
                uri,
                name: self.name,
                description: self.description,
                mime_type: self.mime_type,
                size: self.size,
                extra: Map::new(),
            },
            reader: self.reader,
        })
    }
}

pub(crate) struct RegisteredResource {
    pub(crate) info: ResourceInfo,
    reader: Reader,
}

impl RegisteredResource {
    /// The namespace of the URI: what follows `scheme://` up to the next `/` (`game` in `gabp://game/world`).
    pub(crate) fn namespace(&self) -> &str {
        let uri = self.info.uri.as_str();
        let rest = uri.split_once("://").map_or(uri, |(_, rest)| rest);
        rest.split('/').next().unwrap_or_default()
    }

    pub(crate) async fn read(&self, context: CallContext) -> Result<Value, ErrorObject> {
        let result = match &self.reader {
            Reader::Text(read) => ResourcesReadResult {
                content: Value::String(read(context, IgnoredAny).await?),
                mime_type: self.info.mime_type.clone(),
                encoding: Some(ContentEncoding::Utf8),
                extra: Map::new(),
            },
            Reader::Binary(read) => ResourcesReadResult {
                content: Value::String(
                    base64::engine::general_purpose::STANDARD
                        .encode(read(context, IgnoredAny).await?),
                ),
                mime_type: self.info.mime_type.clone(),
                encoding: Some(ContentEncoding::Base64),
                extra: Map::new(),
            },
        };
        serde_json::to_value(result).map_err(|e| super::session::internal_error(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::server::context::StateMap;
    use crate::server::events::{EventHub, EventPublisher};
    use crate::server::{Session, State};

    fn context(state: StateMap) -> CallContext {
        CallContext::new(
            Session::detached(),
            gabp_types::MessageId::nil(),
            Some(tokio_util::sync::CancellationToken::new()),
            EventPublisher::new(Arc::new(EventHub::new(1024))),
            Arc::new(state),
            1024,
        )
    }

    #[tokio::test]
    async fn readers_take_extractors() {
        let mut state = StateMap::default();
        state.insert(42_u32);
        let resource = Resource::text(
            "gabp://game/answer",
            "Answer",
            |State(n): State<u32>| async move { Ok(n.to_string()) },
        )
        .register()
        .unwrap();
        let v = resource.read(context(state)).await.unwrap();
        assert_eq!(v["content"], "42");
        // Without the state the read fails with the extractor's error, not a panic.
        let error = resource
            .read(context(StateMap::default()))
            .await
            .unwrap_err();
        assert_eq!(error.code, gabp_types::ErrorCode::INTERNAL_ERROR);
    }

    #[tokio::test]
    async fn text_and_binary_content() {
        let text = Resource::text("gabp://game/world", "World", || async { Ok("hi".into()) })
            .mime_type("text/plain")
            .register()
            .unwrap();
        assert_eq!(text.namespace(), "game");
        let v = text.read(context(StateMap::default())).await.unwrap();
        assert_eq!(
            v,
            serde_json::json!({"content": "hi", "mimeType": "text/plain", "encoding": "utf-8"})
        );
        let bin = Resource::binary("gabp://mod/info", "Info", || async {
            Ok(vec![0, 1, 2, 255])
        })
        .register()
        .unwrap();
        let v = bin.read(context(StateMap::default())).await.unwrap();
        assert_eq!(
            v,
            serde_json::json!({"content": "AAEC/w==", "encoding": "base64"})
        );
        assert!(Resource::text("world", "W", || async { Ok(String::new()) })
            .register()
            .is_err());
    }
}
