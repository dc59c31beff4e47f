//! What `bridge.json` says, field by field, and the JSON text it is written as
//! (SPEC/1.0/transport.md §4.2).

use std::path::PathBuf;

use gabp_types::{without_json_position, BridgeMetadata};
use serde_json::{Map, Value};

use super::error::field_error;
use super::BridgeConfig;
use crate::endpoint::Endpoint;
use crate::error::TransportError;
use crate::token::Token;

impl BridgeConfig {
    /// Parse the contents of a `bridge.json`.
    ///
    /// # Errors
    ///
    /// As [`BridgeConfig::read`], without the file-system errors; the path in the error is empty.
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self, TransportError> {
        // Parse to a tree first: serde_json's syntax errors never quote the input, so nothing
        // secret can end up in an error message; every field is then checked by hand.
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| TransportError::BridgeJsonSyntax {
                path: PathBuf::new(),
                line: e.line(),
                column: e.column(),
                message: json_error_kind(&e),
            })?;
        let obj = value
            .as_object()
            .ok_or_else(|| field_error("(top level)", "must be a JSON object"))?;

        let token = match obj.get("token") {
            None => return Err(field_error("token", "is missing")),
            Some(Value::String(s)) => Token::new(s.clone()).map_err(|e| match e {
                TransportError::EmptyToken => field_error("token", "is empty"),
                other => field_error("token", other.to_string()),
            })?,
            Some(_) => return Err(field_error("token", "must be a string")),
        };

        // No field error quotes a value: any may be the token pasted into the wrong field, in any
        // case or in part (SPEC/1.0 security.md §6).
        Self::fields_after_token(obj, token)
    }

    fn fields_after_token(obj: &Map<String, Value>, token: Token) -> Result<Self, TransportError> {
        let transport = match obj.get("transport") {
            None => return Err(field_error("transport", "is missing")),
            Some(Value::Object(t)) => t,
            Some(_) => return Err(field_error("transport", "must be an object")),
        };
        let endpoint = read_transport(transport)?;

        let metadata = match obj.get("metadata") {
            None | Some(Value::Null) => BridgeMetadata::default(),
            Some(Value::Object(m)) => read_metadata(m)?,
            Some(_) => return Err(field_error("metadata", "must be an object")),
        };

        Ok(BridgeConfig {
            token,
            endpoint,
            metadata,
        })
    }

    /// The JSON text of this configuration, exactly as [`BridgeConfig::write_atomic`] writes it.
    ///
    /// The text contains the secret token: keep it out of logs.
    ///
    /// # Errors
    ///
    /// [`TransportError::BridgeJsonUnwritable`] for an endpoint `bridge.json` cannot express (a non-loopback
    /// hand-built TCP address, a Unix path that is not valid UTF-8).
    pub fn to_json_string(&self) -> Result<String, TransportError> {
        let (kind, address) = match &self.endpoint {
            Endpoint::Tcp(addr) => {
                crate::endpoint::check_loopback(addr)
                    .map_err(|e| TransportError::BridgeJsonUnwritable(e.to_string()))?;
                if addr.ip() == std::net::Ipv4Addr::LOCALHOST {
                    ("tcp", Some(addr.port().to_string()))
                } else {
                    ("tcp", Some(addr.to_string()))
                }
            }
            Endpoint::Unix(path) => {
                let s = path.to_str().ok_or_else(|| {
                    TransportError::BridgeJsonUnwritable(
                        "the unix socket path is not valid UTF-8".into(),
                    )
                })?;
                ("pipe", Some(s.to_owned()))
            }
            Endpoint::Pipe(_) => ("pipe", self.endpoint.pipe_path()),
            Endpoint::Stdio => ("stdio", None),
            Endpoint::WebSocket(addr) => {
                crate::endpoint::check_loopback(addr)
                    .map_err(|e| TransportError::BridgeJsonUnwritable(e.to_string()))?;
                if addr.ip() == std::net::Ipv4Addr::LOCALHOST {
                    ("ws", Some(addr.port().to_string()))
                } else {
                    ("ws", Some(addr.to_string()))
                }
            }
        };
        let file = gabp_types::BridgeFile {
            token: self.token.expose_secret().to_owned(),
            transport: gabp_types::TransportInfo {
                kind: kind.to_owned(),
                address,
            },
            metadata: self.metadata.clone(),
        };
        let mut text = serde_json::to_string_pretty(&file)
            .map_err(|e| TransportError::BridgeJsonUnwritable(json_error_kind(&e)))?;
        text.push('\n');
        Ok(text)
    }
}

