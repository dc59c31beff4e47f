//! One proxied connection's `Link`: the queue towards each side, the faults and the recorder it shares with
//! the proxy, its own state, and the frames it injects.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use gabp_transport::Token;
use gabp_types::{Message, MessageId, Response};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::padded_ping;
use crate::fault::{Faults, Kind};
use crate::record::{Direction, Recorder};
use gabp_codec::encode_frame as frame;

/// Frames queued per direction before the proxy stops reading (back-pressure passes through).
const QUEUE: usize = 16;

/// What a writer task writes.
pub(super) enum Out {
    /// Bytes to write as they are (a whole frame, or part of a filler body).
    Bytes(Bytes),
    /// Close the stream (after what was queued before).
    Close,
}

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
    /// Nothing more from the bridge is read (the stall-on-non-ASCII fault).
    pub(super) stalled: bool,
    /// An answer from the mod held back to be interleaved with the next (the interleave fault), and its number.
    pub(super) held: Option<(u64, Bytes)>,
    pub(super) held_count: u64,
    /// Requests from the bridge not answered yet (the interleave fault).
    pub(super) in_flight: u64,
    /// A wrong token was refused and the bridge's side stays open until the bridge closes it (the
    /// upstream-minimum fault).
    pub(super) refused_open: bool,
}

/// The proxy authenticated on the bridge's behalf (answer-before-hello fault).
pub(super) struct PreAuth {
    pub(super) token: Token,
    pub(super) own_id: MessageId,
    pub(super) bridge_hello_done: bool,
}

impl Link {
    /// A link with nothing armed on it yet, and the receiving ends of its queues: towards the mod, then
    /// towards the bridge.
    pub(super) fn new(
        connection: u64,
        faults: Faults,
        recorder: Recorder,
    ) -> (Arc<Link>, mpsc::Receiver<Out>, mpsc::Receiver<Out>) {
        let (to_mod, to_mod_rx) = mpsc::channel(QUEUE);
        let (to_bridge, to_bridge_rx) = mpsc::channel(QUEUE);
        let (welcome, _) = watch::channel(None);
        let link = Arc::new(Link {
            connection,
            faults,
            recorder,
            to_mod,
            to_bridge,
            cancel: CancellationToken::new(),
            state: Mutex::new(LinkState::default()),
            welcome,
        });
        (link, to_mod_rx, to_bridge_rx)
    }

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
    pub(super) async fn inject(&self, kind: Kind) {
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
