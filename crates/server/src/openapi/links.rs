//! Links between operations (OpenAPI `links`): how a created resource's id feeds the
//! operations on it, for schemathesis' stateful phase.

/// `(operation, status, link name, target operation, parameters)`: how a created resource's
/// id feeds the operations on it.
pub(super) type Link = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);
pub(super) const LINKS: &[Link] = &[
    // Area D. Link values taken from a response body are integers, and schemathesis sends
    // them as they are, which a header cannot carry; so the acting user of the follow-up calls
    // is the issuing request's own `X-User-Id` (a string).
    (
        "create_user",
        "201",
        "IssueToken",
        "issue_token",
        &[("userId", "$response.body#/id")],
    ),
    (
        "create_user",
        "201",
        "ListTokens",
        "list_tokens",
        &[("userId", "$response.body#/id")],
    ),
    (
        "issue_token",
        "201",
        "RevokeToken",
        "revoke_token",
        &[
            ("userId", "$response.body#/user_id"),
            ("tokenId", "$response.body#/id"),
            ("header.X-User-Id", "$request.header.X-User-Id"),
        ],
    ),
    (
        "issue_token",
        "201",
        "ListOwnTokens",
        "list_tokens",
        &[
            ("userId", "$response.body#/user_id"),
            ("header.X-User-Id", "$request.header.X-User-Id"),
        ],
    ),
    (
        "open_account",
        "201",
        "GetAccount",
        "get_account",
        &[("id", "$response.body#/aggregate_id")],
    ),
    (
        "open_account",
        "201",
        "AppendEvent",
        "append_event",
        &[("id", "$response.body#/aggregate_id")],
    ),
    (
        "open_account",
        "201",
        "ListEvents",
        "list_events",
        &[("id", "$response.body#/aggregate_id")],
    ),
    (
        "create_note",
        "201",
        "GetNote",
        "get_note",
        &[("note_id", "$response.body#/id")],
    ),
    (
        "create_note",
        "201",
        "UpdateNote",
        "update_note",
        &[("note_id", "$response.body#/id")],
    ),
    (
        "create_note",
        "201",
        "DeleteNote",
        "delete_note",
        &[("note_id", "$response.body#/id")],
    ),
    (
        "create_note",
        "201",
        "CommentOnNote",
        "create_comment",
        &[("note_id", "$response.body#/id")],
    ),
    (
        "create_note",
        "201",
        "ListComments",
        "list_comments",
        &[("note_id", "$response.body#/id")],
    ),
    (
        "create_tag",
        "201",
        "GetTag",
        "get_tag",
        &[("tag_id", "$response.body#/id")],
    ),
    (
        "create_tag",
        "201",
        "UpdateTag",
        "update_tag",
        &[("tag_id", "$response.body#/id")],
    ),
    (
        "create_tag",
        "201",
        "DeleteTag",
        "delete_tag",
        &[("tag_id", "$response.body#/id")],
    ),
    (
        "create_comment",
        "201",
        "GetComment",
        "get_comment",
        &[
            ("note_id", "$response.body#/note_id"),
            ("comment_id", "$response.body#/id"),
        ],
    ),
    (
        "create_comment",
        "201",
        "UpdateComment",
        "update_comment",
        &[
            ("note_id", "$response.body#/note_id"),
            ("comment_id", "$response.body#/id"),
        ],
    ),
    (
        "create_comment",
        "201",
        "DeleteComment",
        "delete_comment",
        &[
            ("note_id", "$response.body#/note_id"),
            ("comment_id", "$response.body#/id"),
        ],
    ),
    (
        "example_create_note",
        "201",
        "GetNote",
        "example_get_note",
        &[("id", "$response.body#/id")],
    ),
    (
        "example_create_note",
        "201",
        "UpdateNote",
        "example_update_note",
        &[("id", "$response.body#/id")],
    ),
    (
        "example_create_note",
        "201",
        "DeleteNote",
        "example_delete_note",
        &[("id", "$response.body#/id")],
    ),
    (
        "example_create_tag",
        "201",
        "GetTag",
        "example_get_tag",
        &[("id", "$response.body#/id")],
    ),
    (
        "example_create_tag",
        "201",
        "UpdateTag",
        "example_update_tag",
        &[("id", "$response.body#/id")],
    ),
    (
        "example_create_tag",
        "201",
        "DeleteTag",
        "example_delete_tag",
        &[("id", "$response.body#/id")],
    ),
    (
        "create_note_v1",
        "201",
        "GetNoteV1",
        "get_note_v1",
        &[("id", "$response.body#/id")],
    ),
    (
        "create_note_v1",
        "201",
        "GetNoteV2",
        "get_note_v2",
        &[("id", "$response.body#/id")],
    ),
    (
        "create_note_v2",
        "201",
        "GetNoteV2",
        "get_note_v2",
        &[("id", "$response.body#/data/id")],
    ),
    (
        "create_note_v2",
        "201",
        "GetNoteV1",
        "get_note_v1",
        &[("id", "$response.body#/data/id")],
    ),
    // An accepted webhook shows up in the list (newest first).
    (
        "receive_webhook",
        "202",
        "ListWebhookEvents",
        "list_webhook_events",
        &[],
    ),
];
