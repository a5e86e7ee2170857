//! Creates under an `Idempotency-Key` write once; writes under `If-Match` never lose an update.

use std::collections::HashSet;
use std::future::Future;

use client::{
    ArticleInput, ClientError, CommentInput, Created, NewEvent, NoteInput, NoteV1Input,
    NoteV2Input, OpenAccount, PageRequest, Slug, TagInput, UserInput,
};

use crate::{Running, connect, key};

on_both_backends!(
    idempotent_creates_write_once,
    conditional_writes_never_lose_an_update,
);

/// Sends one keyed create twice: the second answer must replay the first. Answers the value.
async fn replayed<T, Fut>(create: impl Fn() -> Fut) -> T
where
    T: PartialEq + std::fmt::Debug,
    Fut: Future<Output = Result<Created<T>, ClientError>>,
{
    let first = create().await.unwrap();
    let again = create().await.unwrap();
    assert!(!first.replayed && again.replayed, "{first:?} {again:?}");
    assert_eq!((&again.value, &again.etag), (&first.value, &first.etag));
    first.value
}

async fn idempotent_creates_write_once(server: Running) {
    let api = connect(&server);
    let (notes, k) = (api.notes(), key("note-1"));
    let input = NoteInput::new("once", "only");
    let note = replayed(|| notes.create_with_key(&input, &k)).await;
    let count = || async { notes.list(PageRequest::default()).await.unwrap().total };
    assert_eq!(count().await, 1);
    let err = notes
        .create_with_key(&NoteInput::new("other", "body"), &k)
        .await
        .unwrap_err();
    assert!(err.is(Slug::IdempotencyKeyReused), "{err:?}");
    assert_eq!(count().await, 1);
    // Random keys: two plain creates are two rows.
    notes.create(&input).await.unwrap();
    notes.create(&input).await.unwrap();
    assert_eq!(count().await, 3);

    // Every other keyed create answers a replay the same way.
    let [kc, kt, kv1, kv2, ka, ku, ko] = ["c", "t", "v1", "v2", "a", "u", "open"].map(key);
    let (comments, c) = (api.comments(note.id), CommentInput::new("c"));
    replayed(|| comments.create_with_key(&c, &kc)).await;
    let (tags, t) = (api.example_tags(), TagInput::new("t"));
    let tag = replayed(|| tags.create_with_key(&t, &kt)).await;
    // The same key and body on another route is another request.
    let err = api.tags().create_with_key(&t, &kt).await.unwrap_err();
    assert!(err.is(Slug::IdempotencyKeyReused), "{err:?}");
    assert_eq!(api.tags().get(tag.id).await.unwrap(), tag);
    let (v1, input) = (api.v1_notes(), NoteV1Input::new("v1"));
    replayed(|| async {
        let made = v1.create_with_key(&input, &kv1).await?;
        assert!(made.warning.is_some());
        Ok(made.value)
    })
    .await;
    let (v2, input) = (api.v2_notes(), NoteV2Input::new("v2").tags(["a"]));
    replayed(|| v2.create_with_key(&input, &kv2)).await;
    let total = v2.list(PageRequest::default()).await.unwrap().meta.total;
    assert_eq!(total, 2);
    let (articles, article) = (api.articles(), ArticleInput::new("a", "b"));
    replayed(|| articles.create_with_key(&article, &ka)).await;
    let total = articles
        .list_offset(PageRequest::default())
        .await
        .unwrap()
        .total;
    assert_eq!(total, 1);
    let (users, user) = (api.users(), UserInput::new("u"));
    replayed(|| users.create_with_key(&user, &ku)).await;
    // Area D answers even this refusal with its own body.
    match users.create_with_key(&UserInput::new("v"), &ku).await {
        Err(ClientError::Refused { status: 422, .. }) => {}
        other => panic!("{other:?}"),
    }

    // The ledger's keys are the same mechanism: a reused one is 422 there too.
    let (accounts, open) = (api.accounts(), OpenAccount::new("acc", "o"));
    replayed(|| accounts.open_with_key(&open, &ko)).await;
    let (pay, deposit) = (key("pay-1"), NewEvent::deposit(100));
    replayed(|| accounts.append_with_key("acc", &deposit, &pay)).await;
    let err = accounts
        .append_with_key("acc", &NewEvent::deposit(7), &pay)
        .await
        .unwrap_err();
    assert!(err.is(Slug::IdempotencyKeyReused), "{err:?}");
    assert_eq!(accounts.get("acc").await.unwrap().balance_cents, 100);
}

async fn conditional_writes_never_lose_an_update(server: Running) {
    let api = connect(&server);
    let notes = api.notes();
    let note = notes
        .create_with_key(&NoteInput::new("v1", "b"), &key("n"))
        .await
        .unwrap();
    let seen = notes.get_tagged(note.value.id).await.unwrap();
    assert_eq!(
        Some(&seen.etag),
        note.etag.as_ref(),
        "a create answers the GET's tag"
    );
    assert_eq!(
        notes
            .get_if_none_match(note.value.id, &seen.etag)
            .await
            .unwrap(),
        None
    );

    // Two editors read the same version; the second write is refused, nothing written.
    let won = notes
        .update_if_match(note.value.id, &seen.etag, &NoteInput::new("v2", "mine"))
        .await
        .unwrap();
    assert_ne!(won.etag, seen.etag);
    let err = notes
        .update_if_match(note.value.id, &seen.etag, &NoteInput::new("v2", "theirs"))
        .await
        .unwrap_err();
    assert!(err.is(Slug::PreconditionFailed), "{err:?}");
    assert_eq!(err.status(), Some(412));
    assert_eq!(notes.get(note.value.id).await.unwrap().body, "mine");
    let err = notes
        .delete_if_match(note.value.id, &seen.etag)
        .await
        .unwrap_err();
    assert!(err.is(Slug::PreconditionFailed), "{err:?}");
    let fresh = notes
        .get_if_none_match(note.value.id, &seen.etag)
        .await
        .unwrap()
        .expect("changed since");
    assert_eq!(fresh, won);
    notes
        .delete_if_match(note.value.id, &won.etag)
        .await
        .unwrap();
    assert!(
        notes
            .get(note.value.id)
            .await
            .unwrap_err()
            .is(Slug::NotFound)
    );

    // The same on tags and comments.
    let tag = api.tags().create(&TagInput::new("a")).await.unwrap();
    let tag_seen = api.tags().get_tagged(tag.id).await.unwrap();
    api.tags()
        .update(tag.id, &TagInput::new("b"))
        .await
        .unwrap();
    let err = api
        .tags()
        .update_if_match(tag.id, &tag_seen.etag, &TagInput::new("c"))
        .await
        .unwrap_err();
    assert!(err.is(Slug::PreconditionFailed));
    assert_eq!(api.tags().get(tag.id).await.unwrap().name, "b");
    let parent = notes.create(&NoteInput::new("p", "b")).await.unwrap();
    let comments = api.comments(parent.id);
    let c = comments.create(&CommentInput::new("x")).await.unwrap();
    let c_seen = comments.get_tagged(c.id).await.unwrap();
    let c_new = comments
        .update_if_match(c.id, &c_seen.etag, &CommentInput::new("y"))
        .await
        .unwrap();
    assert_eq!(c_new.value.body, "y");
    let tags_seen: HashSet<_> = [tag_seen.etag, c_seen.etag, c_new.etag].into();
    assert_eq!(tags_seen.len(), 3);
}
