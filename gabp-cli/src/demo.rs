//! `gabp demo`: a deterministic tour of the wire: typed messages, `Content-Length` framing, strict decoding,
//! and the answers a mod gives to bad input. Every message crosses an in-memory wire through the real codecs.

use std::io::Write;

use bytes::BytesMut;
use gabp_codec::{MessageCodec, MessageError};
use gabp_types::decode::DecodeMode;
use gabp_types::methods::{
    AppInfo, Method, SchemaVersion, SessionHello, ToolsCall, ToolsList, ToolsListResult,
    WelcomeResult,
};
use gabp_types::{
    Capabilities, ChannelName, Event, Limits, Message, MessageId, MethodName, NonEmptyString,
    Request, Response, ToolDescriptor, UniqueVec,
};
use serde_json::{json, Value};
use tokio_util::codec::{Decoder, Encoder};

/// Deterministic ids, so the transcript is the same on every run.
fn id(n: u128) -> MessageId {
    let n = 0x6761_6270_0000_4000_8000_0000_0000_0000 | n;
    MessageId::parse(&format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        (n >> 96) as u32,
        (n >> 80) as u16,
        (n >> 64) as u16,
        (n >> 48) as u16,
        n & 0xffff_ffff_ffff
    ))
    .unwrap_or_default()
}

struct Wire {
    bridge: MessageCodec,
    mod_side: MessageCodec,
    buffer: BytesMut,
    frames: usize,
}

impl Wire {
    /// Encodes `message`, decodes it strictly on the other side, and prints both.
    fn send(
        &mut self,
        out: &mut dyn Write,
        direction: &str,
        message: Message,
    ) -> Result<Message, String> {
        let start = self.buffer.len();
        self.bridge
            .encode(message.clone(), &mut self.buffer)
            .map_err(|e| e.to_string())?;
        let frame = &self.buffer[start..];
        let header_end = frame.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0);
        let header = String::from_utf8_lossy(&frame[..header_end]).replace("\r\n", " | ");
        let decoded = match self
            .mod_side
            .decode(&mut self.buffer)
            .map_err(|e| e.to_string())?
        {
            Some(Ok(m)) => m,
            Some(Err(e)) => return Err(format!("the demo sent an invalid message: {e}")),
            None => return Err("incomplete frame".into()),
        };
        if decoded != message {
            return Err("message changed on the wire".into());
        }
        self.frames += 1;
        let body = serde_json::to_string_pretty(&decoded).map_err(|e| e.to_string())?;
        let _ = writeln!(out, "  {direction}  [{header}]");
        for line in body.lines() {
            let _ = writeln!(out, "      {line}");
        }
        Ok(decoded)
    }

    /// Feeds raw bytes to the mod side and prints the answer it must send.
    fn refuse(&mut self, out: &mut dyn Write, label: &str, raw: &[u8]) -> Result<(), String> {
        self.buffer.extend_from_slice(raw);
        let error: MessageError = match self
            .mod_side
            .decode(&mut self.buffer)
            .map_err(|e| e.to_string())?
        {
            Some(Err(e)) => e,
            Some(Ok(_)) => return Err(format!("{label}: accepted, but it is invalid")),
            None => return Err(format!("{label}: incomplete")),
        };
        let answer = error.to_response();
        let object = answer.error_object().cloned().ok_or("no error object")?;
        let _ = writeln!(out, "  {label}");
        let _ = writeln!(
            out,
            "      -> answer {} with id {}: {}",
            object.code.code(),
            answer.id,
            object.message
        );
        Ok(())
    }
}

fn tool(
    name: &str,
    title: &str,
    description: &str,
    input: Value,
    output: Value,
    tags: &[&str],
) -> Result<ToolDescriptor, String> {
    let object = |v: Value| v.as_object().cloned().ok_or("schema must be an object");
    Ok(ToolDescriptor {
        name: name.parse().map_err(|e| format!("{e}"))?,
        title: NonEmptyString::new(title).map_err(|e| e.to_string())?,
        description: NonEmptyString::new(description).map_err(|e| e.to_string())?,
        input_schema: object(input)?,
        output_schema: object(output)?,
        tags: Some(
            UniqueVec::new(tags.iter().map(|t| (*t).to_owned()).collect())
                .map_err(|e| e.to_string())?,
        ),
        deprecated: None,
        version: None,
    })
}

fn method(name: &str) -> Result<MethodName, String> {
    MethodName::new(name).map_err(|e| e.to_string())
}

