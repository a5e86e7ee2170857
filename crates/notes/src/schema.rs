diesel::table! {
    notes (id) {
        id -> BigInt,
        title -> Text,
        body -> Text,
        owner_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    tags (id) {
        id -> BigInt,
        name -> Text,
        owner_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    comments (id) {
        id -> BigInt,
        note_id -> BigInt,
        body -> Text,
        owner_id -> Nullable<BigInt>,
    }
}

diesel::joinable!(comments -> notes (note_id));
diesel::allow_tables_to_appear_in_same_query!(notes, tags, comments);
