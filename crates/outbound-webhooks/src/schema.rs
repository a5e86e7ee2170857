diesel::table! {
    webhook_endpoints (id) {
        id -> BigInt,
        owner_id -> Nullable<BigInt>,
        url -> Text,
        event_types -> Text,
        enabled -> Bool,
        secret_version -> BigInt,
        secret_salt -> Text,
        previous_secret_until -> BigInt,
        created_at -> Text,
        updated_at -> Text,
        cursor_tx -> BigInt,
        cursor_id -> BigInt,
        failed_attempts -> BigInt,
        next_attempt_at -> BigInt,
        lease_owner -> Text,
        lease_until -> BigInt,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> BigInt,
        endpoint_id -> BigInt,
        message_id -> Text,
        event_id -> BigInt,
        attempt -> BigInt,
        outcome -> Text,
        response_status -> Nullable<BigInt>,
        latency_ms -> BigInt,
        error -> Nullable<Text>,
        next_attempt_at -> Nullable<BigInt>,
        attempted_at -> Text,
        manual -> Bool,
    }
}

diesel::allow_tables_to_appear_in_same_query!(webhook_endpoints, webhook_deliveries);
