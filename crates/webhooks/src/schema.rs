diesel::table! {
    webhook_events (id) {
        id -> BigInt,
        event_type -> Text,
        payload -> Text,
        delivered_at -> Text,
        signature_t -> Text,
        signature_v1 -> Text,
    }
}
