//! Streamable HTTP transport: rmcp's tower service mounted at `/mcp` in axum.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};

use crate::Gateway;

/// The axum router: `POST /mcp` (and the streamable HTTP `GET`/`DELETE` on the same path).
///
/// Sessions are kept for clients on protocol versions before 2026-07-28; 2026-07-28 requests
/// are served statelessly (rmcp decides per request). Only loopback `Host` headers are accepted
/// (rmcp's DNS-rebinding guard), which fits a gateway that runs next to its MCP client.
pub fn router(gateway: Gateway) -> axum::Router {
    let service = StreamableHttpService::new(
        move || Ok(gateway.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    axum::Router::new().nest_service("/mcp", service)
}

/// Serves [`router`] on `listener` until Ctrl-C.
pub async fn serve_http(gateway: Gateway, listener: tokio::net::TcpListener) -> anyhow::Result<()> {
    use axum::serve::ListenerExt;
    // Answers are written in several small chunks (SSE priming event, then the message):
    // without TCP_NODELAY, Nagle's algorithm meets the client's delayed ACK (+40 ms a call).
    let listener = listener.tap_io(|tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            log::debug!("TCP_NODELAY: {error}");
        }
    });
    axum::serve(listener, router(gateway))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
