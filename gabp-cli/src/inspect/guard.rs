//! Who may use the inspector: requests under `/s/SECRET/` (compared in constant time), whose `Host` is the
//! server's loopback address and whose `Origin`, when sent, is the page's own.

use std::net::SocketAddr;

use axum::http::{header, HeaderMap, StatusCode, Uri};
use gabp_transport::Token;
use subtle::ConstantTimeEq;

/// The secret of this run and the addresses the page is served at.
#[derive(Clone)]
pub struct Guard {
    secret: Token,
    hosts: Vec<String>,
}

impl Guard {
    /// A guard for `secret`, serving at `address`.
    pub fn new(secret: Token, address: SocketAddr) -> Self {
        let port = address.port();
        let hosts = vec![address.to_string(), format!("localhost:{port}")];
        Guard { secret, hosts }
    }

    /// The path and query of `uri` without the `/s/SECRET` prefix (empty for `/s/SECRET` itself, which the
    /// page is not relative to), or the status that refuses the request:
    /// 404 without the right secret (nothing tells a wrong secret from no page), 403 for a foreign `Host` or
    /// `Origin`.
    pub fn admit(&self, uri: &Uri, headers: &HeaderMap) -> Result<String, StatusCode> {
        let path = uri.path();
        let rest = path.strip_prefix("/s/").ok_or(StatusCode::NOT_FOUND)?;
        let (given, inner) = match rest.find('/') {
            Some(slash) => rest.split_at(slash),
            None => (rest, ""),
        };
        let expected = self.secret.expose_secret().as_bytes();
        if !bool::from(given.as_bytes().ct_eq(expected)) {
            return Err(StatusCode::NOT_FOUND);
        }
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        if !self.hosts.iter().any(|h| h == host) {
            return Err(StatusCode::FORBIDDEN);
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let own = origin
                .to_str()
                .ok()
                .and_then(|o| o.strip_prefix("http://"))
                .is_some_and(|o| self.hosts.iter().any(|h| h == o));
            if !own {
                return Err(StatusCode::FORBIDDEN);
            }
        }
        if inner.is_empty() {
            return Ok(String::new());
        }
        Ok(match uri.query() {
            Some(query) => format!("{inner}?{query}"),
            None => inner.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const SECRET: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn guard() -> Guard {
        Guard::new(
            Token::new(SECRET).unwrap(),
            "127.0.0.1:4000".parse().unwrap(),
        )
    }

    fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        }
        headers
    }

    fn admit(path: &str, host: &str, origin: Option<&str>) -> Result<String, StatusCode> {
        guard().admit(&path.parse().unwrap(), &headers(host, origin))
    }

    #[test]
    fn the_secret_opens_the_page_and_the_api() {
        let host = "127.0.0.1:4000";
        assert_eq!(admit(&format!("/s/{SECRET}/"), host, None).unwrap(), "/");
        assert_eq!(admit(&format!("/s/{SECRET}"), host, None).unwrap(), "");
        assert_eq!(
            admit(&format!("/s/{SECRET}/api/tools?x=1"), host, None).unwrap(),
            "/api/tools?x=1"
        );
        let same = Some("http://localhost:4000");
        assert!(admit(&format!("/s/{SECRET}/api/tools"), "localhost:4000", same).is_ok());
    }

    #[test]
    fn without_the_secret_there_is_nothing() {
        let host = "127.0.0.1:4000";
        for path in [
            "/",
            "/api/tools",
            "/s/",
            "/s/wrong/api/tools",
            &format!("/s/{}/", &SECRET[..63]),
            &format!("/s/{SECRET}0/"),
        ] {
            assert_eq!(
                admit(path, host, None),
                Err(StatusCode::NOT_FOUND),
                "{path}"
            );
        }
    }

    #[test]
    fn a_foreign_origin_or_host_is_refused() {
        let path = format!("/s/{SECRET}/api/call");
        for (host, origin) in [
            ("127.0.0.1:4000", Some("http://evil.example")),
            ("127.0.0.1:4000", Some("http://127.0.0.1:4001")),
            ("127.0.0.1:4000", Some("https://127.0.0.1:4000")),
            ("127.0.0.1:4000", Some("null")),
            ("evil.example:4000", None),
            ("", None),
        ] {
            assert_eq!(
                admit(&path, host, origin),
                Err(StatusCode::FORBIDDEN),
                "{host} {origin:?}"
            );
        }
    }
}
