//! WebSocket on loopback (SPEC/1.0 transport.md §2.5): the handshake checks (Origin, token,
//! subprotocol), the listener's background handshakes and the bridge's connect.

mod settings;
mod stream;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::server::{
    Callback, ErrorResponse, Request, Response,
};
use tokio_tungstenite::tungstenite::http::{header, HeaderValue, StatusCode};

pub use settings::{WsSettings, WS_SUBPROTOCOL, WS_TOKEN_PROTOCOL_PREFIX};

use crate::endpoint::Endpoint;
use crate::error::TransportError;
use crate::stream::ByteStream;
use stream::{ws_config, WsStream};

/// Handshakes in progress at once on one listener; further TCP connections wait to be accepted.
const MAX_HANDSHAKES: usize = 16;

/// What a listener's handshakes read when they start: settings may change after binding.
#[derive(Debug)]
struct Shared {
    settings: RwLock<WsSettings>,
    max_body: AtomicUsize,
}

/// The WebSocket side of a [`Listener`](crate::Listener): TCP is accepted and the handshakes run
/// in the background, so `accept` stays cancel-safe and a slow client delays nobody.
#[derive(Debug)]
pub(crate) struct WsListener {
    ready: tokio::sync::Mutex<mpsc::Receiver<(ByteStream, String)>>,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl WsListener {
    pub(crate) fn new(tcp: TcpListener, max_body: usize) -> Self {
        let shared = Arc::new(Shared {
            settings: RwLock::new(WsSettings::default()),
            max_body: AtomicUsize::new(max_body),
        });
        let (tx, rx) = mpsc::channel(4);
        let task = tokio::spawn(accept_loop(tcp, shared.clone(), tx));
        WsListener {
            ready: tokio::sync::Mutex::new(rx),
            shared,
            task,
        }
    }

    pub(crate) fn set_settings(&self, f: impl FnOnce(&mut WsSettings)) {
        f(&mut self.shared.settings.write());
    }

    pub(crate) fn settings(&self) -> WsSettings {
        self.shared.settings.read().clone()
    }

    pub(crate) fn set_max_body(&self, max_body: usize) {
        self.shared.max_body.store(max_body, Ordering::Relaxed);
    }

    pub(crate) async fn accept(&self) -> Result<(ByteStream, String), TransportError> {
        self.ready
            .lock()
            .await
            .recv()
            .await
            .ok_or(TransportError::Closed)
    }
}

impl Drop for WsListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(
    tcp: TcpListener,
    shared: Arc<Shared>,
    ready: mpsc::Sender<(ByteStream, String)>,
) {
    let permits = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let (socket, peer) = match tcp.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Often transient (too many open files): wait a little and go on.
                tracing::warn!(error = %e, "cannot accept a WebSocket connection");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        if let Err(e) = socket.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let settings = shared.settings.read().clone();
        let max_body = shared.max_body.load(Ordering::Relaxed);
        let ready = ready.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let check = Check {
                settings: &settings,
            };
            let handshake = tokio_tungstenite::accept_hdr_async_with_config(
                socket,
                check,
                Some(ws_config(max_body)),
            );
            match tokio::time::timeout(settings.handshake_timeout, handshake).await {
                Ok(Ok(ws)) => {
                    let stream = ByteStream::new(WsStream::new(ws, &settings, max_body));
                    let peer = Endpoint::WebSocket(peer).to_string();
                    let _ = ready.send((stream, peer)).await;
                }
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "WebSocket handshake refused"),
                Err(_) => tracing::debug!(%peer, "WebSocket handshake timed out"),
            }
        });
    }
}

/// The handshake checks of SPEC/1.0 transport.md §2.5.
struct Check<'a> {
    settings: &'a WsSettings,
}

fn refuse(status: StatusCode, why: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(why.to_owned()));
    *response.status_mut() = status;
    response
}

impl Callback for Check<'_> {
    fn on_request(
        self,
        request: &Request,
        mut response: Response,
    ) -> Result<Response, ErrorResponse> {
        let headers = request.headers();
        let origin = match headers.get(header::ORIGIN).map(HeaderValue::to_str) {
            None => None,
            Some(Ok(origin)) => Some(origin),
            Some(Err(_)) => return Err(refuse(StatusCode::FORBIDDEN, "origin not allowed")),
        };
        if !self.settings.origin_allowed(origin) {
            tracing::warn!(
                origin = gabp_types::shorten(origin.unwrap_or_default(), 120).as_ref(),
                "WebSocket handshake from an origin that is not allowed"
            );
            return Err(refuse(StatusCode::FORBIDDEN, "origin not allowed"));
        }
        let offered: Vec<&str> = headers
            .get_all(header::SEC_WEBSOCKET_PROTOCOL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let candidates = offered
            .iter()
            .filter_map(|p| p.strip_prefix(WS_TOKEN_PROTOCOL_PREFIX))
            .chain(bearer);
        if let Some(token) = &self.settings.token {
            for candidate in candidates {
                if !token.verify(candidate) {
                    tracing::warn!("WebSocket handshake with a wrong token");
                    return Err(refuse(StatusCode::UNAUTHORIZED, "wrong token"));
                }
            }
        }
        if offered.contains(&WS_SUBPROTOCOL) {
            response.headers_mut().insert(
                header::SEC_WEBSOCKET_PROTOCOL,
                HeaderValue::from_static(WS_SUBPROTOCOL),
            );
        }
        Ok(response)
    }
}

/// Open a WebSocket to the loopback `addr`, offering `gabp.v1` (and, when `settings` has a token,
/// sending it as `Authorization: Bearer`).
pub(crate) async fn connect(
    addr: SocketAddr,
    settings: &WsSettings,
    max_body: usize,
) -> Result<ByteStream, TransportError> {
    let endpoint = Endpoint::WebSocket(addr);
    crate::endpoint::check_loopback(&addr)?;
    let failed = |e: io::Error| TransportError::io("connect to", &endpoint, e);
    let socket = TcpStream::connect(addr).await.map_err(failed)?;
    if let Err(e) = socket.set_nodelay(true) {
        tracing::debug!(error = %e, "cannot set TCP_NODELAY");
    }
    let mut request = format!("ws://{addr}/")
        .into_client_request()
        .map_err(|e| failed(io::Error::other(e.to_string())))?;
    let headers = request.headers_mut();
    headers.insert(
        header::SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_static(WS_SUBPROTOCOL),
    );
    if let Some(token) = &settings.token {
        let value = HeaderValue::from_str(&format!("Bearer {}", token.expose_secret()))
            .map_err(|_| failed(io::Error::other("the token cannot be sent in a header")))?;
        headers.insert(header::AUTHORIZATION, value);
    }
    let handshake =
        tokio_tungstenite::client_async_with_config(request, socket, Some(ws_config(max_body)));
    let (ws, _) = tokio::time::timeout(settings.handshake_timeout, handshake)
        .await
        .map_err(|_| failed(io::ErrorKind::TimedOut.into()))?
        .map_err(|e| failed(handshake_error(e)))?;
    Ok(ByteStream::new(WsStream::new(ws, settings, max_body)))
}

/// The handshake error, without anything the server echoed back.
fn handshake_error(e: tokio_tungstenite::tungstenite::Error) -> io::Error {
    use tokio_tungstenite::tungstenite::Error;
    match e {
        Error::Io(e) => e,
        Error::Http(response) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "the WebSocket handshake was refused: HTTP {}",
                response.status()
            ),
        ),
        other => io::Error::other(format!("the WebSocket handshake failed: {other}")),
    }
}
