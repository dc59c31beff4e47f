//! A peer that broke the framing (SPEC/1.0 transport.md §1.2, §7): what the engine answers, and what it reports.

use gabp_transport::CodecError;
use gabp_types::{ErrorCode, ErrorObject, MessageId, Response};

use super::{Ended, Engine, Read, Role};

impl<P: Role> Engine<P> {
    /// Stops reading after a framing error (never an i/o error). The fault says where the broken frame starts
    /// and which header was seen, so that a peer's bug (a length in UTF-16 code units, interleaved frames) shows.
    pub(super) fn on_frame_error(&mut self, error: &CodecError) -> Read<P::Reason> {
        let fault = self.reader.codec().fault(error);
        tracing::warn!(%fault, "fatal framing error; closing");
        // §7: a bad header gets a best-effort -32700; end of input inside a frame gets nothing.
        if self.peer.answers_bad_frames() && !error.is_truncated() {
            let message = format!("unreadable frame: {error}");
            let answer = Response::error(
                MessageId::nil(),
                ErrorObject::new(ErrorCode::PARSE_ERROR, message),
            );
            self.push_answer(answer);
        }
        self.peer.on_framing(&fault);
        self.stop_reading(Ended::Framing(fault));
        Read::Progress
    }
}
