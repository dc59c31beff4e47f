//! The session secret a bridge presents in `session/hello`: [`Token`].

use std::fmt;

use subtle::ConstantTimeEq;

use crate::error::TransportError;

/// How many random bytes [`Token::generate`] draws: 256 bits.
const TOKEN_BYTES: usize = 32;

/// A GABP session token: the shared secret a bridge sends in `session/hello`.
///
/// - [`Token::generate`] draws 256 bits from the operating system's CSPRNG and writes them as 64
///   lower-case hex digits (SPEC/1.0/security.md §3).
/// - Equality ([`PartialEq`] and [`Token::verify`]) is constant-time in the token's contents
///   (SPEC/1.0/security.md §2); only the length can show through timing.
/// - [`Debug`](fmt::Debug) and [`Display`](fmt::Display) never print the secret, so a token can
///   sit in a struct that is logged; [`Token::expose_secret`] is the one way to read it, for the
///   `session/hello` params and for `bridge.json`.
///
/// ```
/// use gabp_transport::Token;
///
/// let token = Token::generate()?;
/// assert_eq!(token.expose_secret().len(), 64);
/// assert!(token.verify(token.expose_secret()));
/// assert!(!format!("{token} {token:?}").contains(token.expose_secret()));
/// # Ok::<(), gabp_transport::TransportError>(())
/// ```
#[derive(Clone)]
pub struct Token {
    secret: String,
}

impl Token {
    /// A fresh token: 256 bits from the OS CSPRNG, as 64 lower-case hex digits.
    ///
    /// # Errors
    ///
    /// [`TransportError::TokenGeneration`] if the operating system's random source fails.
    pub fn generate() -> Result<Self, TransportError> {
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| TransportError::TokenGeneration(e.to_string()))?;
        let secret = to_hex(&bytes);
        bytes.fill(0);
        Ok(Token { secret })
    }

    /// A token with the given secret, as read from configuration or the environment.
    ///
    /// Any non-blank string is accepted (other bridges make their own tokens); the value is used
    /// verbatim, surrounding whitespace included.
    ///
    /// # Errors
    ///
    /// [`TransportError::EmptyToken`] for an empty or all-whitespace secret. The error never contains the
    /// secret.
    pub fn new(secret: impl Into<String>) -> Result<Self, TransportError> {
        let secret = secret.into();
        if secret.trim().is_empty() {
            return Err(TransportError::EmptyToken);
        }
        Ok(Token { secret })
    }

    /// The secret itself. Call it only to put the token on the wire or in `bridge.json`.
    #[must_use]
    pub fn expose_secret(&self) -> &str {
        &self.secret
    }

    /// Whether `candidate` is this token, compared in constant time.
    ///
    /// The comparison takes the same time for every candidate of the token's length; a candidate
    /// of another length is rejected at once (the length of a token is not secret: generated
    /// tokens are always 64 characters).
    #[must_use]
    pub fn verify(&self, candidate: &str) -> bool {
        self.secret.as_bytes().ct_eq(candidate.as_bytes()).into()
    }
}

impl PartialEq for Token {
    fn eq(&self, other: &Self) -> bool {
        self.verify(&other.secret)
    }
}

impl Eq for Token {}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted token>")
    }
}

/// Lower-case hex of `bytes`.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_64_lower_hex_and_distinct() {
        let a = Token::generate().expect("random");
        let b = Token::generate().expect("random");
        for t in [&a, &b] {
            assert_eq!(t.expose_secret().len(), 64);
            assert!(t
                .expose_secret()
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
        }
        assert_ne!(a, b);
    }

    #[test]
    fn verify_accepts_only_the_same_secret() {
        let t = Token::new("s3cret").expect("token");
        assert!(t.verify("s3cret"));
        assert!(!t.verify("s3creT"));
        assert!(!t.verify("s3cre"));
        assert!(!t.verify("s3crett"));
        assert!(!t.verify(""));
        assert_eq!(t, Token::new("s3cret").expect("token"));
        assert_ne!(t, Token::new("other!").expect("token"));
    }

    #[test]
    fn never_printed() {
        let t = Token::new("do-not-print-me-0123456789").expect("token");
        for shown in [
            format!("{t}"),
            format!("{t:?}"),
            format!("{t:#?}"),
            format!("{:?}", Some(&t)),
        ] {
            assert!(!shown.contains("do-not-print-me"), "{shown}");
            assert!(!shown.contains("0123456789"), "{shown}");
        }
    }

    #[test]
    fn mixed_case_tokens_are_compared_exactly_and_never_printed() {
        let secret = "MiXeD-CaSe-ToKeN-0123456789-aBcDeF-SeCrEt";
        let t = Token::new(secret).expect("token");
        assert!(!t.verify(&secret.to_lowercase()) && !t.verify(&secret.to_uppercase()));
        let refused = Token::new(" ").expect_err("blank");
        let shown = format!("{t} {t:?} {refused} {refused:?}").to_lowercase();
        let runs: Vec<char> = secret.to_lowercase().chars().collect();
        for run in runs.windows(6) {
            let run: String = run.iter().collect();
            assert!(!shown.contains(&run), "{shown}");
        }
    }

    #[test]
    fn empty_and_blank_are_refused() {
        assert!(matches!(Token::new(""), Err(TransportError::EmptyToken)));
        assert!(matches!(
            Token::new(" \t\n"),
            Err(TransportError::EmptyToken)
        ));
    }

    #[test]
    fn hex_is_lower_case() {
        assert_eq!(to_hex(&[0x00, 0xab, 0xff, 0x10]), "00abff10");
    }
}
