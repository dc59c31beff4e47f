//! Fault injection: [`Fault`] says what goes wrong, [`Faults`] arms faults on a running
//! [`FaultProxy`](crate::FaultProxy).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gabp_transport::Token;
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::record::Direction;

/// What a fault does. Internal: users build faults with [`Fault`]'s constructors.
#[derive(Clone)]
pub(crate) enum Kind {
    Delay(Direction, Duration),
    DropAfter(u64),
    Corrupt(Direction),
    WrongResponseId,
    UnsolicitedResponse,
    SkipEventSeq,
    StopReading(Direction),
    OversizedFrame(Direction, usize),
    AcceptAnyToken(Token),
    AnswerBeforeHello(Token),
    UnknownEnvelopeField,
    StallOnMalformedHeader,
    ExecuteOversized,
    StallOnNonAscii,
    StallOnMissingLength,
    UnregisteredErrorCodes,
    InterleaveAnswers,
    NullBesideOther,
    UpstreamMinimum,
    UncheckedInput,
    UncheckedActions,
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Delay(..) => "delay",
            Kind::DropAfter(_) => "drop after",
            Kind::Corrupt(_) => "corrupt",
            Kind::WrongResponseId => "wrong response id",
            Kind::UnsolicitedResponse => "unsolicited response",
            Kind::SkipEventSeq => "skip event seq",
            Kind::StopReading(_) => "stop reading",
            Kind::OversizedFrame(..) => "oversized frame",
            Kind::AcceptAnyToken(_) => "accept any token",
            Kind::AnswerBeforeHello(_) => "answer before hello",
            Kind::UnknownEnvelopeField => "unknown envelope field",
            Kind::StallOnMalformedHeader => "stall on malformed header",
            Kind::ExecuteOversized => "execute oversized frames",
            Kind::StallOnNonAscii => "stall on non-ASCII bodies",
            Kind::StallOnMissingLength => "stall on a missing Content-Length",
            Kind::UnregisteredErrorCodes => "unregistered error codes",
            Kind::InterleaveAnswers => "interleave answers",
            Kind::NullBesideOther => "null beside the other member",
            Kind::UpstreamMinimum => "upstream minimum",
            Kind::UncheckedInput => "unchecked input",
            Kind::UncheckedActions => "unchecked actions",
        }
    }

    /// Faults that act once, at once, rather than on the frames that pass.
    fn is_injection(&self) -> bool {
        matches!(self, Kind::UnsolicitedResponse | Kind::OversizedFrame(..))
    }
}

/// Something that goes wrong between a bridge and a mod, on a [`FaultProxy`](crate::FaultProxy).
///
/// Build one with a constructor, optionally say how often it applies ([`Fault::times`], [`Fault::always`]),
/// and arm it with [`Faults::inject`] (or [`PairBuilder::fault`](crate::PairBuilder::fault) before the
/// connection exists). Each constructor documents its default: faults on "the next" frame apply once, the
/// others until [`Faults::clear`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gabp_session::Error;
/// use gabp_testkit::{Direction, Fault};
/// use std::time::Duration;
///
/// let pair = gabp_testkit::pair().await?;
/// // The mod's next frame arrives corrupted: the bridge cannot read the answer, and the call times out.
/// pair.faults.inject(Fault::corrupt_next(Direction::ModToBridge));
/// let late = pair.bridge.with_timeout(Duration::from_millis(200)).ping().await;
/// assert!(matches!(late, Err(Error::Timeout { .. })));
/// // The fault applied once: the connection goes on.
/// pair.bridge.ping().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Fault {
    pub(crate) kind: Kind,
    /// How many more times it applies; `None` for always.
    pub(crate) remaining: Option<u64>,
}

impl fmt::Debug for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Fault");
        s.field("kind", &self.kind.name());
        match &self.kind {
            Kind::Delay(d, t) => s.field("direction", d).field("delay", t),
            Kind::DropAfter(n) => s.field("messages", n),
            Kind::Corrupt(d) | Kind::StopReading(d) => s.field("direction", d),
            Kind::OversizedFrame(d, n) => s.field("direction", d).field("size", n),
            _ => &mut s,
        };
        s.field("remaining", &self.remaining).finish()
    }
}

impl Fault {
    fn once(kind: Kind) -> Fault {
        Fault {
            kind,
            remaining: Some(1),
        }
    }

    fn always_(kind: Kind) -> Fault {
        Fault {
            kind,
            remaining: None,
        }
    }

    /// Delays every frame travelling in `direction` by `delay` (frames stay in order, so later frames wait
    /// too). Applies until cleared.
    #[must_use]
    pub fn delay(direction: Direction, delay: Duration) -> Fault {
        Fault::always_(Kind::Delay(direction, delay))
    }

