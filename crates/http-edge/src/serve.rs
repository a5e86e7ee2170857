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

impl Serving {
    /// `workers` (default: one per core) sharing `pool` database connections.
    pub fn new(workers: Option<usize>, pool: u32, connections_per_client: Option<usize>) -> Self {
        let workers = workers.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        // No more threads for database calls than the pool has connections: a thread beyond
        // them would only wait for one, and each thread's malloc arena keeps what it once
        // held (16 threads took the SQLite server to 108 MiB on a 1,000,000-row table, the pool
        // size to 43 MiB; docs/PERFORMANCE.md, "Memory").
        let pool = usize::try_from(pool).unwrap_or(usize::MAX);
        Serving {
            workers,
            blocking_threads: pool.div_ceil(workers),
            connections_per_client,
        }
    }
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
        .shutdown_timeout(10)
        // The caller decides what a signal does (a drain period first, for one).
        .disable_signals();
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

/// Raises the soft limit on open files to the hard one. The common soft default of 1,024 let
/// 1,100 idle connections stop the server from accepting any more (`/health` included); the
/// per-client connection cap and the request deadline bound what one client holds, and this
/// leaves room for many clients.
pub fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        if let Err(err) = setrlimit(Resource::Nofile, limit) {
            log::warn!("cannot raise the open-file limit: {err}");
        }
    }
}

/// The signals that stop a server, caught from [`StopSignals::install`] on (before the server
/// binds, so a signal that arrives once it answers is never the default, killing one).
pub struct StopSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    quit: tokio::signal::unix::Signal,
}

impl StopSignals {
    pub fn install() -> std::io::Result<StopSignals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(StopSignals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            quit: signal(SignalKind::quit())?,
        })
    }

    /// Stops `server` on the first signal. SIGTERM: `draining` is set at once (`/health/ready`
    /// turns 503, event streams end) and everything else is still served for `drain`; then
    /// in-flight requests finish (graceful shutdown). SIGINT or SIGQUIT: the graceful shutdown
    /// at once.
    pub fn stop(
        self,
        server: actix_web::dev::ServerHandle,
        draining: std::sync::Arc<std::sync::atomic::AtomicBool>,
        drain: std::time::Duration,
    ) {
        let StopSignals {
            mut term,
            mut int,
            mut quit,
        } = self;
        actix_web::rt::spawn(async move {
            tokio::select! {
                _ = term.recv() => {
                    draining.store(true, std::sync::atomic::Ordering::Release);
                    log::info!("SIGTERM: not ready; draining for {} s, then stopping", drain.as_secs());
                    tokio::time::sleep(drain).await;
                }
                _ = int.recv() => log::info!("SIGINT: stopping"),
                _ = quit.recv() => log::info!("SIGQUIT: stopping"),
            }
            server.stop(true).await;
        });
    }
}

/// The interactive documentation and its neighbours, beside the OpenAPI document `doc` served
/// at `spec_path`: Swagger UI under `/docs` (`/docs` itself redirects there), and
/// `/favicon.ico`, which Swagger UI's page names not but browsers ask for: no content, and
/// cacheable for a day rather than a 404 on every visit.
pub fn docs(
    cfg: &mut actix_web::web::ServiceConfig,
    spec_path: &'static str,
    doc: std::sync::Arc<serde_json::Value>,
    title: &'static str,
) {
    use actix_web::{HttpResponse, web};
    let favicon = || async {
        HttpResponse::NoContent()
            .insert_header(("Cache-Control", "public, max-age=86400"))
            .finish()
    };
    let redirect = || async {
        HttpResponse::PermanentRedirect()
            .insert_header(("Location", "/docs/"))
            .finish()
    };
    cfg.route(
        spec_path,
        web::get().to(move || {
            let doc = doc.clone();
            async move { HttpResponse::Ok().json(&*doc) }
        }),
    )
    .route("/favicon.ico", web::get().to(favicon))
    .route("/docs", web::get().to(redirect))
    .service(swagger_ui_dist::generate_scope(
        swagger_ui_dist::ApiDefinition {
            uri_prefix: "/docs",
            api_definition: swagger_ui_dist::OpenApiSource::Uri(spec_path),
            title: Some(title),
        },
    ));
}
