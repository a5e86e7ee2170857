//! What the answer types that add headers to a JSON body (`Created`, `Linked`, `Tagged`)
//! share in the OpenAPI document: a response header's documentation, adding one to every
//! response of an operation, and the body schemas delegated to apistos' own wrapper.

use apistos::paths::{Header, ParameterDefinition, Response, Responses};
use apistos::reference_or::ReferenceOr;
use apistos::{ApistosSchema, OpenApiVersion};
use serde_json::Value;

/// A documented response header with the JSON schema `schema`.
pub fn header(description: &str, required: bool, schema: Value, v: OpenApiVersion) -> Header {
    Header {
        description: Some(description.to_owned()),
        required: Some(required),
        definition: Some(ParameterDefinition::Schema(ReferenceOr::Object(
            ApistosSchema::from_value(&schema, v),
        ))),
        ..Default::default()
    }
}

/// Adds `name` to the headers of every response in `responses`.
pub fn with_header(mut responses: Responses, name: &str, header: &Header) -> Responses {
    for response in responses.responses.values_mut() {
        if let ReferenceOr::Object(response) = response {
            add(response, name, header);
        }
    }
    responses
}

pub fn add(response: &mut Response, name: &str, header: &Header) {
    response
        .headers
        .insert(name.to_owned(), ReferenceOr::Object(header.clone()));
}

/// The 200 of a JSON body with `T`'s schema (what apistos leaves implicit for `Json<T>`).
pub fn ok<T: apistos::ApiComponent>(
    v: OpenApiVersion,
    description: Option<String>,
) -> Option<Responses> {
    apistos::__internal::response_from_schema(v, "200", T::schema(v), description.clone()).or_else(
        || apistos::__internal::response_from_raw_schema(v, "200", T::raw_schema(v), description),
    )
}

/// The 200 of a text body (`{"type": "string"}`) of `content_type`.
pub fn text_ok(content_type: &str, description: &str, v: OpenApiVersion) -> Responses {
    ok_with(
        content_type,
        description,
        &serde_json::json!({"type": "string"}),
        v,
    )
}

/// The 200 of a body of `content_type` described by the JSON schema `schema`.
pub fn ok_with(
    content_type: &str,
    description: &str,
    schema: &Value,
    v: OpenApiVersion,
) -> Responses {
    let string = ApistosSchema::from_value(schema, v);
    let schema = match v {
        OpenApiVersion::OAS3_0 => {
            apistos::VersionSpecificSchema::OAS3_0(ReferenceOr::Object(string))
        }
        OpenApiVersion::OAS3_1 => apistos::VersionSpecificSchema::OAS3_1(string),
    };
    let text = apistos::paths::MediaType {
        schema: Some(schema),
        ..Default::default()
    };
    let ok = Response {
        description: description.to_owned(),
        content: std::collections::BTreeMap::from([(content_type.to_owned(), text)]),
        ..Default::default()
    };
    Responses {
        responses: std::collections::BTreeMap::from([("200".to_owned(), ReferenceOr::Object(ok))]),
        ..Default::default()
    }
}

/// Implements `ApiComponent` for an answer type `$answer<T>` whose body is documented as
/// `$base<T>`'s, with `$responses` (a `fn(OpenApiVersion, Option<String>, Option<String>) ->
/// Option<Responses>`) documenting its responses.
#[macro_export]
macro_rules! answer_component {
    ($answer:ident, $base:ident, $responses:expr) => {
        impl<T> apistos::ApiComponent for $answer<T>
        where
            T: apistos::ApiComponent + apistos::JsonSchema + serde::Serialize,
        {
            fn child_schemas(
                v: apistos::OpenApiVersion,
            ) -> Vec<(
                String,
                apistos::reference_or::ReferenceOr<apistos::ApistosSchema>,
            )> {
                <$base<T> as apistos::ApiComponent>::child_schemas(v)
            }
            fn raw_schema(
                v: apistos::OpenApiVersion,
            ) -> Option<apistos::reference_or::ReferenceOr<apistos::ApistosSchema>> {
                <$base<T> as apistos::ApiComponent>::raw_schema(v)
            }
            fn schema(
                v: apistos::OpenApiVersion,
            ) -> Option<(
                String,
                apistos::reference_or::ReferenceOr<apistos::ApistosSchema>,
            )> {
                <$base<T> as apistos::ApiComponent>::schema(v)
            }
            fn request_body(
                _: apistos::OpenApiVersion,
                _: Option<String>,
            ) -> Option<apistos::paths::RequestBody> {
                None
            }
            fn responses(
                v: apistos::OpenApiVersion,
                content_type: Option<String>,
                description: Option<String>,
            ) -> Option<apistos::paths::Responses> {
                let document: fn(
                    apistos::OpenApiVersion,
                    Option<String>,
                    Option<String>,
                ) -> Option<apistos::paths::Responses> = $responses;
                document(v, content_type, description)
            }
        }
    };
}

/// Documents `$extractor` in OpenAPI as the security scheme `$name`: `$scheme` (no schema,
/// no parameters of its own).
#[macro_export]
macro_rules! security_scheme {
    ($extractor:ty, $name:expr, $scheme:expr, $description:expr) => {
        impl apistos::ApiComponent for $extractor {
            $crate::no_schema!();
            fn securities() -> std::collections::BTreeMap<String, apistos::security::SecurityScheme>
            {
                let scheme = apistos::security::SecurityScheme {
                    _type: $scheme,
                    description: Some($description.to_owned()),
                    extensions: Default::default(),
                };
                std::collections::BTreeMap::from([($name.to_owned(), scheme)])
            }
            fn security_requirement_name() -> Option<String> {
                Some($name.to_owned())
            }
        }
    };
}
