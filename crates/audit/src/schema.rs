diesel::table! {
    audit_log (id) {
        id -> BigInt,
        at -> Text,
        actor -> Text,
        user_id -> Nullable<BigInt>,
        token_id -> Nullable<BigInt>,
        method -> Text,
        route -> Text,
        resource -> Text,
    }
}
