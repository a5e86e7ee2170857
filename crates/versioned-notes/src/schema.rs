diesel::table! {
    versioned_notes (id) {
        id -> BigInt,
        title -> Text,
        body -> Text,
        tags -> Text,
        created_at -> Text,
        updated_at -> Text,
        owner_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    v1_usage (caller) {
        caller -> Text,
        calls -> BigInt,
        first_seen -> Text,
        last_seen -> Text,
    }
}
