//! Links between operations (OpenAPI `links`): how a created resource's id feeds the
//! operations on it, for schemathesis' stateful phase.

/// One link per line: `operation status LinkName target parameter=expression ...`; `#`
/// starts a comment.
const LINKS: &str = r"
# Area D. Link values taken from a response body are integers, and schemathesis sends
# them as they are, which a header cannot carry; so the acting user of the follow-up calls
# is the issuing request's own `X-User-Id` (a string).
create_user 201 IssueToken issue_token userId=$response.body#/id
create_user 201 ListTokens list_tokens userId=$response.body#/id
issue_token 201 RevokeToken revoke_token userId=$response.body#/user_id tokenId=$response.body#/id header.X-User-Id=$request.header.X-User-Id
issue_token 201 ListOwnTokens list_tokens userId=$response.body#/user_id header.X-User-Id=$request.header.X-User-Id
open_account 201 GetAccount get_account id=$response.body#/aggregate_id
open_account 201 AppendEvent append_event id=$response.body#/aggregate_id
open_account 201 ListEvents list_events id=$response.body#/aggregate_id
create_note 201 GetNote get_note note_id=$response.body#/id
create_note 201 UpdateNote update_note note_id=$response.body#/id
create_note 201 DeleteNote delete_note note_id=$response.body#/id
create_note 201 CommentOnNote create_comment note_id=$response.body#/id
create_note 201 ListComments list_comments note_id=$response.body#/id
create_tag 201 GetTag get_tag tag_id=$response.body#/id
create_tag 201 UpdateTag update_tag tag_id=$response.body#/id
create_tag 201 DeleteTag delete_tag tag_id=$response.body#/id
create_comment 201 GetComment get_comment note_id=$response.body#/note_id comment_id=$response.body#/id
create_comment 201 UpdateComment update_comment note_id=$response.body#/note_id comment_id=$response.body#/id
create_comment 201 DeleteComment delete_comment note_id=$response.body#/note_id comment_id=$response.body#/id
example_create_note 201 GetNote example_get_note id=$response.body#/id
example_create_note 201 UpdateNote example_update_note id=$response.body#/id
example_create_note 201 DeleteNote example_delete_note id=$response.body#/id
example_create_tag 201 GetTag example_get_tag id=$response.body#/id
example_create_tag 201 UpdateTag example_update_tag id=$response.body#/id
example_create_tag 201 DeleteTag example_delete_tag id=$response.body#/id
create_note_v1 201 GetNoteV1 get_note_v1 id=$response.body#/id
create_note_v1 201 GetNoteV2 get_note_v2 id=$response.body#/id
create_note_v2 201 GetNoteV2 get_note_v2 id=$response.body#/data/id
create_note_v2 201 GetNoteV1 get_note_v1 id=$response.body#/data/id
# An accepted webhook shows up in the list (newest first).
receive_webhook 202 ListWebhookEvents list_webhook_events
";

/// A link of [`LINKS`]: `(operation, status, link name, target operation, parameters)`.
pub(super) type Link<'a> = (&'a str, &'a str, &'a str, &'a str, Vec<(&'a str, &'a str)>);

/// Every link of [`LINKS`].
pub(super) fn links() -> impl Iterator<Item = Link<'static>> {
    LINKS
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (op, status, name, target) =
                (words.next()?, words.next()?, words.next()?, words.next()?);
            let params = words.filter_map(|w| w.split_once('=')).collect();
            Some((op, status, name, target, params))
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_line_is_a_whole_link() {
        let lines = super::LINKS
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim().starts_with('#'))
            .count();
        assert_eq!(super::links().count(), lines);
        assert!(super::links().all(|(_, _, _, _, params)| {
            params
                .iter()
                .all(|(k, v)| !k.is_empty() && v.starts_with('$'))
        }));
    }
}