    /// Drops the connection right after `messages` more frames have been forwarded, in either direction: both
    /// sides see the end of the stream once the frames already on their way are written, and nothing more is
    /// forwarded. `drop_after(0)` drops it at the next frame, without forwarding that frame.
    #[must_use]
    pub fn drop_after(messages: u64) -> Fault {
        Fault::once(Kind::DropAfter(messages))
    }

    /// Replaces the body of the next frame travelling in `direction` with bytes that are not JSON (same length).
    #[must_use]
    pub fn corrupt_next(direction: Direction) -> Fault {
        Fault::once(Kind::Corrupt(direction))
    }

    /// Gives the next response from the mod a fresh random id instead of its request's (the nil id of an
    /// answer to an unreadable frame is left alone).
    #[must_use]
    pub fn wrong_response_id() -> Fault {
        Fault::once(Kind::WrongResponseId)
    }

    /// Sends the bridge, at once, a success response whose id matches no request.
    #[must_use]
    pub fn unsolicited_response() -> Fault {
        Fault::once(Kind::UnsolicitedResponse)
    }

    /// Skips one `seq` value on the channel of the next event: that event and every later one on its channel
    /// arrive numbered one higher, so the bridge sees a gap.
    #[must_use]
    pub fn skip_event_seq() -> Fault {
        Fault::once(Kind::SkipEventSeq)
    }

    /// Stops reading the frames travelling in `direction` (a slow consumer: for
    /// [`Direction::ModToBridge`] the mod's writes back up as if the bridge stopped reading). Applies until
    /// [`Faults::resume_reading`] or [`Faults::clear`].
    #[must_use]
    pub fn stop_reading(direction: Direction) -> Fault {
        Fault::always_(Kind::StopReading(direction))
    }

    /// Sends, at once, a frame whose body is `size` bytes in `direction`: towards the mod a `session/ping`
    /// padded with spaces (a mod over its limit must refuse it with -32600 and the nil id), towards the bridge
    /// `{}` padded with spaces.
    #[must_use]
    pub fn oversized_frame(direction: Direction, size: usize) -> Fault {
        Fault::once(Kind::OversizedFrame(direction, size))
    }

    /// Makes the mod accept any token: every `session/hello` reaches it carrying `token`, the right one.
    /// Applies until cleared.
    #[must_use]
    pub fn accept_any_token(token: Token) -> Fault {
        Fault::always_(Kind::AcceptAnyToken(token))
    }

    /// Makes the mod answer requests before `session/hello`: the proxy authenticates with `token` (the right
    /// one) as soon as a connection opens and answers the bridge's own hello itself (the cached welcome for
    /// the right token, -32101 and close otherwise). Applies to connections opened after it is injected.
    #[must_use]
    pub fn answer_before_hello(token: Token) -> Fault {
        Fault::always_(Kind::AnswerBeforeHello(token))
    }

    /// Adds an envelope member no message type defines (`"extra": true`) to every message from the mod.
    /// Applies until cleared.
    #[must_use]
    pub fn unknown_envelope_field() -> Fault {
        Fault::always_(Kind::UnknownEnvelopeField)
    }

    /// Makes the mod stall on a malformed header from the bridge: instead of answering and closing, the
    /// connection stays open and silent until the bridge closes it. Applies until cleared.
    #[must_use]
    pub fn stall_on_malformed_header() -> Fault {
        Fault::always_(Kind::StallOnMalformedHeader)
    }

    /// Makes the mod execute frames over its size limit: every JSON body from the bridge is re-encoded
    /// compactly, so a request padded past the limit reaches the mod within it. Applies until cleared.
    #[must_use]
    pub fn execute_oversized() -> Fault {
        Fault::always_(Kind::ExecuteOversized)
    }

    /// Makes the mod count `Content-Length` in characters instead of bytes, as Lib.GAB 1.0.3 does: a body from
    /// the bridge with non-ASCII UTF-8 is never complete, so that frame and every later one on the connection
    /// are swallowed. Applies until cleared.
    #[must_use]
    pub fn stall_on_non_ascii() -> Fault {
        Fault::always_(Kind::StallOnNonAscii)
    }

    /// Makes the mod stall on a header block without `Content-Length` from the bridge (other malformed
    /// headers are handled as before): the connection stays open and silent. Applies until cleared.
    #[must_use]
    pub fn stall_on_missing_length() -> Fault {
        Fault::always_(Kind::StallOnMissingLength)
    }

