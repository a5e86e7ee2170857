//! The performance ceiling our server is compared with: bare actix-web + Diesel serving the same
//! `notes` table with no middleware, no problem rendering and no OpenAPI layer.
//!
//! `cargo run --release -p server --example bare_ceiling -- <DATABASE_URL> <BIND>`

use actix_web::{App, HttpResponse, HttpServer, web};
use diesel::prelude::*;
use storage::{Database, Pool};

diesel::table! {
    notes (id) {
        id -> BigInt,
        title -> Text,
        body -> Text,
    }
}

#[derive(serde::Serialize)]
struct Note {
    id: i64,
    title: String,
    body: String,
}

async fn get_note(pool: web::Data<Pool>, id: web::Path<i64>) -> HttpResponse {
    let id = id.into_inner();
    let pool = pool.into_inner();
    let row = web::block(move || {
        let mut conn = pool.get().ok()?;
        notes::table
            .find(id)
            .select((notes::id, notes::title, notes::body))
            .first::<(i64, String, String)>(&mut **conn)
            .ok()
    })
    .await
    .ok()
    .flatten();
    match row {
        Some((id, title, body)) => HttpResponse::Ok().json(Note { id, title, body }),
        None => HttpResponse::NotFound().finish(),
    }
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "sqlite://data/service.db".to_owned());
    let bind = args.next().unwrap_or_else(|| "127.0.0.1:8090".to_owned());
    let db = Database::parse(&url).map_err(std::io::Error::other)?;
    let size = db.backend().pool_size();
    let pool = db.pool(size).map_err(std::io::Error::other)?;
    HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(pool.clone()))
            .route("/notes/{id}", web::get().to(get_note))
            .route(
                "/health",
                web::get()
                    .to(|| async { HttpResponse::Ok().json(serde_json::json!({"status": "ok"})) }),
            )
    })
    .bind(bind)?
    .run()
    .await
}