/// serde_json's message without the " at line L column C" suffix (we report those separately).
fn json_error_kind(e: &serde_json::Error) -> String {
    without_json_position(&e.to_string()).to_owned()
}

fn read_transport(t: &Map<String, Value>) -> Result<Endpoint, TransportError> {
    let kind = match t.get("type") {
        None => return Err(field_error("transport.type", "is missing")),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(field_error("transport.type", "must be a string")),
    };
    let address = match t.get("address") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        // Liberal: a port written as a JSON number.
        Some(Value::Number(n)) => {
            return match (kind, n.as_u64()) {
                ("tcp", Some(port)) => tcp_from_port(&port.to_string()),
                ("ws", Some(port)) => tcp_from_port(&port.to_string()).map(tcp_to_ws),
                _ => Err(field_error("transport.address", "must be a string")),
            }
        }
        Some(_) => return Err(field_error("transport.address", "must be a string")),
    };
    let need = |what: &str| {
        address
            .filter(|a| !a.is_empty())
            .ok_or_else(|| field_error("transport.address", format!("is required for {what}")))
    };
    let endpoint_error = |e: TransportError| field_error("transport.address", e.endpoint_reason());
    match kind {
        "stdio" => Ok(Endpoint::Stdio),
        "tcp" => {
            let address = need("tcp")?;
            if address.bytes().all(|b| b.is_ascii_digit()) {
                tcp_from_port(address)
            } else if address.starts_with("tcp://") {
                address.parse().map_err(endpoint_error)
            } else {
                format!("tcp://{address}").parse().map_err(endpoint_error)
            }
            .and_then(|ep| match ep {
                Endpoint::Tcp(addr) if addr.port() == 0 => {
                    Err(field_error("transport.address", "has port 0"))
                }
                ep => Ok(ep),
            })
        }
        "ws" => {
            let address = need("ws")?;
            if address.bytes().all(|b| b.is_ascii_digit()) {
                tcp_from_port(address).map(tcp_to_ws)
            } else if address.starts_with("ws://") {
                address.parse().map_err(endpoint_error)
            } else {
                format!("ws://{address}").parse().map_err(endpoint_error)
            }
            .and_then(|ep| match ep {
                Endpoint::WebSocket(addr) if addr.port() == 0 => {
                    Err(field_error("transport.address", "has port 0"))
                }
                Endpoint::WebSocket(_) => Ok(ep),
                _ => Err(field_error("transport.address", "is not a ws address")),
            })
        }
        "pipe" | "unix" => {
            let address = need(kind)?;
            if address.contains("://") {
                let ep: Endpoint = address.parse().map_err(endpoint_error)?;
                return match ep {
                    Endpoint::Unix(_) | Endpoint::Pipe(_) => Ok(ep),
                    _ => Err(field_error(
                        "transport.address",
                        format!("is not a {kind} address"),
                    )),
                };
            }
            if address.starts_with('/') {
                Endpoint::unix(address).map_err(endpoint_error)
            } else if kind == "pipe" {
                if address.starts_with(r"\\.\pipe\") {
                    address.parse().map_err(endpoint_error)
                } else {
                    Endpoint::pipe(address).map_err(endpoint_error)
                }
            } else {
                Endpoint::unix(address).map_err(endpoint_error)
            }
        }
        _ => Err(field_error(
            "transport.type",
            "must be \"tcp\", \"ws\", \"pipe\", \"unix\" or \"stdio\"",
        )),
    }
}

fn tcp_to_ws(endpoint: Endpoint) -> Endpoint {
    match endpoint {
        Endpoint::Tcp(addr) => Endpoint::WebSocket(addr),
        other => other,
    }
}

fn tcp_from_port(port: &str) -> Result<Endpoint, TransportError> {
    match port.parse::<u16>() {
        Ok(0) | Err(_) => Err(field_error(
            "transport.address",
            "is not a TCP port (1-65535)",
        )),
        Ok(port) => Ok(Endpoint::tcp_v4(port)),
    }
}

