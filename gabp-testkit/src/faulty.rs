//! [`FaultyMod`]: mods that break one protocol rule each, for testing conformance runners and bridges.

use std::fmt;

use gabp_session::server::ServeHandle;
use gabp_transport::{ByteStream, Token};

use crate::conformance::Target;
use crate::fault::Fault;
use crate::mock::MockMod;
use crate::proxy::{FaultProxy, ProxyHandle};
use crate::TestkitError;

/// A mod that breaks one rule of the protocol: [`MockMod::demo`] behind a [`FaultProxy`] armed with one
/// fault, for good. Everything else it does is conformant, so the conformance suite fails exactly where the
/// fault is ([`FaultyMod::caught_by`]).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gabp_testkit::{conformance, FaultyMod};
///
/// let faulty = FaultyMod::AcceptsAnyToken.build()?;
/// let report = conformance::run(&faulty.conformance_target()).await;
/// let failed: Vec<&str> = report.failures().map(|c| c.name).collect();
/// assert_eq!(failed, ["auth.wrong_token_refused"]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FaultyMod {
    /// Accepts any token in `session/hello` ([`Fault::accept_any_token`]).
    AcceptsAnyToken,
    /// Serves requests before `session/hello` ([`Fault::answer_before_hello`]).
    AnswersBeforeHello,
    /// Answers every request with a fresh id instead of the request's ([`Fault::wrong_response_id`], always).
    WrongResponseIds,
    /// Skips a `seq` value before every event ([`Fault::skip_event_seq`], always).
    SkipsEventSeq,
    /// Adds an envelope member no message type defines to every message ([`Fault::unknown_envelope_field`]).
    UnknownEnvelopeFields,
    /// Neither answers nor closes after a malformed header ([`Fault::stall_on_malformed_header`]).
    StallsOnMalformedHeader,
    /// Executes a request over its size limit instead of refusing it ([`Fault::execute_oversized`]).
    ExecutesOversizedFrames,
    /// Counts `Content-Length` in characters and stalls on a body with non-ASCII UTF-8, as Lib.GAB 1.0.3 does
    /// ([`Fault::stall_on_non_ascii`]).
    CountsCharacters,
    /// Stalls on a header block without `Content-Length`, as Lib.GAB 1.0.3 does
    /// ([`Fault::stall_on_missing_length`]).
    StallsWithoutContentLength,
    /// Answers with Lib.GAB 1.0.3's codes -31000, -31001 and -31002 where the registry has -32101, -32100 and
    /// -32400 ([`Fault::unregistered_error_codes`]).
    UnregisteredErrorCodes,
    /// Writes the header and body of answers that follow each other closely interleaved
    /// ([`Fault::interleave_answers`]).
    InterleavesAnswers,
    /// Writes both `result` and `error` in every response, the one it does not use `null`, as Lib.GAB 1.0.3
    /// does ([`Fault::null_beside_other`]).
    WritesBothMembers,
    /// Does only what upstream GABP 1.x asks where gabp-rs asks for more ([`Fault::upstream_minimum`]): it
    /// passes the upstream profile and fails the gabp-rs one.
    UpstreamMinimum,
    /// Takes input it must refuse, such as unknown key names ([`Fault::unchecked_input`]).
    TakesUnknownKeys,
    /// Takes actions outside its action space ([`Fault::unchecked_actions`]).
    TakesActionsOutsideTheSpace,
}

impl FaultyMod {
    /// Every faulty mod.
    pub const ALL: [FaultyMod; 15] = [
        FaultyMod::AcceptsAnyToken,
        FaultyMod::AnswersBeforeHello,
        FaultyMod::WrongResponseIds,
        FaultyMod::SkipsEventSeq,
        FaultyMod::UnknownEnvelopeFields,
        FaultyMod::StallsOnMalformedHeader,
        FaultyMod::ExecutesOversizedFrames,
        FaultyMod::CountsCharacters,
        FaultyMod::StallsWithoutContentLength,
        FaultyMod::UnregisteredErrorCodes,
        FaultyMod::InterleavesAnswers,
        FaultyMod::WritesBothMembers,
        FaultyMod::UpstreamMinimum,
        FaultyMod::TakesUnknownKeys,
        FaultyMod::TakesActionsOutsideTheSpace,
    ];

