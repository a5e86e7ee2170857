//! One body for the five operations of a plain CRUD resource (list, create, get, replace,
//! delete), registered under a path prefix. `/notes` and `/examples/notes` (and the tags) serve
//! the same store and shapes: each invocation gives the same handlers their own operation ids,
//! tags and summaries, which is all that differs.

/// Declares `mod $module` with the five handlers and `configure`, which routes
/// `$collection` (GET, POST) and `$item` (GET, PUT, DELETE) to them. `$ops` is the module with
/// the resource's operations (`list_page`, `create_one`, `fetch_one`, `replace_one`,
/// `delete_one`). Each handler gets the doc comment written before its name (the OpenAPI summary
/// and description) and its operation id; the errors it documents follow from the operation
/// (`conflicts` adds the resource's own, such as 409 for a taken name, to create and replace).
macro_rules! crud_routes {
    (
        mod $module:ident;
        ops: $ops:path;
        types: list $list:ty, item $dto:ty, body $body:ty, path $path:ty => $field:ident;
        paths: $collection:literal, $item:literal;
        tag: $tag:tt, conflicts: [$($conflict:tt),*];
        $(#[doc = $list_doc:tt])* list $list_id:tt;
        $(#[doc = $create_doc:tt])* create $create_id:tt;
        $(#[doc = $get_doc:tt])* get $get_id:tt;
        $(#[doc = $update_doc:tt])* update $update_id:tt;
        $(#[doc = $delete_doc:tt])* delete $delete_id:tt;
    ) => {
        pub mod $module {
            // The invoker's types (`$list`, `$dto`, …) are named in its scope.
            #[allow(unused_imports)]
            use super::*;
            use actix_web::web::Path;
            use apistos::actix::NoContent;
            use apistos::api_operation;
            use ::http_edge::db::Db;
            use ::http_edge::error::ApiError;
            use ::http_edge::idempotent::{Created, KeyedCreate};
            use ::http_edge::links::Linked;
            use ::http_edge::conditional::{IfMatch, IfNoneMatchParam, Tagged, Updated};
            use ::http_edge::extract::{JsonObject, RawQuery};
            use $crate::routes::dto::PageQuery;
            use $ops as ops;

            $(#[doc = $list_doc])*
            #[api_operation(operation_id = $list_id, tag = $tag, error_code = 422)]
            pub async fn list(db: Db, q: RawQuery<PageQuery>) -> Result<Linked<$list>, ApiError> {
                Ok(Linked::new(ops::list_page(&db, &q).await?))
            }

            $(#[doc = $create_doc])*
            #[api_operation(
                operation_id = $create_id,
                tag = $tag,
                $(error_code = $conflict,)*
                error_code = 422
            )]
            pub async fn create(
                db: Db,
                keyed: KeyedCreate,
                body: JsonObject<$body>,
            ) -> Result<Created<$dto>, ApiError> {
                // Keys recorded before scopes were operation ids name the collection.
                let scope = idempotency::Scope::of($create_id, &[]).formerly($collection);
                ops::create_one(&db, &keyed, scope, &body).await
            }

            $(#[doc = $get_doc])*
            #[api_operation(operation_id = $get_id, tag = $tag, error_code = 404)]
            pub async fn get_one(
                db: Db,
                path: Path<$path>,
                _doc: IfNoneMatchParam,
            ) -> Result<Tagged<$dto>, ApiError> {
                Ok(Tagged::new(ops::fetch_one(&db, path.$field).await?))
            }

            $(#[doc = $update_doc])*
            #[api_operation(
                operation_id = $update_id,
                tag = $tag,
                error_code = 404,
                error_code = 412,
                $(error_code = $conflict,)*
                error_code = 422
            )]
            pub async fn update(
                db: Db,
                path: Path<$path>,
                if_match: IfMatch,
                body: JsonObject<$body>,
            ) -> Result<Updated<$dto>, ApiError> {
                Ok(Updated::new(ops::replace_one(&db, path.$field, if_match, &body).await?))
            }

            $(#[doc = $delete_doc])*
            #[api_operation(operation_id = $delete_id, tag = $tag, error_code = 404, error_code = 412)]
            pub async fn remove(
                db: Db,
                path: Path<$path>,
                if_match: IfMatch,
            ) -> Result<NoContent, ApiError> {
                ops::delete_one(&db, path.$field, if_match).await?;
                Ok(NoContent)
            }

            /// Both paths need a bearer token in tokens mode (a write, scope write or admin).
            pub const ACCESS: &[$crate::auth::Rule] = &[
                $crate::auth::Rule::any($collection, $crate::auth::Access::Bearer),
                $crate::auth::Rule::any($item, $crate::auth::Access::Bearer),
            ];

            pub fn configure(cfg: &mut apistos::web::ServiceConfig) {
                use apistos::web::{delete, get, post, put, resource};
                cfg.service(
                    resource($collection)
                        .route(get().to(list))
                        .route(post().to(create)),
                )
                .service(
                    resource($item)
                        .route(get().to(get_one))
                        .route(put().to(update))
                        .route(delete().to(remove)),
                );
            }
        }
    };
}

pub(crate) use crud_routes;
