//! `gabp inspect`: a web page on a loopback port that shows a mod (identity, capabilities, tools with forms,
//! resources, attention, a live event log, the game's clock) and calls its tools; the page's API is served on
//! the same port.
//!
//! Every URL starts with `/s/SECRET/`, a fresh secret of each run, and a request whose `Origin` or `Host` is
//! not the page's own is refused: another local page or program cannot drive the game through it.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use gabp_session::bridge::{Bridge, ReconnectPolicy};
use gabp_transport::Token;

use crate::target::TargetArgs;

mod api;
mod feed;
mod guard;

pub use guard::Guard;

/// Long help of `gabp inspect`.
pub const EXAMPLES: &str = "\
Connects to the mod (the same options as gabp call), serves the inspector page on a loopback port and prints
its URL, which holds a secret of this run: anyone who has the URL can call the mod's tools. The page shows
the mod's identity and capabilities, a form for each tool, the resources, the attention state, a live
event log, and the game's clock with pause, resume and step buttons when the mod has time control. When the mod goes away (the game restarts) it reconnects to the same endpoint for as long as it
runs. Runs until Ctrl-C.

Examples:
  gabp inspect                                   # the mod in bridge.json
  gabp inspect --open --connect tcp://127.0.0.1:4711 --token $TOKEN
  gabp inspect --listen 127.0.0.1:8080 --spawn 'gabp mod --stdio'";

/// Arguments of `gabp inspect`.
#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The loopback address to serve the page on (port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Open the page in the default browser.
    #[arg(long)]
    pub open: bool,
}

/// How the inspector reconnects: soon at first, then every 2 s at most, for as long as it runs.
fn reconnect_policy() -> ReconnectPolicy {
    ReconnectPolicy::new()
        .initial_delay(Duration::from_millis(100))
        .max_delay(Duration::from_secs(2))
        .max_attempts(None)
}

/// What the handlers share.
pub struct Inspector {
    /// The bridge to the mod.
    pub bridge: Bridge,
    /// Where the mod is, as shown on the page.
    pub endpoint: String,
    /// Live events and connection changes for the pages.
    pub feed: feed::Feed,
}

/// Runs `gabp inspect` until Ctrl-C.
///
/// # Errors
///
/// One line: a non-loopback `--listen`, an unreachable mod, or a port that cannot be bound.
pub async fn run(args: &InspectArgs, stdout: &mut dyn Write) -> Result<(), String> {
    if !args.listen.ip().is_loopback() {
        return Err(format!(
            "--listen: {} is not a loopback address; the inspector serves 127.0.0.1 or [::1] only",
            args.listen
        ));
    }
    let target = args.target.resolve_from_env()?;
    let builder = Bridge::builder(target.token.clone())
        .client_info("gabp inspect", env!("CARGO_PKG_VERSION"))
        .check_advertised(false)
        .reconnect(reconnect_policy());
    let session = target.open(builder).await?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("--listen: cannot listen on {}: {e}", args.listen))?;
    let address = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    let secret = Token::generate().map_err(|e| format!("cannot generate a secret: {e}"))?;
    let url = format!("http://{address}/s/{}/", secret.expose_secret());
    let inspector = Arc::new(Inspector {
        bridge: session.bridge.clone(),
        endpoint: target.reach.to_string(),
        feed: feed::Feed::start(&session.bridge).await,
    });
    let app = api::app(inspector, Guard::new(secret, address));
    eprintln!("connected to {}", target.reach);
    writeln!(stdout, "inspector at {url}")
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("cannot write to stdout: {e}"))?;
    if args.open {
        if let Err(e) = open_browser(&url) {
            eprintln!("warning: cannot open a browser ({e}); open the URL above yourself");
        }
    }
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await;
    session.finish().await;
    served.map_err(|e| format!("the inspector's server failed: {e}"))
}

/// Opens `url` with the platform's opener.
fn open_browser(url: &str) -> std::io::Result<()> {
    #[cfg(target_os = "macos")]
    let mut command = std::process::Command::new("open");
    #[cfg(windows)]
    let mut command = {
        let mut command = std::process::Command::new("cmd");
        command.args(["/C", "start", ""]);
        command
    };
    #[cfg(not(any(target_os = "macos", windows)))]
    let mut command = std::process::Command::new("xdg-open");
    command
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(drop)
}
