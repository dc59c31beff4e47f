//! One proxied connection: its `Link`, the tasks that move its frames, and their shutdown.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use gabp_transport::{ByteStream, Token};
use gabp_types::methods::Platform;
use gabp_types::{Message, MessageId, Response};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::frames::{read_side, write_side};
use super::{padded_ping, Out, Shared, QUEUE};
use crate::fault::{Faults, Kind};
use crate::record::{Direction, Recorder};
use gabp_codec::encode_frame as frame;

/// A per-connection view of the proxy.
pub(super) struct Link {
    pub(super) connection: u64,
    pub(super) faults: Faults,
    pub(super) recorder: Recorder,
    to_mod: mpsc::Sender<Out>,
    to_bridge: mpsc::Sender<Out>,
    pub(super) cancel: CancellationToken,
    pub(super) state: Mutex<LinkState>,
    pub(super) welcome: watch::Sender<Option<Value>>,
}

#[derive(Default)]
pub(super) struct LinkState {
    pub(super) preauth: Option<PreAuth>,
    pub(super) seq_offsets: HashMap<String, u64>,
}

/// The proxy authenticated on the bridge's behalf (answer-before-hello fault).
pub(super) struct PreAuth {
    pub(super) token: Token,
    pub(super) own_id: MessageId,
    pub(super) bridge_hello_done: bool,
}

impl Link {
    fn sender(&self, direction: Direction) -> &mpsc::Sender<Out> {
        match direction {
            Direction::BridgeToMod => &self.to_mod,
            Direction::ModToBridge => &self.to_bridge,
        }
    }

    /// Queues a frame towards the peer `direction` points to; false when that side is gone.
    pub(super) async fn forward(&self, direction: Direction, bytes: Bytes) -> bool {
        self.sender(direction).send(Out::Bytes(bytes)).await.is_ok()
    }

    pub(super) async fn close(&self, direction: Direction) {
        let _ = self.sender(direction).send(Out::Close).await;
    }

    /// Drops the connection: both sides are closed once the frames already queued are written.
    pub(super) async fn drop_connection(&self) {
        self.close(Direction::BridgeToMod).await;
        self.close(Direction::ModToBridge).await;
    }

    /// Records and forwards one injected frame.
    async fn inject(&self, kind: Kind) {
        let (direction, body) = match kind {
            Kind::UnsolicitedResponse => {
                let response =
                    Response::success(MessageId::new_v4(), json!({ "unsolicited": true }));
                (Direction::ModToBridge, Message::from(response).to_vec())
            }
            Kind::OversizedFrame(Direction::BridgeToMod, size) => (
                Direction::BridgeToMod,
                padded_ping(MessageId::new_v4(), size),
            ),
            Kind::OversizedFrame(direction, size) => {
                let mut body = b"{}".to_vec();
                body.resize(size.max(2), b' ');
                (direction, body)
            }
            _ => return,
        };
        let body = Bytes::from(body);
        self.recorder.record(
            direction,
            self.connection,
            body.clone(),
            body.len() as u64,
            true,
        );
        self.forward(direction, frame(&body)).await;
    }
}

pub(super) async fn run_link(
    shared: Arc<Shared>,
    connection: u64,
    bridge_io: ByteStream,
    mod_io: ByteStream,
) {
    let (bridge_r, bridge_w) = tokio::io::split(bridge_io);
    let (mod_r, mod_w) = tokio::io::split(mod_io);
    let (to_mod, to_mod_rx) = mpsc::channel(QUEUE);
    let (to_bridge, to_bridge_rx) = mpsc::channel(QUEUE);
    let (welcome, _) = watch::channel(None);
    let link = Arc::new(Link {
        connection,
        faults: shared.faults.clone(),
        recorder: shared.recorder.clone(),
        to_mod,
        to_bridge,
        cancel: CancellationToken::new(),
        state: Mutex::new(LinkState::default()),
        welcome,
    });

    // Answer-before-hello: authenticate with the mod at once, on the bridge's behalf.
    if let Some(token) = link.faults.take(|k| match k {
        Kind::AnswerBeforeHello(token) => Some(token.clone()),
        _ => None,
    }) {
        let own_id = MessageId::new_v4();
        let hello = json!({
            "v": "gabp/1", "id": own_id, "type": "request", "method": "session/hello",
            "params": {
                "token": token.expose_secret(), "bridgeVersion": env!("CARGO_PKG_VERSION"),
                "platform": Platform::current(), "launchId": MessageId::new_v4(),
                "clientInfo": { "name": "gabp-testkit proxy" }
            }
        });
        link.state.lock().preauth = Some(PreAuth {
            token,
            own_id,
            bridge_hello_done: false,
        });
        let body = serde_json::to_vec(&hello).unwrap_or_default();
        link.forward(Direction::BridgeToMod, frame(&body)).await;
    }

    // Once neither side can be written to, there is nothing left to forward: the readers stop too.
    let max = shared.max_frame;
    let writers = async {
        tokio::join!(
            write_side(link.clone(), mod_w, to_mod_rx, Direction::BridgeToMod),
            write_side(link.clone(), bridge_w, to_bridge_rx, Direction::ModToBridge),
        );
        link.cancel.cancel();
    };
    let readers = async {
        tokio::join!(
            read_side(link.clone(), bridge_r, Direction::BridgeToMod, max),
            read_side(link.clone(), mod_r, Direction::ModToBridge, max),
        )
    };
    tokio::select! {
        _ = async { tokio::join!(writers, readers) } => {}
        () = control(link.clone()) => {}
    }
    link.cancel.cancel();
}

/// Sends the injected frames as they are armed, until the link ends.
async fn control(link: Arc<Link>) {
    let mut changes = link.faults.subscribe();
    loop {
        for kind in link.faults.take_injections() {
            link.inject(kind).await;
        }
        tokio::select! {
            () = link.cancel.cancelled() => return,
            changed = changes.changed() => if changed.is_err() { return },
        }
    }
}
