//! `gabp-testkit-mock-mod`: `MockMod::demo()` on its own stdin and stdout, with the token from `GABP_TOKEN`.
//! Exits when stdin closes. It exists to test the conformance suite's spawn target against a real child.

use std::process::ExitCode;

use gabp_testkit::MockMod;
use gabp_transport::{Endpoint, Listener, Token, GABP_TOKEN};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(token) = std::env::var(GABP_TOKEN)
        .ok()
        .and_then(|t| Token::new(t).ok())
    else {
        eprintln!("gabp-testkit-mock-mod: set {GABP_TOKEN} to the token bridges must present");
        return ExitCode::from(2);
    };
    let mock = match MockMod::builder().token(token).demo().build() {
        Ok(mock) => mock,
        Err(e) => {
            eprintln!("gabp-testkit-mock-mod: {e}");
            return ExitCode::from(1);
        }
    };
    let listener = match Listener::bind(&Endpoint::Stdio).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("gabp-testkit-mock-mod: {e}");
            return ExitCode::from(1);
        }
    };
    mock.serve(listener).wait().await;
    ExitCode::SUCCESS
}