    /// What is wrong with it, in words.
    #[must_use]
    pub fn description(self) -> &'static str {
        match self {
            FaultyMod::AcceptsAnyToken => "accepts any token",
            FaultyMod::AnswersBeforeHello => "answers requests before session/hello",
            FaultyMod::WrongResponseIds => "answers with wrong ids",
            FaultyMod::SkipsEventSeq => "skips event seq values",
            FaultyMod::UnknownEnvelopeFields => "adds unknown envelope fields",
            FaultyMod::StallsOnMalformedHeader => "stalls on a malformed header",
            FaultyMod::ExecutesOversizedFrames => {
                "executes an oversized frame instead of refusing it"
            }
            FaultyMod::CountsCharacters => "counts Content-Length in characters",
            FaultyMod::StallsWithoutContentLength => "stalls on a header without Content-Length",
            FaultyMod::UnregisteredErrorCodes => "answers with codes outside the registry",
            FaultyMod::InterleavesAnswers => "interleaves the frames of its answers",
            FaultyMod::WritesBothMembers => "writes both result and error",
            FaultyMod::UpstreamMinimum => "does only what upstream asks",
            FaultyMod::TakesUnknownKeys => "takes unknown key names",
            FaultyMod::TakesActionsOutsideTheSpace => "takes actions outside its action space",
        }
    }

    /// The conformance check written to catch it (the first of [`FaultyMod::fails`]).
    #[must_use]
    pub fn caught_by(self) -> &'static str {
        self.fails()[0]
    }

    /// Every check it fails with the default profile, in run order after the one written to catch it: a
    /// fault can break several checks' rules at once (a code outside the registry fails each check that
    /// expects the registry's code).
    #[must_use]
    pub fn fails(self) -> &'static [&'static str] {
        match self {
            FaultyMod::CountsCharacters => &["framing.utf8_byte_length"],
            FaultyMod::StallsWithoutContentLength => &["framing.no_content_length"],
            FaultyMod::UnregisteredErrorCodes => &[
                "errors.tool_not_found",
                "auth.hello_required",
                "auth.wrong_token_refused",
            ],
            FaultyMod::InterleavesAnswers => &[
                "framing.answers_whole",
                "framing.coalesced_frames",
                "extensions.cancel",
                "responses.ids_match",
                "envelope.strictly_valid",
            ],
            FaultyMod::WritesBothMembers => {
                &["responses.one_of_result_error", "envelope.strictly_valid"]
            }
            FaultyMod::UpstreamMinimum => &[
                "handshake.welcome_valid",
                "auth.wrong_token_refused",
                "limits.advertised",
            ],
            FaultyMod::AcceptsAnyToken => &["auth.wrong_token_refused"],
            FaultyMod::AnswersBeforeHello => &["auth.hello_required"],
            FaultyMod::WrongResponseIds => &["responses.ids_match"],
            FaultyMod::SkipsEventSeq => &["events.seq_contiguous"],
            FaultyMod::UnknownEnvelopeFields => &["envelope.strictly_valid"],
            FaultyMod::StallsOnMalformedHeader => &["framing.bad_header_closed"],
            FaultyMod::ExecutesOversizedFrames => &["framing.oversized_refused"],
            FaultyMod::TakesUnknownKeys => &["extensions.input"],
            FaultyMod::TakesActionsOutsideTheSpace => &["extensions.env"],
        }
    }

    /// The fault that makes a mod whose token is `token` behave this way.
    #[must_use]
    pub fn fault(self, token: &Token) -> Fault {
        match self {
            FaultyMod::AcceptsAnyToken => Fault::accept_any_token(token.clone()),
            FaultyMod::AnswersBeforeHello => Fault::answer_before_hello(token.clone()),
            FaultyMod::WrongResponseIds => Fault::wrong_response_id().always(),
            FaultyMod::SkipsEventSeq => Fault::skip_event_seq().always(),
            FaultyMod::UnknownEnvelopeFields => Fault::unknown_envelope_field(),
            FaultyMod::StallsOnMalformedHeader => Fault::stall_on_malformed_header(),
            FaultyMod::ExecutesOversizedFrames => Fault::execute_oversized(),
            FaultyMod::CountsCharacters => Fault::stall_on_non_ascii(),
            FaultyMod::StallsWithoutContentLength => Fault::stall_on_missing_length(),
            FaultyMod::UnregisteredErrorCodes => Fault::unregistered_error_codes(),
            FaultyMod::InterleavesAnswers => Fault::interleave_answers(),
            FaultyMod::WritesBothMembers => Fault::null_beside_other(),
            FaultyMod::UpstreamMinimum => Fault::upstream_minimum(),
            FaultyMod::TakesUnknownKeys => Fault::unchecked_input(),
            FaultyMod::TakesActionsOutsideTheSpace => Fault::unchecked_actions(),
        }
    }

    /// Builds the faulty mod.
    ///
    /// # Errors
    ///
    /// As [`MockMod::demo`].
    pub fn build(self) -> Result<FaultyModServer, TestkitError> {
        let mock = MockMod::demo()?;
        let proxy = FaultProxy::new();
        proxy.faults().inject(self.fault(mock.token()));
        Ok(FaultyModServer {
            kind: self,
            mock,
            proxy,
        })
    }
}

impl fmt::Display for FaultyMod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// A built [`FaultyMod`]: the mock and the proxy that breaks it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FaultyModServer {
    /// Which rule it breaks.
    pub kind: FaultyMod,
    /// The conformant mock behind the proxy.
    pub mock: MockMod,
    /// The proxy armed with the fault; its recorder sees every frame.
    pub proxy: FaultProxy,
}

impl FaultyModServer {
    /// The token bridges must present.
    #[must_use]
    pub fn token(&self) -> &Token {
        self.mock.token()
    }

    /// Opens a new in-memory connection to the faulty mod and returns the bridge's end.
    #[must_use]
    pub fn connect_in_memory(&self) -> ByteStream {
        self.proxy.link(self.mock.serve_in_memory().0)
    }

    /// The conformance suite's target: each connection is a new in-memory connection through the proxy.
    #[must_use]
    pub fn conformance_target(&self) -> Target {
        let this = self.clone();
        Target::in_memory(self.token().clone(), move || this.connect_in_memory())
    }

    /// Serves the faulty mod on loopback TCP: the mock on one port, the proxy in front of it on another.
    /// Bridges connect to [`ProxyHandle::endpoint`].
    ///
    /// # Errors
    ///
    /// [`TestkitError::Transport`] when a port cannot be bound.
    pub async fn serve_tcp(&self) -> Result<(ServeHandle, ProxyHandle), TestkitError> {
        let served = self.mock.serve_tcp().await?;
        let proxy = self.proxy.listen(served.endpoint().clone()).await?;
        Ok((served, proxy))
    }
}