    /// Rewrites the registry's codes the way Lib.GAB 1.0.3 writes them, on every error from the mod: -32101
    /// becomes -31000, -32100 becomes -31001 and -32400 becomes -31002. Applies until cleared.
    #[must_use]
    pub fn unregistered_error_codes() -> Fault {
        Fault::always_(Kind::UnregisteredErrorCodes)
    }

    /// Writes the answers to concurrent requests interleaved in pairs, header, header, body, body, as a mod does
    /// that writes header and body separately without a lock: an answer while other requests are in flight
    /// waits for the next (at most 500 ms). Applies until cleared.
    #[must_use]
    pub fn interleave_answers() -> Fault {
        Fault::always_(Kind::InterleaveAnswers)
    }

    /// Adds the missing member as `null` to every response from the mod (`"error": null` beside a `result`,
    /// `"result": null` beside an `error`), as Lib.GAB 1.0.3 writes them. Applies until cleared.
    #[must_use]
    pub fn null_beside_other() -> Fault {
        Fault::always_(Kind::NullBesideOther)
    }

    /// Makes the mod do only what upstream GABP 1.x asks where gabp-rs asks for more, as Lib.GAB 1.0.3 does:
    /// its welcome lists neither `session/ping` nor `session/goodbye` and has no `capabilities.limits`, and a
    /// wrong token is refused without closing the connection. Applies until cleared.
    #[must_use]
    pub fn upstream_minimum() -> Fault {
        Fault::always_(Kind::UpstreamMinimum)
    }

    /// Makes the mod take input it must refuse (SPEC/1.0 extensions.md §input): an `input/*` request whose
    /// params its method refuses (an unknown key name, say) reaches the mod as a harmless valid one (a release of
    /// `ShiftLeft`, the text `x`, a release of the left button), and is answered `{}`. Applies until cleared.
    #[must_use]
    pub fn unchecked_input() -> Fault {
        Fault::always_(Kind::UncheckedInput)
    }

    /// Makes the mod take actions outside its action space (SPEC/1.0 extensions.md §env): its -32602 refusal
    /// of an `env/step` action is answered as a step instead. Applies until cleared.
    #[must_use]
    pub fn unchecked_actions() -> Fault {
        Fault::always_(Kind::UncheckedActions)
    }

    /// Applies `n` times instead of the default.
    #[must_use]
    pub fn times(mut self, n: u64) -> Fault {
        self.remaining = Some(n);
        self
    }

    /// Applies until cleared instead of the default.
    #[must_use]
    pub fn always(mut self) -> Fault {
        self.remaining = None;
        self
    }

    /// A short name of the fault, such as `corrupt` or `skip event seq`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }
}

#[derive(Default)]
struct State {
    active: Vec<Fault>,
    injections: VecDeque<Kind>,
}

struct Inner {
    state: Mutex<State>,
    changed: watch::Sender<u64>,
}

/// The faults armed on a [`FaultProxy`](crate::FaultProxy), shared by all its connections. Cheap to clone.
///
/// ```
/// use gabp_testkit::{Direction, Fault, Faults};
///
/// let faults = Faults::new();
/// faults.inject(Fault::stop_reading(Direction::ModToBridge));
/// assert_eq!(faults.active().len(), 1);
/// faults.resume_reading();
/// assert!(faults.active().is_empty());
/// ```
#[derive(Clone)]
pub struct Faults {
    inner: Arc<Inner>,
}

impl Default for Faults {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("active", &self.active())
            .finish_non_exhaustive()
    }
}

