diesel::table! {
    idempotency_keys (id) {
        id -> BigInt,
        caller -> Text,
        idempotency_key -> Text,
        fingerprint -> Text,
        status -> BigInt,
        location -> Nullable<Text>,
        body -> Text,
        created_at -> Text,
    }
}
