//! [`Router`]: the tower service that answers every method.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::FutureExt;
use gabp_types::decode::{tools_call_members, ToolsCallMembers};
use gabp_types::methods::{
    CallMeta, EnvReset, EnvSpaces, EnvStep, EventsSubscribe, EventsUnsubscribe, GoodbyeResult,
    InputKey, InputMouse, InputTextMethod, Method, PingResult, ResourcesList, ResourcesListResult,
    ResourcesRead, SessionGoodbye, SessionHello, SessionPing, StateGet, StateGetParams,
    StateGetResult, StateSet, StateSetParams, StateSetResult, SubscribeResult, TimePause,
    TimeResume, TimeStatus, TimeStep, ToolsCall, ToolsCancel, ToolsCancelResult, ToolsList,
    ToolsListResult, UnsubscribeResult,
};
use gabp_types::{quoted_name, ErrorCode, ErrorObject, MessageId, Response, ResultValue};
use serde::Serialize;
use serde_json::{json, Map, Value};
use tokio::time::Instant;
use tokio_util::sync::DropGuard;
use tower::Service;

use super::arguments::Arguments;
use super::clock::GameClock;
use super::context::{CallContext, StateMap};
use super::env::Env;
use super::error::CallError;
use super::events::{EventHub, EventPublisher, RejectedPattern};
use super::handler::BoxedHandler;
use super::input::{Input, InputFn};
use super::layer::capability::method_not_found;
use super::layer::ResponseFuture;
use super::main_thread::{Job, MainThread, NotRun};
use super::pattern::NamePattern;
use super::progress::Progress;
use super::registry::ToolTable;
use super::resource::RegisteredResource;
use super::session::{internal_error, CloseReason, Session};
use super::time_limit::Work;
use super::tool::RegisteredTool;
use super::tool::Run;
use super::ServerRequest;

/// Serves `state/get`: the state by component.
pub(crate) type StateGetFn = BoxedHandler<StateGetParams, Map<String, Value>>;
/// Serves `state/set`.
pub(crate) type StateSetFn = BoxedHandler<StateSetParams, StateSetResult>;
/// Serves a custom method: the request's params are its handler's input.
pub(crate) type MethodFn = BoxedHandler<ServerRequest, Value>;

/// Everything the router serves, built once by [`ModServerBuilder::build`](super::ModServerBuilder::build); the
/// tools live in a table that may change while serving (SPEC/1.0 extensions.md §tools-changed).
pub(crate) struct Routes {
    pub(crate) welcome: Value,
    pub(crate) tools: Arc<ToolTable>,
    pub(crate) resources: Vec<Arc<RegisteredResource>>,
    pub(crate) resource_index: HashMap<String, usize>,
    pub(crate) state_get: Option<StateGetFn>,
    pub(crate) state_set: Option<StateSetFn>,
    pub(crate) methods: HashMap<String, MethodFn>,
    pub(crate) hub: Arc<EventHub>,
    pub(crate) main_thread: MainThread,
    pub(crate) request_timeout: Duration,
    pub(crate) content_limit: usize,
    pub(crate) clock: Option<GameClock>,
    pub(crate) input: Option<InputFn>,
    pub(crate) env: Option<Arc<Env>>,
    pub(crate) state: Arc<StateMap>,
}