impl Faults {
    /// No faults.
    #[must_use]
    pub fn new() -> Self {
        let (changed, _) = watch::channel(0);
        Faults {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                changed,
            }),
        }
    }

    fn notify(&self) {
        self.inner.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Arms `fault`. Faults that send something ([`Fault::unsolicited_response`], [`Fault::oversized_frame`])
    /// do so at once on a live connection, or on the next one to open.
    pub fn inject(&self, fault: Fault) {
        {
            let mut state = self.inner.state.lock();
            if fault.kind.is_injection() {
                let n = fault.remaining.unwrap_or(1);
                for _ in 0..n {
                    state.injections.push_back(fault.kind.clone());
                }
            } else if fault.remaining != Some(0) {
                state.active.push(fault);
            }
        }
        self.notify();
    }

    /// Disarms every fault (reading resumes).
    pub fn clear(&self) {
        {
            let mut state = self.inner.state.lock();
            state.active.clear();
            state.injections.clear();
        }
        self.notify();
    }

    /// Disarms every [`Fault::stop_reading`].
    pub fn resume_reading(&self) {
        self.inner
            .state
            .lock()
            .active
            .retain(|f| !matches!(f.kind, Kind::StopReading(_)));
        self.notify();
    }

    /// The faults still armed (faults that applied as often as they were told to are gone).
    #[must_use]
    pub fn active(&self) -> Vec<Fault> {
        self.inner.state.lock().active.clone()
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// Uses the first armed fault `pick` accepts, once; returns what `pick` made of it.
    pub(crate) fn take<T>(&self, mut pick: impl FnMut(&Kind) -> Option<T>) -> Option<T> {
        let mut state = self.inner.state.lock();
        let index = state.active.iter().position(|f| pick(&f.kind).is_some())?;
        let out = pick(&state.active[index].kind);
        let fault = &mut state.active[index];
        if let Some(n) = fault.remaining.as_mut() {
            *n = n.saturating_sub(1);
            if *n == 0 {
                state.active.remove(index);
            }
        }
        out
    }

    /// Looks at the first armed fault `pick` accepts without using it up.
    pub(crate) fn peek<T>(&self, mut pick: impl FnMut(&Kind) -> Option<T>) -> Option<T> {
        self.inner
            .state
            .lock()
            .active
            .iter()
            .find_map(|f| pick(&f.kind))
    }

    /// Counts one forwarded frame against an armed [`Fault::drop_after`]; true when the connection must drop
    /// now.
    pub(crate) fn count_message(&self) -> bool {
        let mut state = self.inner.state.lock();
        let Some(index) = state
            .active
            .iter()
            .position(|f| matches!(f.kind, Kind::DropAfter(_)))
        else {
            return false;
        };
        let Kind::DropAfter(n) = &mut state.active[index].kind else {
            return false;
        };
        if *n <= 1 {
            state.active.remove(index);
            true
        } else {
            *n -= 1;
            false
        }
    }

    /// Whether an armed [`Fault::drop_after`] says to drop before forwarding anything more.
    pub(crate) fn drop_now(&self) -> bool {
        let mut state = self.inner.state.lock();
        let Some(index) = state
            .active
            .iter()
            .position(|f| matches!(f.kind, Kind::DropAfter(0)))
        else {
            return false;
        };
        state.active.remove(index);
        true
    }

    pub(crate) fn take_injections(&self) -> Vec<Kind> {
        self.inner.state.lock().injections.drain(..).collect()
    }

    pub(crate) fn reading_stopped(&self, direction: Direction) -> bool {
        self.peek(|k| matches!(k, Kind::StopReading(d) if *d == direction).then_some(()))
            .is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_apply_as_often_as_told() {
        let faults = Faults::new();
        faults.inject(Fault::wrong_response_id().times(2));
        let wrong = |k: &Kind| matches!(k, Kind::WrongResponseId).then_some(());
        assert!(faults.take(wrong).is_some());
        assert!(faults.take(wrong).is_some());
        assert!(faults.take(wrong).is_none());

        faults.inject(Fault::skip_event_seq().always());
        let skip = |k: &Kind| matches!(k, Kind::SkipEventSeq).then_some(());
        for _ in 0..5 {
            assert!(faults.take(skip).is_some());
        }
        faults.clear();
        assert!(faults.take(skip).is_none());
    }

    #[test]
    fn drop_after_counts_forwarded_frames() {
        let faults = Faults::new();
        faults.inject(Fault::drop_after(3));
        assert!(!faults.drop_now());
        assert!(!faults.count_message());
        assert!(!faults.count_message());
        assert!(faults.count_message());
        assert!(faults.active().is_empty());

        faults.inject(Fault::drop_after(0));
        assert!(faults.drop_now());
    }

    #[test]
    fn injections_wait_for_a_connection_and_reading_can_resume() {
        let faults = Faults::new();
        faults.inject(Fault::unsolicited_response().times(2));
        faults.inject(Fault::oversized_frame(Direction::BridgeToMod, 2048));
        assert_eq!(faults.take_injections().len(), 3);
        assert!(faults.take_injections().is_empty());

        faults.inject(Fault::stop_reading(Direction::ModToBridge));
        assert!(faults.reading_stopped(Direction::ModToBridge));
        assert!(!faults.reading_stopped(Direction::BridgeToMod));
        faults.resume_reading();
        assert!(!faults.reading_stopped(Direction::ModToBridge));
    }

    #[test]
    fn debug_never_shows_a_token() {
        let token = Token::new("0123456789abcdef0123456789abcdef").expect("token");
        let shown = format!("{:?}", Fault::accept_any_token(token));
        assert!(!shown.contains("0123456789abcdef"), "{shown}");
        assert!(shown.contains("accept any token"));
    }
}
