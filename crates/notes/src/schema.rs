diesel::table! {
    notes (id) {
        id -> BigInt,
        title -> Text,
        body -> Text,
    }
}

diesel::table! {
    tags (id) {
        id -> BigInt,
        name -> Text,
    }
}

diesel::table! {
    comments (id) {
        id -> BigInt,
        note_id -> BigInt,
        body -> Text,
    }
}

diesel::joinable!(comments -> notes (note_id));
diesel::allow_tables_to_appear_in_same_query!(notes, tags, comments);
