//! [`serve`]: what actix-web's `HttpServer::listen` assembles (actix-server, the HTTP/1
//! service), with each socket wrapped in [`Paced`] on its way to the dispatcher and counted
//! against its client's connection cap.

use std::fmt;
use std::net::TcpListener;
use std::time::Duration;

use actix_http::{Request, Response};
use actix_service::{IntoServiceFactory, Service, ServiceFactory, ServiceFactoryExt};
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{AppConfig, Extensions, Server};

use crate::connection::Paced;
use crate::middleware::limits::{self, ConnectionCounter};

/// How the sockets are served.
#[derive(Debug, Clone, Copy)]
pub struct Serving {
    pub workers: usize,
    /// Threads per worker for blocking calls (the database's).
    pub blocking_threads: usize,
    /// Open connections one client address may hold; `None`: no cap (behind trusted proxies,
    /// where every connection comes from a proxy).
    pub connections_per_client: Option<usize>,
}

/// Serves `listener` with the app `factory` makes (one per worker); runs once awaited.
pub fn serve<F, I, S, B>(listener: TcpListener, how: Serving, factory: F) -> std::io::Result<Server>
where
    F: Fn() -> I + Send + Clone + 'static,
    I: IntoServiceFactory<S, Request>,
    S: ServiceFactory<Request, Config = AppConfig> + 'static,
    S::Error: Into<Response<BoxBody>> + 'static,
    S::InitError: fmt::Debug,
    S::Response: Into<Response<B>> + 'static,
    <S::Service as Service<Request>>::Future: 'static,
    S::Service: 'static,
    B: MessageBody + 'static,
{
    let connections = how.connections_per_client.map(ConnectionCounter::new);
    let builder = actix_server::Server::build()
        .workers(how.workers)
        .worker_max_blocking_threads(how.blocking_threads.max(1))
        .shutdown_timeout(10);
    let shutdown = builder.graceful_shutdown_signal();
    let local = listener.local_addr()?;
    Ok(builder
        .listen("http", listener, move || {
            let (connections, shutdown) = (connections.clone(), shutdown.clone());
            let http = actix_http::HttpService::build()
                .graceful_shutdown_signal(move || {
                    let shutdown = shutdown.clone();
                    async move { shutdown.notified().await }
                })
                // The head must arrive within 5 s (actix's default, kept explicit); the body
                // within REQUEST_TIMEOUT of it (`middleware::limits`).
                .client_request_timeout(Duration::from_secs(5))
                .client_disconnect_timeout(Duration::from_secs(1))
                .local_addr(local)
                .on_connect_ext(move |io: &Paced, data: &mut Extensions| {
                    if let Some(counter) = &connections {
                        limits::on_connect(counter, io.tcp(), data);
                    }
                    data.insert(io.shared());
                })
                .h1(actix_service::map_config(factory().into_factory(), |_| {
                    AppConfig::default()
                }));
            actix_service::fn_service(|io: actix_web::rt::net::TcpStream| {
                let peer = io.peer_addr().ok();
                std::future::ready(Ok::<_, actix_http::error::DispatchError>((
                    Paced::new(io),
                    peer,
                )))
            })
            .and_then(http)
        })?
        .run())
}