/// The innermost service of the mod's stack: it answers every method the mod serves.
///
/// | method | answer |
/// |---|---|
/// | `session/hello` | the welcome (authentication is [`AuthLayer`](super::layer::AuthLayer)'s job) |
/// | `session/ping` | `{timestamp}` (Unix milliseconds) |
/// | `session/goodbye` | `{}`, then the connection closes |
/// | `tools/list` | the tools, filtered by `filter.tags` (any of) and `filter.namePattern` (glob) |
/// | `tools/call` | `-32400` unknown tool, `-32602` arguments failing `inputSchema` (`data.errors`), the tool's result or error |
/// | `events/subscribe`, `events/unsubscribe` | the known channels among those asked (glob patterns expand) |
/// | `resources/list` | filtered by `pattern` (glob over the URI) and `namespace` |
/// | `resources/read` | the content; `-32300` for an unknown URI |
/// | `state/get`, `state/set` | the author's handlers, when registered |
/// | `time/status`, `time/pause`, `time/resume`, `time/step` | with [`ModServerBuilder::time_control`](super::ModServerBuilder::time_control): `{paused, tick}` ([`GameClock`]) |
/// | `input/key`, `input/text`, `input/mouse` | with [`ModServerBuilder::input`](super::ModServerBuilder::input): `{}` once the game took the input |
/// | `env/spaces`, `env/reset`, `env/step` | with [`ModServerBuilder::env`](super::ModServerBuilder::env): the spaces, an episode's first observation, a step's outcome |
/// | custom methods | their handlers ([`ModServerBuilder::method`](super::ModServerBuilder::method)) |
/// | anything else | `-32601` with `data.method` |
///
/// Cheap to clone. Get it from [`ModServer::router`](super::ModServer::router).
#[derive(Clone)]
pub struct Router {
    routes: Arc<Routes>,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router")
            .field("tools", &self.routes.tools.snapshot().entries().len())
            .field("resources", &self.routes.resources.len())
            .finish_non_exhaustive()
    }
}

fn invalid_params(pointer: &str, message: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::INVALID_PARAMS,
        format!("invalid params: {pointer}: {message}"),
    )
    .with_data(json!({ "errors": [{ "path": pointer, "message": message }] }))
}

/// The params of method `M`: absent ones read as `{}` unless `M` requires them (SPEC/1.0 gabp.md §4).
fn params<M: Method>(req: &ServerRequest) -> Result<M::Params, ErrorObject> {
    if M::PARAMS_REQUIRED && req.request.params.is_none() {
        return Err(invalid_params(
            "/params",
            &format!("`{}` requires params", M::NAME),
        ));
    }
    req.request.params_as::<M::Params>().map_err(|e| {
        let message = e.to_string();
        let message = gabp_types::without_json_position(&message);
        invalid_params("/params", message)
    })
}

/// The arguments as a value, for a validator (they are valid JSON: the decoder read them).
fn parse_arguments(arguments: &str) -> Result<Value, ErrorObject> {
    serde_json::from_str(arguments).map_err(|e| invalid_params("/params/arguments", &e.to_string()))
}

fn to_value<T: Serialize>(value: T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| internal_error(format!("cannot serialize: {e}")))
}

fn compile_pattern(pattern: &str, pointer: &str) -> Result<NamePattern, ErrorObject> {
    NamePattern::new(pattern).map_err(|e| invalid_params(pointer, &e.to_string()))
}

