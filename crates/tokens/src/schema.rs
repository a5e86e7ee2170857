diesel::table! {
    users (id) {
        id -> BigInt,
        name -> Text,
        created_at -> Text,
    }
}

diesel::table! {
    tokens (id) {
        id -> BigInt,
        user_id -> BigInt,
        token_hash -> Text,
        scope -> Text,
        label -> Text,
        created_at -> Text,
        revoked_at -> Nullable<Text>,
        expires_at -> Nullable<Text>,
        last_used_at -> Nullable<Text>,
    }
}

diesel::joinable!(tokens -> users (user_id));
diesel::allow_tables_to_appear_in_same_query!(users, tokens);