fn read_metadata(m: &Map<String, Value>) -> Result<BridgeMetadata, TransportError> {
    let pid = match m.get("pid") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|p| u32::try_from(p).ok())
                .ok_or_else(|| field_error("metadata.pid", "must be an integer in 0-4294967295"))?,
        ),
    };
    let string = |field: &'static str, key: &str| match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(field_error(field, "must be a string")),
    };
    Ok(BridgeMetadata {
        pid,
        start_time: string("metadata.startTime", "startTime")?,
        launch_id: string("metadata.launchId", "launchId")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<BridgeConfig, TransportError> {
        BridgeConfig::from_json_slice(s.as_bytes())
    }

    #[test]
    fn reads_upstream_tcp_example() {
        let c = parse(
            r#"{"token":"a1b2c3","transport":{"type":"tcp","address":"38917"},
               "metadata":{"pid":12345,"startTime":"2025-01-02T10:30:00Z","launchId":"session-uuid"}}"#,
        )
        .expect("valid");
        assert_eq!(c.endpoint, Endpoint::tcp_v4(38917));
        assert!(c.token.verify("a1b2c3"));
        assert_eq!(c.metadata.pid, Some(12345));
        assert_eq!(c.metadata.launch_id.as_deref(), Some("session-uuid"));
    }

    #[test]
    fn reads_pipe_and_unix_addresses() {
        let c =
            parse(r#"{"token":"t","transport":{"type":"pipe","address":"\\\\.\\pipe\\gabp-1"}}"#)
                .expect("pipe");
        assert_eq!(c.endpoint, Endpoint::Pipe("gabp-1".into()));
        let c = parse(r#"{"token":"t","transport":{"type":"pipe","address":"/tmp/gabp-1.sock"}}"#)
            .expect("unix as pipe");
        assert_eq!(c.endpoint, Endpoint::Unix("/tmp/gabp-1.sock".into()));
        let c =
            parse(r#"{"token":"t","transport":{"type":"unix","address":"unix:///tmp/g.sock"}}"#)
                .expect("unix url");
        assert_eq!(c.endpoint, Endpoint::Unix("/tmp/g.sock".into()));
        let c = parse(r#"{"token":"t","transport":{"type":"stdio"}}"#).expect("stdio");
        assert_eq!(c.endpoint, Endpoint::Stdio);
        let c =
            parse(r#"{"token":"t","transport":{"type":"tcp","address":"[::1]:9"}}"#).expect("v6");
        assert_eq!(c.endpoint, Endpoint::tcp_v6(9));
        let c = parse(r#"{"token":"t","transport":{"type":"tcp","address":4711}}"#)
            .expect("numeric port");
        assert_eq!(c.endpoint, Endpoint::tcp_v4(4711));
        let ws = |addr: &str| Endpoint::WebSocket(addr.parse().expect("address"));
        for (text, expected) in [
            (r#""4711""#, "127.0.0.1:4711"),
            ("4711", "127.0.0.1:4711"),
            (r#""[::1]:9""#, "[::1]:9"),
            (r#""ws://127.0.0.1:9""#, "127.0.0.1:9"),
        ] {
            let json = format!(r#"{{"token":"t","transport":{{"type":"ws","address":{text}}}}}"#);
            assert_eq!(parse(&json).expect(text).endpoint, ws(expected), "{text}");
        }
        for text in [r#""0""#, r#""10.0.0.2:80""#, r#""tcp://127.0.0.1:9""#] {
            let json = format!(r#"{{"token":"t","transport":{{"type":"ws","address":{text}}}}}"#);
            assert!(parse(&json).is_err(), "{text}");
        }
    }

    #[test]
    fn write_format_round_trips() {
        for ep in [
            Endpoint::tcp_v4(38917),
            Endpoint::tcp_v6(38917),
            Endpoint::WebSocket("127.0.0.1:38917".parse().expect("address")),
            Endpoint::WebSocket("[::1]:38917".parse().expect("address")),
            Endpoint::Unix("/run/user/1000/gabp-x.sock".into()),
            Endpoint::Pipe("gabp-x".into()),
            Endpoint::Stdio,
        ] {
            let c = BridgeConfig::new(Token::new("tok").expect("token"), ep.clone())
                .with_metadata(BridgeMetadata::current_process(Some("launch".into())));
            let text = c.to_json_string().expect("writable");
            assert_eq!(parse(&text).expect("reads back"), c, "{text}");
        }
        let text = BridgeConfig::new(Token::new("tok").expect("token"), Endpoint::tcp_v4(5))
            .to_json_string()
            .expect("writable");
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["transport"]["address"], "5");
        assert!(v.get("metadata").is_none());
    }

    #[test]
    fn field_errors_name_the_field() {
        let cases: &[(&str, &str)] = &[
            (r#"[]"#, "(top level)"),
            (r#"{"transport":{"type":"stdio"}}"#, "token"),
            (r#"{"token":5,"transport":{"type":"stdio"}}"#, "token"),
            (r#"{"token":"","transport":{"type":"stdio"}}"#, "token"),
            (r#"{"token":"t"}"#, "transport"),
            (r#"{"token":"t","transport":"tcp"}"#, "transport"),
            (r#"{"token":"t","transport":{}}"#, "transport.type"),
            (
                r#"{"token":"t","transport":{"type":"udp"}}"#,
                "transport.type",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp","address":"0"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp","address":"70000"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp","address":"10.0.0.2:80"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp","address":"127.0.0.1:0"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"pipe","address":"a/b"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"unix","address":"rel.sock"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp","address":true}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"stdio"},"metadata":1}"#,
                "metadata",
            ),
            (
                r#"{"token":"t","transport":{"type":"stdio"},"metadata":{"pid":-1}}"#,
                "metadata.pid",
            ),
            (
                r#"{"token":"t","transport":{"type":"stdio"},"metadata":{"startTime":1}}"#,
                "metadata.startTime",
            ),
            (
                r#"{"token":"t","transport":{"type":"stdio"},"metadata":{"launchId":[]}}"#,
                "metadata.launchId",
            ),
        ];
        for (text, want) in cases {
            match parse(text) {
                Err(TransportError::BridgeJsonField { field, .. }) => {
                    assert_eq!(field, *want, "{text}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn loopback_refusal_in_address_mentions_loopback() {
        let err = parse(r#"{"token":"t","transport":{"type":"tcp","address":"0.0.0.0:80"}}"#)
            .expect_err("not loopback");
        assert!(err.to_string().contains("loopback"), "{err}");
    }

    #[test]
    fn json_errors_have_position_and_no_content() {
        let err = parse("{\"token\": \"sekrit-sekrit\", oops}").expect_err("bad json");
        match &err {
            TransportError::BridgeJsonSyntax { line, column, .. } => {
                assert_eq!(*line, 1);
                assert!(*column > 1);
            }
            other => panic!("{other:?}"),
        }
        assert!(!err.to_string().contains("sekrit"), "{err}");
    }

    /// Whether `shown` holds any 6-character run of `secret`, in any case.
    fn leaks(shown: &str, secret: &str) -> bool {
        let shown = shown.to_lowercase();
        let secret: Vec<char> = secret.to_lowercase().chars().collect();
        secret
            .windows(6)
            .any(|w| shown.contains(&w.iter().collect::<String>()))
    }

    #[test]
    fn no_error_quotes_any_part_of_the_token_in_any_case() {
        let secret = "MiXeD-CaSe-ToKeN-0123456789-aBcDeF-SeCrEt";
        let mut bad = Vec::new();
        for shown in [
            secret.to_owned(),
            secret.to_uppercase(),
            secret.to_lowercase(),
            secret[..20].to_owned(),
            secret[10..].to_uppercase(),
        ] {
            for (kind, address) in [
                ("tcp", shown.clone()),
                ("tcp", format!("tcp://{shown}")),
                ("tcp", format!("{shown}:80")),
                ("tcp", format!("127.0.0.1:{shown}")),
                ("pipe", format!("pipe://{shown}/x")),
                ("unix", shown.clone()),
                ("unix", format!("unix://{shown}")),
                ("pipe", format!("tcp://{shown}")),
            ] {
                bad.push(format!(
                    r#"{{"token":"{secret}","transport":{{"type":"{kind}","address":"{address}"}}}}"#
                ));
            }
            bad.push(format!(
                r#"{{"token":"{secret}","transport":{{"type":"{shown}"}}}}"#
            ));
        }
        for text in &bad {
            let err = parse(text).expect_err(text);
            let shown = format!("{err} {err:?}");
            assert!(!leaks(&shown, secret), "{shown}");
        }
    }

    #[test]
    fn no_error_contains_the_token() {
        let secret = "tok-abcdef-0123456789";
        let bad = [
            format!(r#"{{"token":"{secret}","transport":{{"type":"tcp","address":"x"}}}}"#),
            format!(r#"{{"token":"{secret}","transport":{{"type":"bogus"}}}}"#),
            format!(
                r#"{{"token":"{secret}","transport":{{"type":"stdio"}},"metadata":{{"pid":"{secret}"}}}}"#
            ),
            format!(r#"{{"token":"{secret}","transport":{{"type":"stdio"}}"#),
            format!(r#"{{"token":"{secret}" "transport":{{}}}}"#),
        ];
        for text in &bad {
            let err = parse(text).expect_err(text);
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