fn tour(out: &mut dyn Write) -> Result<usize, String> {
    let mut wire = Wire {
        bridge: MessageCodec::new().with_mode(DecodeMode::Strict),
        mod_side: MessageCodec::new().with_mode(DecodeMode::Strict),
        buffer: BytesMut::new(),
        frames: 0,
    };
    let _ = writeln!(
        out,
        "GABP demo: gabp/1 messages through the real codecs (strict on both sides)\n"
    );

    let _ = writeln!(out, "1. Handshake");
    let hello = json!({
        "token": "9f2c4e6a8b0d1f3e5a7c9e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f1a3c5e7b9d0f",
        "bridgeVersion": env!("CARGO_PKG_VERSION"),
        "platform": "linux",
        "launchId": id(1).as_str(),
        "clientInfo": { "name": "gabp demo", "version": env!("CARGO_PKG_VERSION") }
    });
    let request = Request {
        id: id(2),
        method: method(SessionHello::NAME)?,
        params: hello.as_object().cloned(),
    };
    wire.send(out, "bridge -> mod", request.into())?;
    let welcome = WelcomeResult {
        agent_id: NonEmptyString::new("demo-voxel-world").map_err(|e| e.to_string())?,
        app: AppInfo {
            name: NonEmptyString::new("GABP Voxel Demo").map_err(|e| e.to_string())?,
            version: NonEmptyString::new(env!("CARGO_PKG_VERSION")).map_err(|e| e.to_string())?,
        },
        capabilities: Capabilities {
            methods: Some(
                UniqueVec::new(vec![
                    method(SessionHello::NAME)?,
                    method(ToolsList::NAME)?,
                    method(ToolsCall::NAME)?,
                ])
                .map_err(|e| e.to_string())?,
            ),
            events: Some(
                UniqueVec::new(vec!["world/block_change".into()]).map_err(|e| e.to_string())?,
            ),
            limits: Some(Limits {
                max_message_size: gabp_types::BoundedU64::new(1024 * 1024).ok(),
                max_concurrent_requests: gabp_types::BoundedU64::new(64).ok(),
                request_timeout: gabp_types::BoundedU64::new(30).ok(),
            }),
            ..Capabilities::default()
        },
        schema_version: SchemaVersion::current(),
        server_info: None,
    };
    let result = serde_json::to_value(&welcome).map_err(|e| e.to_string())?;
    wire.send(
        out,
        "mod -> bridge",
        Response::success(id(2), result).into(),
    )?;

    let _ = writeln!(out, "\n2. Tools");
    wire.send(
        out,
        "bridge -> mod",
        Request {
            id: id(3),
            method: method(ToolsList::NAME)?,
            params: None,
        }
        .into(),
    )?;
    let tools = ToolsListResult {
        tools: vec![tool(
            "world/place_block",
            "Place a block",
            "Places a block at integer coordinates and publishes world/block_change.",
            json!({"type": "object", "required": ["x", "y", "z", "blockType"],
                   "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}, "z": {"type": "integer"},
                                  "blockType": {"type": "string"}}, "additionalProperties": false}),
            json!({"type": "object", "properties": {"success": {"type": "boolean"}, "blockPlaced": {"type": "string"}}}),
            &["world", "building"],
        )?],
    };
    let result = serde_json::to_value(&tools).map_err(|e| e.to_string())?;
    wire.send(
        out,
        "mod -> bridge",
        Response::success(id(3), result).into(),
    )?;
    let call = json!({ "name": "world/place_block", "arguments": { "x": 3, "y": 4, "z": 5, "blockType": "stone" } });
    wire.send(
        out,
        "bridge -> mod",
        Request {
            id: id(4),
            method: method(ToolsCall::NAME)?,
            params: call.as_object().cloned(),
        }
        .into(),
    )?;
    wire.send(
        out,
        "mod -> bridge",
        Response::success(id(4), json!({ "success": true, "blockPlaced": "stone" })).into(),
    )?;

    let _ = writeln!(out, "\n3. Events (seq per channel, from 0)");
    let channel = ChannelName::new("world/block_change").map_err(|e| e.to_string())?;
    let mut event = Event::new(
        channel,
        0,
        json!({ "x": 3, "y": 4, "z": 5, "block": "stone" }),
    );
    event.id = id(5);
    wire.send(out, "mod -> bridge", event.into())?;

    let _ = writeln!(
        out,
        "\n4. Bad input, and what a mod answers (the stream goes on)"
    );
    wire.refuse(
        out,
        "a body that is not JSON",
        b"Content-Length: 9\r\n\r\nnot json!",
    )?;
    let dotted = format!(
        r#"{{"v":"gabp/1","id":"{}","type":"request","method":"tools/call","params":{{"name":"inventory.get"}}}}"#,
        id(6)
    );
    wire.refuse(
        out,
        "a tool name with a dot",
        format!("Content-Length: {}\r\n\r\n{dotted}", dotted.len()).as_bytes(),
    )?;
    let v2 = format!(
        r#"{{"v":"gabp/2","id":"{}","type":"request","method":"tools/list"}}"#,
        id(7)
    );
    wire.refuse(
        out,
        "another protocol version",
        format!("Content-Length: {}\r\n\r\n{v2}", v2.len()).as_bytes(),
    )?;
    let huge = 2 * 1024 * 1024;
    wire.refuse(
        out,
        "a frame announcing 2 MiB (over the 1 MiB limit; skipped, never buffered)",
        format!("Content-Length: {huge}\r\n\r\n").as_bytes(),
    )?;
    wire.buffer.extend(std::iter::repeat_n(b' ', huge));
    wire.send(
        out,
        "bridge -> mod (next frame after the skipped one)",
        Request {
            id: id(8),
            method: method("session/ping")?,
            params: None,
        }
        .into(),
    )?;

    Ok(wire.frames)
}

/// Runs the demo; returns the process exit code.
pub fn run(out: &mut dyn Write) -> u8 {
    match tour(out) {
        Ok(frames) => {
            let _ = writeln!(
                out,
                "\n{frames} frames crossed the wire and passed strict validation."
            );
            0
        }
        Err(e) => {
            eprintln!("error: demo failed: {e}");
            1
        }
    }
}
