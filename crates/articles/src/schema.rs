diesel::table! {
    articles (id) {
        id -> BigInt,
        title -> Text,
        author -> Text,
        category -> Nullable<Text>,
        created_at -> Text,
        owner_id -> Nullable<BigInt>,
    }
}
