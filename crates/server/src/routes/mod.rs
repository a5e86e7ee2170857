//! One module per domain noun; each has `configure` and its DTOs (serde + JSON Schema) with
//! `From` conversions from the domain types. Handlers only wire.

pub mod accounts;
pub mod articles;
pub mod audit;
pub mod comments;
pub mod crud;
pub mod dto;
pub mod examples;
pub mod health;
pub mod meta;
pub mod notes;
pub mod tags;
pub mod tokens;
pub mod versioned_notes;
pub mod webhook_endpoints;
pub mod webhooks;

use crate::auth::{Access, Rule, Rules};

/// Where the OpenAPI document is served (app.rs registers it beside the documented routes).
pub const SPEC_PATH: &str = "/openapi.json";

/// A route module: what registers its routes, and who may call them (crate::auth).
type Area = (
    fn(&mut apistos::web::ServiceConfig),
    &'static [&'static [Rule]],
);

/// Every route module the OpenAPI document describes, each with its access rules: a module
/// is registered with its rules or not at all.
const AREAS: &[Area] = &[
    (meta::configure, &[meta::ACCESS]),
    (health::configure, &[health::ACCESS]),
    (notes::configure, &[notes::ACCESS]),
    (comments::configure, &[comments::ACCESS]),
    (tags::configure, &[tags::ACCESS]),
    (accounts::configure, &[accounts::ACCESS]),
    (tokens::configure, &[tokens::ACCESS]),
    (articles::configure, &[articles::ACCESS]),
    (versioned_notes::configure, &[versioned_notes::ACCESS]),
    (
        examples::configure,
        &[
            examples::ACCESS,
            examples::note_handlers::ACCESS,
            examples::tag_handlers::ACCESS,
        ],
    ),
    (webhooks::configure, &[webhooks::ACCESS]),
    (webhook_endpoints::configure, &[webhook_endpoints::ACCESS]),
    (audit::configure, &[audit::ACCESS]),
];

/// The API's description (registered below, outside the documented routes): public.
const DOCS_ACCESS: &[Rule] = &[
    Rule::any(SPEC_PATH, Access::Public),
    Rule::tree("/docs", Access::Public),
    // What a browser asks for beside the docs page: answered empty, so nothing 404s.
    Rule::unmetered("/favicon.ico", Access::Public),
];

/// Every route the OpenAPI document describes.
pub fn configure(cfg: &mut apistos::web::ServiceConfig) {
    for (configure, _) in AREAS {
        configure(cfg);
    }
}

/// Every route's access rule.
pub fn rules() -> Rules {
    let areas = AREAS.iter().flat_map(|(_, rules)| rules.iter().copied());
    Rules::new(areas.chain([DOCS_ACCESS]))
}
