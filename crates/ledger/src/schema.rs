diesel::table! {
    accounts (account_id) {
        account_id -> Text,
        owner -> Text,
        balance_cents -> BigInt,
        is_open -> Bool,
        last_sequence -> BigInt,
        updated_at -> Text,
        owner_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    account_events (id) {
        id -> BigInt,
        aggregate_id -> Text,
        aggregate_type -> Text,
        event_type -> Text,
        payload -> Text,
        sequence -> BigInt,
        occurred_at -> Text,
    }
}

diesel::allow_tables_to_appear_in_same_query!(accounts, account_events);
