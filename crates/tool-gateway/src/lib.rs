#![doc = include_str!("../README.md")]

mod describe;
mod gateway;
mod http;
mod secret;
mod upstream;

pub use describe::output_schema;
pub use gateway::{Attempt, Gateway, GatewayConfig, Selection, retry_key};
pub use http::{Client, ClientTokens, HttpLimits, LOOPBACK_ORIGINS, router, serve_http};
pub use secret::BearerToken;
pub use upstream::{REQUEST_TIMEOUT, TOKEN_ENV};

/// Runs the gateway over stdio (newline-delimited JSON-RPC) until stdin closes.
pub async fn serve_stdio(gateway: Gateway) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let running = gateway.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
