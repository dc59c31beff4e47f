//! `gabp mcp`: the MCP server that lets AI agents drive GABP games (gabp-hub behind gabp-mcp), a drop-in for
//! `gabs server`: the same configuration directory and file, the same tools.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use gabp_hub::LiveHub;
use gabp_mcp::http::{Access, HttpServer, API_KEY_VAR};
use gabp_mcp::{GabpMcp, ImageLimits, McpOptions};
use tokio_util::sync::CancellationToken;

/// Long help of `gabp mcp`.
pub const EXAMPLES: &str = "\
Reads DIR/config.json in the GABS format (default DIR: ~/.gabs), so a GABS setup works unchanged: in an MCP
host's configuration, replace the command `gabs server --configDir DIR` with `gabp mcp --config-dir DIR`.
Logs go to stderr (RUST_LOG sets the level, default warn); stdout carries MCP.

Examples:
  # An MCP host starts this on stdio
  gabp mcp --config-dir ~/.gabs

  # Every game tool as an MCP tool of its own (voxel_world_get_block), with list-changed notifications
  gabp mcp --mirror-tools

  # Streamable HTTP on loopback at http://127.0.0.1:8080/mcp, clients send `Authorization: Bearer $GABP_MCP_API_KEY`
  GABP_MCP_API_KEY=$(openssl rand -hex 32) gabp mcp --http localhost:8080

  # The entry for an MCP host's configuration (Claude Desktop, Cursor, Claude Code), with absolute paths: hosts
  # start it without your shell's PATH
  gabp mcp --print-config --config-dir ~/.gabs";

/// Arguments of `gabp mcp`.
#[derive(Debug, Clone, Args)]
pub struct McpArgs {
    /// The configuration directory: its config.json lists the games, each game's bridge.json goes in a
    /// folder of its own there (default: ~/.gabs, as GABS).
    #[arg(long = "config-dir", alias = "configDir", value_name = "DIR")]
    pub config_dir: Option<PathBuf>,
    /// Serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio; ADDR is a loopback HOST:PORT
    /// (localhost:8080, 127.0.0.1:8080 or [::1]:8080).
    #[arg(long, value_name = "ADDR", value_parser = gabp_mcp::http::parse_addr)]
    pub http: Option<SocketAddr>,
    /// With --http: also serve browser pages from this origin (SCHEME://HOST[:PORT]; repeatable). Requests
    /// from other origins are refused with 403; pages on this machine (localhost, 127.0.0.1, [::1]) are allowed.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http",
          value_parser = gabp_mcp::http::parse_origin)]
    pub allow_origin: Vec<String>,
    /// With --http: serve without a bearer key (otherwise GABP_MCP_API_KEY, or the config's apiKey, is required).
    #[arg(long, requires = "http")]
    pub no_auth: bool,
    /// List every connected game's tools as MCP tools of their own, and notify clients when they change.
    #[arg(long)]
    pub mirror_tools: bool,
    /// Scale down a picture in a tool's answer that is larger than this many bytes (default 1 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20,
          value_parser = clap::value_parser!(u32).range(1024..=(256 << 20)))]
    pub max_image_bytes: u32,
    /// Scale down a picture in a tool's answer whose longer edge has more pixels than this (default 1568).
    #[arg(long, value_name = "PIXELS", default_value_t = 1568,
          value_parser = clap::value_parser!(u32).range(16..=16384))]
    pub max_image_edge: u32,
    /// Print a ready `mcpServers` entry for an MCP host's configuration (JSON, with absolute paths for this
    /// binary and the config dir), then exit.
    #[arg(long)]
    pub print_config: bool,
    /// Log level on stderr: error, warn, info, debug, trace (default warn; RUST_LOG overrides).
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
}

fn default_dir() -> Result<PathBuf, String> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(|home| PathBuf::from(home).join(".gabs"))
        .ok_or_else(|| "no home directory: give --config-dir".to_owned())
}

/// The `mcpServers` entry that starts this binary as `gabp mcp --config-dir DIR`, with absolute paths: hosts
/// start servers without a shell, often with a PATH of their own.
fn host_entry(args: &McpArgs) -> Result<serde_json::Value, String> {
    let binary = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("cannot find this program's path: {e}"))?;
    let dir = match &args.config_dir {
        Some(dir) => dir.clone(),
        None => default_dir()?,
    };
    let dir =
        std::path::absolute(&dir).map_err(|e| format!("--config-dir {}: {e}", dir.display()))?;
    let mut mcp_args = vec![
        "mcp".to_owned(),
        "--config-dir".to_owned(),
        dir.to_string_lossy().into_owned(),
    ];
    if args.mirror_tools {
        mcp_args.push("--mirror-tools".to_owned());
    }
    let defaults = ImageLimits::default();
    if args.max_image_bytes as usize != defaults.max_bytes {
        mcp_args.extend([
            "--max-image-bytes".to_owned(),
            args.max_image_bytes.to_string(),
        ]);
    }
    if args.max_image_edge != defaults.max_edge {
        mcp_args.extend([
            "--max-image-edge".to_owned(),
            args.max_image_edge.to_string(),
        ]);
    }
    Ok(serde_json::json!({ "mcpServers": { "gabp": {
        "command": binary.to_string_lossy(),
        "args": mcp_args,
    } } }))
}

/// Runs `gabp mcp`; returns the exit status.
pub fn run(args: &McpArgs) -> u8 {
    if args.print_config {
        return match host_entry(args) {
            Ok(entry) => {
                println!("{entry:#}");
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                1
            }
        };
    }
    crate::init_tracing(args.log_level.as_deref().unwrap_or("warn"));
    match crate::block_on(serve(args)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

async fn serve(args: &McpArgs) -> Result<(), String> {
    let dir = match &args.config_dir {
        Some(dir) => dir.clone(),
        None => default_dir()?,
    };
    // An invalid config.json does not stop the server: the tools say what is wrong until it is fixed, and the
    // file is read again when it changes.
    let hub = LiveHub::load(&dir);
    hub.watch();
    let api_key = std::env::var(API_KEY_VAR)
        .ok()
        .or(hub.current().config().api_key.clone());
    // Games an earlier session left running (it was killed) are taken over, not started twice.
    tokio::spawn({
        let hub = hub.current();
        async move { hub.reconcile().await }
    });
    let front = GabpMcp::new(
        hub.clone(),
        McpOptions::default()
            .mirror_tools(args.mirror_tools)
            .images(ImageLimits::new(
                args.max_image_bytes as usize,
                args.max_image_edge,
            )),
    );
    let mut signals = crate::signals::Signals::new()?;
    let outcome = match args.http {
        None => {
            tokio::select! {
                served = front.serve_stdio() => served.map_err(|e| e.to_string()),
                signal = signals.recv() => {
                    tracing::info!(signal, "stopping the games and exiting");
                    Ok(())
                }
            }
        }
        Some(addr) => {
            let access = Access::new(api_key, args.no_auth).map_err(|e| e.to_string())?;
            let server = HttpServer::bind(front, addr, access, &args.allow_origin)
                .await
                .map_err(|e| e.to_string())?;
            eprintln!("serving MCP on http://{}/mcp", server.addr());
            let stop = CancellationToken::new();
            let serving = tokio::spawn(server.serve(stop.clone()));
            let signal = signals.recv().await;
            tracing::info!(signal, "stopping the games and exiting");
            stop.cancel();
            match tokio::time::timeout(Duration::from_secs(5), serving).await {
                Ok(Ok(served)) => served.map_err(|e| e.to_string()),
                _ => Ok(()),
            }
        }
    };
    hub.shutdown().await;
    outcome
}