/// `-32602` naming the channel pattern the hub refused (SPEC/1.0 gabp.md §4.4).
fn channel_pattern_error(rejected: RejectedPattern) -> ErrorObject {
    let pointer = format!("/params/channels/{}", rejected.index);
    invalid_params(&pointer, &rejected.error.to_string())
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Router {
    pub(crate) fn new(routes: Routes) -> Self {
        Router {
            routes: Arc::new(routes),
        }
    }

    fn list_tools(&self, req: &ServerRequest) -> Result<Value, ErrorObject> {
        let p = params::<ToolsList>(req)?;
        let filter = p.filter.unwrap_or_default();
        let pattern = filter
            .name_pattern
            .as_deref()
            .map(|p| compile_pattern(p, "/params/filter/namePattern"))
            .transpose()?;
        let snapshot = self.routes.tools.snapshot();
        let tools = snapshot
            .entries()
            .iter()
            .map(|e| &*e.descriptor)
            .filter(|d| {
                filter
                    .tags
                    .as_ref()
                    .is_none_or(|tags| tags.iter().any(|t| d.has_tag(t)))
            })
            .filter(|d| pattern.as_ref().is_none_or(|p| p.matches(d.name.as_str())))
            .cloned()
            .collect();
        to_value(ToolsListResult::new(tools))
    }

    /// What a handler of request `id` on `session` may know. `own_token`: the call gets a token of its own,
    /// with the guard that fires it when the call's answer is dropped (answered, past its time limit, its
    /// connection gone: SPEC/1.0 gabp.md §7); the session's end fires it too. Without one, the session's
    /// token stands in (a handler that takes no context needs none of its own).
    fn context(
        &self,
        session: &Session,
        id: MessageId,
        own_token: bool,
        progress: Option<Arc<Progress>>,
    ) -> (CallContext, Option<DropGuard>) {
        let (token, guard) = if own_token {
            let token = session.cancellation().child_token();
            (Some(token.clone()), Some(token.drop_guard()))
        } else {
            (None, None)
        };
        let context = CallContext::new(
            session.clone(),
            id,
            token,
            EventPublisher::new(self.routes.hub.clone()),
            self.routes.state.clone(),
            self.routes.content_limit,
        )
        .with_progress(progress);
        (context, guard)
    }

    /// Serves request `id` with the future `serve` makes from the call's context (with a token of its own):
    /// the answer is written from the future's outcome, and dropping it cancels the call.
    fn serve<R, E, F>(
        &self,
        session: &Session,
        id: MessageId,
        progress: Option<Arc<Progress>>,
        serve: impl FnOnce(CallContext) -> Result<F, ErrorObject>,
    ) -> Result<ResponseFuture, ErrorObject>
    where
        R: Into<ResultValue>,
        E: Into<ErrorObject>,
        F: Future<Output = Result<R, E>> + Send + 'static,
    {
        let (context, cancel_on_drop) = self.context(session, id, true, progress);
        let answer = serve(context)?;
        Ok(async move {
            let _cancel_on_drop = cancel_on_drop;
            Ok(match answer.await {
                Ok(result) => Response::with_result(id, result.into()),
                Err(e) => Response::error(id, e.into()),
            })
        }
        .boxed())
    }

    fn call_tool(&self, req: ServerRequest) -> Result<ResponseFuture, ErrorObject> {
        let Some(params) = &req.request.params else {
            let message = format!("`{}` requires params", ToolsCall::NAME);
            return Err(invalid_params("/params", &message));
        };
        // Where the decoder's check found the members (SPEC/1.0 gabp.md §4.5); params that did not come
        // through the decoder are checked here the same way and refused with the same answer.
        let ToolsCallMembers {
            name,
            arguments,
            meta,
            ..
        } = tools_call_members(params).map_err(|e| e.to_error_object())?;
        let arguments = arguments.unwrap_or("{}");
        let Some(tool) = self.routes.tools.get(&name) else {
            return Err(ErrorObject::new(
                ErrorCode::TOOL_NOT_FOUND,
                format!("tool not found: {}", quoted_name(&name)),
            )
            .with_data(json!({ "tool": quoted_name(&name) })));
        };
        // Read once: a schema the type enforces is checked by decoding the text; any other is validated
        // on the parsed value first (SPEC/1.0 gabp.md §4.5).
        let args = if tool.checked_by_type {
            Arguments::Raw(arguments)
        } else {
            let value = parse_arguments(arguments)?;
            tool.check_arguments(&value)?;
            Arguments::Value(value)
        };
        // When decoding fails, the validator says where, as it would have for a schema it checks.
        let explain = |e: CallError| {
            if !tool.checked_by_type {
                return e.into_error_object();
            }
            match parse_arguments(arguments).map(|v| tool.check_arguments(&v)) {
                Ok(Err(checked)) | Err(checked) => checked,
                Ok(Ok(())) => e.into_error_object(),
            }
        };
        let session = &req.session;
        let progress = meta.and_then(|meta| progress_of(session, meta));
        let future = self.run_tool(&tool, &req, args, progress.clone(), explain)?;
        Ok(match progress {
            // The handler's reports end before its answer exists (SPEC/1.0 extensions.md §progress).
            Some(progress) => async move {
                let answer = future.await;
                progress.close();
                answer
            }
            .boxed(),
            None => future,
        })
    }

    fn run_tool(
        &self,
        tool: &Arc<RegisteredTool>,
        req: &ServerRequest,
        args: Arguments<'_>,
        progress: Option<Arc<Progress>>,
        explain: impl Fn(CallError) -> ErrorObject,
    ) -> Result<ResponseFuture, ErrorObject> {
        let id = req.id();
        let session = &req.session;
        match &tool.handler {
            Run::Async(handler, takes_context) => {
                let (context, guard) = self.context(session, id, *takes_context, progress);
                handler(context, guard, id, args).map_err(explain)
            }
            Run::MainThread(handler) => {
                let limit = tool.timeout.unwrap_or(self.routes.request_timeout);
                let deadline = Instant::now() + limit;
                self.serve(session, id, progress, |context| {
                    let job = handler(context, args).map_err(explain)?;
                    let not_run =
                        move |not_run: NotRun, name: &str| not_run.answer(Work::Tool(name), limit);
                    let name = tool.descriptor.name.as_str();
                    let queued = self
                        .routes
                        .main_thread
                        .submit(deadline, job)
                        .map_err(|n| not_run(n, name))?;
                    let tool = tool.clone();
                    Ok(async move {
                        queued
                            .answer()
                            .await
                            .unwrap_or_else(|n| Err(not_run(n, tool.descriptor.name.as_str())))
                    })
                })
            }
        }
    }

    /// `input/*` (SPEC/1.0 extensions.md §input): queued for the game's thread like a main-thread tool call,
    /// answered `{}` once the game took it.
    fn give_input(
        &self,
        req: &ServerRequest,
        apply: &InputFn,
    ) -> Result<ResponseFuture, ErrorObject> {
        let input = match req.method() {
            InputKey::NAME => Input::Key(params::<InputKey>(req)?),
            InputTextMethod::NAME => Input::Text(params::<InputTextMethod>(req)?),
            _ => Input::Mouse(params::<InputMouse>(req)?),
        };
        let method = req.method().to_owned();
        let limit = self.routes.request_timeout;
        let deadline = Instant::now() + limit;
        let apply = apply.clone();
        self.serve(&req.session, req.id(), None, |_context| {
            let job: Job = Box::new(move |state| {
                apply(state, input)
                    .map(|()| ResultValue::from(json!({})))
                    .map_err(CallError::into_error_object)
            });
            let not_run = move |n: NotRun, method: &str| n.answer(Work::Method(method), limit);
            let queued = self
                .routes
                .main_thread
                .submit(deadline, job)
                .map_err(|n| not_run(n, &method))?;
            Ok(async move {
                queued
                    .answer()
                    .await
                    .unwrap_or_else(|n| Err(not_run(n, &method)))
            })
        })
    }

    /// `env/*` (SPEC/1.0 extensions.md §env): the spaces at once; resets and steps one at a time in the order
    /// read, their game code on the game's thread.
    fn serve_env(
        &self,
        req: &ServerRequest,
        env: &Arc<Env>,
    ) -> Result<ResponseFuture, ErrorObject> {
        let (main_thread, clock) = (self.routes.main_thread.clone(), self.routes.clock.clone());
        let limit = self.routes.request_timeout;
        let env = env.clone();
        match req.method() {
            EnvSpaces::NAME => {
                params::<EnvSpaces>(req)?;
                let spaces = to_value(env.spaces());
                self.serve(&req.session, req.id(), None, |_| {
                    Ok(futures::future::ready(spaces))
                })
            }
            EnvReset::NAME => {
                let p = params::<EnvReset>(req)?;
                let (before, mine) = env.turn();
                self.serve(&req.session, req.id(), None, |_| {
                    Ok(async move {
                        let _mine = mine;
                        if let Some(before) = before {
                            let _ = before.await;
                        }
                        env.reset(p, &main_thread, clock.as_ref(), limit).await
                    })
                })
            }
            _ => {
                let p = params::<EnvStep>(req)?;
                env.check_action(&p.action)?;
                let (before, mine) = env.turn();
                self.serve(&req.session, req.id(), None, |_| {
                    Ok(async move {
                        let _mine = mine;
                        if let Some(before) = before {
                            let _ = before.await;
                        }
                        env.step(p.action, &main_thread, clock.as_ref(), limit)
                            .await
                    })
                })
            }
        }
    }

    fn subscribe(&self, req: &ServerRequest, subscribe: bool) -> Result<Value, ErrorObject> {
        let p = params::<EventsSubscribe>(req)?;
        let names: Vec<String> = p.channels.iter().map(|c| c.as_str().to_owned()).collect();
        let state = req.session.subscription_state();
        let names = (self.routes.hub)
            .subscribe(state, &names, subscribe)
            .map_err(channel_pattern_error)?;
        if subscribe {
            to_value(SubscribeResult::new(names))
        } else {
            to_value(UnsubscribeResult::new(names))
        }
    }

    fn list_resources(&self, req: &ServerRequest) -> Result<Value, ErrorObject> {
        let p = params::<ResourcesList>(req)?;
        let pattern = p
            .pattern
            .as_deref()
            .map(|p| compile_pattern(p, "/params/pattern"))
            .transpose()?;
        let resources = self
            .routes
            .resources
            .iter()
            .filter(|r| p.namespace.as_deref().is_none_or(|ns| r.namespace() == ns))
            .filter(|r| {
                pattern
                    .as_ref()
                    .is_none_or(|pat| pat.matches(r.info.uri.as_str()))
            })
            .map(|r| r.info.clone())
            .collect();
        to_value(ResourcesListResult::new(resources))
    }

    fn read_resource(&self, req: &ServerRequest) -> Result<ResponseFuture, ErrorObject> {
        let p = params::<ResourcesRead>(req)?;
        let Some(resource) = self
            .routes
            .resource_index
            .get(p.uri.as_str())
            .map(|&i| self.routes.resources[i].clone())
        else {
            return Err(ErrorObject::new(
                ErrorCode::RESOURCE_NOT_FOUND,
                format!("resource not found: {}", p.uri),
            )
            .with_data(json!({ "uri": p.uri.as_str() })));
        };
        self.serve(&req.session, req.id(), None, |context| {
            Ok(async move { resource.read(context).await })
        })
    }

    fn get_state(
        &self,
        req: &ServerRequest,
        handler: &StateGetFn,
    ) -> Result<ResponseFuture, ErrorObject> {
        let p = params::<StateGet>(req)?;
        let components = p.components.clone();
        self.serve(&req.session, req.id(), None, |context| {
            let state = handler(context, p);
            Ok(async move {
                let mut state = state.await?;
                if let Some(components) = components {
                    state.retain(|k, _| components.iter().any(|c| c == k));
                }
                to_value(StateGetResult::new(state, unix_millis() / 1000))
            })
        })
    }

    fn set_state(
        &self,
        req: &ServerRequest,
        handler: &StateSetFn,
    ) -> Result<ResponseFuture, ErrorObject> {
        let p = params::<StateSet>(req)?;
        self.serve(&req.session, req.id(), None, |context| {
            Ok(handler(context, p).map(|r| to_value(r?)))
        })
    }

    /// Answers `req`: synchronously for the cheap methods (so their effects, such as a subscription, happen in
    /// the order requests arrive), with a future for the rest.
    fn route(&self, req: ServerRequest) -> Result<ResponseFuture, Response> {
        let answer = |r: Result<Value, ErrorObject>| match r {
            Ok(v) => Err(req.reply(v)),
            Err(e) => Err(req.error(e)),
        };
        let routed = match req.method() {
            SessionHello::NAME => return answer(Ok(self.routes.welcome.clone())),
            SessionPing::NAME => return answer(to_value(PingResult::at(unix_millis()))),
            SessionGoodbye::NAME => {
                req.session.close_with(CloseReason::Goodbye);
                return answer(to_value(GoodbyeResult::default()));
            }
            ToolsList::NAME => return answer(self.list_tools(&req)),
            ToolsCancel::NAME => return answer(cancel(&req)),
            EventsSubscribe::NAME => return answer(self.subscribe(&req, true)),
            EventsUnsubscribe::NAME => return answer(self.subscribe(&req, false)),
            ResourcesList::NAME => return answer(self.list_resources(&req)),
            ResourcesRead::NAME => self.read_resource(&req),
            StateGet::NAME => match &self.routes.state_get {
                Some(handler) => self.get_state(&req, handler),
                None => Err(method_not_found(req.method())),
            },
            StateSet::NAME => match &self.routes.state_set {
                Some(handler) => self.set_state(&req, handler),
                None => Err(method_not_found(req.method())),
            },
            ToolsCall::NAME => {
                let id = req.id();
                return self.call_tool(req).map_err(|e| Response::error(id, e));
            }
            TimeStatus::NAME | TimePause::NAME | TimeResume::NAME | TimeStep::NAME => {
                match &self.routes.clock {
                    Some(clock) => control_time(&req, clock),
                    None => Err(method_not_found(req.method())),
                }
            }
            InputKey::NAME | InputTextMethod::NAME | InputMouse::NAME => match &self.routes.input {
                Some(apply) => self.give_input(&req, apply),
                None => Err(method_not_found(req.method())),
            },
            EnvSpaces::NAME | EnvReset::NAME | EnvStep::NAME => match &self.routes.env {
                Some(env) => self.serve_env(&req, env),
                None => Err(method_not_found(req.method())),
            },
            method => match self.routes.methods.get(method) {
                Some(handler) => {
                    let (session, id) = (req.session.clone(), req.id());
                    return self
                        .serve(&session, id, None, |context| Ok(handler(context, req)))
                        .map_err(|e| Response::error(id, e));
                }
                None => Err(method_not_found(method)),
            },
        };
        routed.map_err(|e| req.error(e))
    }
}

/// `tools/cancel` (SPEC/1.0 extensions.md §cancel): aborts the call if it still runs; the engine answers it
/// `-32404`. An unknown or finished id is answered `cancelled: false`.
fn cancel(req: &ServerRequest) -> Result<Value, ErrorObject> {
    let p = params::<ToolsCancel>(req)?;
    let cancelled = req
        .session
        .in_flight()
        .is_some_and(|in_flight| in_flight.cancel(&p.id));
    to_value(ToolsCancelResult::new(cancelled))
}

/// `time/status`, `time/pause`, `time/resume` and `time/step` (SPEC/1.0 extensions.md §time-control): a pause
/// is answered once no tick runs (a pause that changes nothing answers the state as it is and announces
/// nothing); a step once the game has run its ticks (the request's time limit applies).
fn control_time(req: &ServerRequest, clock: &GameClock) -> Result<ResponseFuture, ErrorObject> {
    let state = match req.method() {
        TimeStep::NAME => Err(clock.step(params::<TimeStep>(req)?.ticks)),
        TimeStatus::NAME => params::<TimeStatus>(req).map(|_| Ok(clock.status()))?,
        TimeResume::NAME => params::<TimeResume>(req).map(|_| Ok(clock.resume()))?,
        _ => params::<TimePause>(req).map(|_| clock.pause_settled())?,
    };
    let id = req.id();
    Ok(async move {
        let state = match state {
            Ok(state) => Ok(state),
            Err(done) => (done.await).map_err(|_| internal_error("the game clock was dropped")),
        };
        Ok(match state.and_then(to_value) {
            Ok(v) => Response::success(id, v),
            Err(e) => Response::error(id, e),
        })
    }
    .boxed())
}

/// The progress reporter of a call whose `_meta` carries a progress token (SPEC/1.0 extensions.md
/// §progress). The params were checked on decoding, so a token of the wrong type never gets here.
fn progress_of(session: &Session, meta: &str) -> Option<Arc<Progress>> {
    let sink = session.progress_sink()?;
    let meta: CallMeta = serde_json::from_str(meta).ok()?;
    Some(Arc::new(Progress::new(meta.progress_token?, sink.clone())))
}

impl Service<ServerRequest> for Router {
    type Response = Response;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ServerRequest) -> ResponseFuture {
        match self.route(req) {
            Ok(fut) => fut,
            Err(response) => futures::future::ready(Ok(response)).boxed(),
        }
    }
}
