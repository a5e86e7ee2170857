//! Notes, tags and comments (and their `/examples` aliases), and typed validation problems.

use client::{
    ArticleInput, ClientError, CommentInput, FieldCode, FieldErrorCode, NoteInput, PageRequest,
    ProblemKind, Slug, TagInput, TryStreamExt,
};

use crate::{Running, connect};

on_both_backends!(
    notes_core_and_example_routes_share_a_store,
    validation_problems_are_typed,
    tags_and_comments,
);

async fn notes_core_and_example_routes_share_a_store(server: Running) {
    let api = connect(&server);
    let note = api
        .notes()
        .create(&NoteInput::new("title", "body"))
        .await
        .unwrap();
    assert_eq!(api.example_notes().get(note.id).await.unwrap(), note);
    let updated = api
        .example_notes()
        .update(note.id, &NoteInput::new("t2", "b2"))
        .await
        .unwrap();
    assert_eq!(api.notes().get(note.id).await.unwrap(), updated);
    let second = api
        .example_notes()
        .create(&NoteInput::new("x", "y"))
        .await
        .unwrap();
    let page = api.notes().list(PageRequest::new(1, 1)).await.unwrap();
    assert_eq!((page.total, page.items), (2, vec![second.clone()]));
    assert_eq!(page.next_offset, None);
    let page = api
        .example_notes()
        .list(PageRequest::default())
        .await
        .unwrap();
    assert_eq!((page.limit, page.offset, page.items.len()), (20, 0, 2));

    for i in 0..5 {
        api.notes()
            .create(&NoteInput::new(format!("n{i}"), "b"))
            .await
            .unwrap();
    }
    let every: Vec<_> = api.notes().stream(2).try_collect().await.unwrap();
    let ids: Vec<i64> = every.iter().map(|n| n.id).collect();
    assert_eq!(every.len(), 7);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(every[..2], [updated.clone(), second.clone()]);

    api.example_notes().delete(note.id).await.unwrap();
    let err = api.notes().get(note.id).await.unwrap_err();
    let p = err.problem().unwrap();
    assert_eq!(p.kind, ProblemKind::Known(Slug::NotFound));
    assert_eq!(p.detail, format!("Note {} does not exist.", note.id));
    assert_eq!(p.operation, "get_note");
    let err = api.example_notes().delete(note.id).await.unwrap_err();
    assert_eq!(err.problem().unwrap().operation, "example_delete_note");
}

async fn validation_problems_are_typed(server: Running) {
    let api = connect(&server);
    let err = api
        .notes()
        .create(&NoteInput::new(" ", "x".repeat(10_001)))
        .await
        .unwrap_err();
    let p = err.problem().unwrap();
    assert_eq!(p.kind, ProblemKind::Known(Slug::ValidationFailed));
    let fields: Vec<_> = p
        .errors
        .iter()
        .map(|e| (e.field.as_str(), e.code.clone()))
        .collect();
    assert_eq!(
        fields,
        vec![
            ("title", FieldCode::Known(FieldErrorCode::Required)),
            ("body", FieldCode::Known(FieldErrorCode::TooLong)),
        ]
    );
    let err = api
        .notes()
        .list(PageRequest::new(1000, 0))
        .await
        .unwrap_err();
    assert!(err.is(Slug::ValidationFailed));
    let err = api
        .articles()
        .create(&ArticleInput::new("t", " "))
        .await
        .unwrap_err();
    assert_eq!(err.problem().unwrap().errors[0].field, "author");
    let err = api.accounts().get("..").await.unwrap_err();
    assert!(matches!(err, ClientError::InvalidInput(_)), "{err:?}");
    let err = api.accounts().get("no/such").await.unwrap_err();
    assert!(err.is(Slug::NotFound), "{err:?}");
}

async fn tags_and_comments(server: Running) {
    let api = connect(&server);
    let tag = api
        .example_tags()
        .create(&TagInput::new("rust"))
        .await
        .unwrap();
    assert_eq!(api.tags().get(tag.id).await.unwrap(), tag);
    let err = api.tags().create(&TagInput::new("rust")).await.unwrap_err();
    assert!(err.is(Slug::Conflict));
    let renamed = api
        .tags()
        .update(tag.id, &TagInput::new("go"))
        .await
        .unwrap();
    assert_eq!(renamed.name, "go");
    assert_eq!(
        api.example_tags()
            .list(PageRequest::default())
            .await
            .unwrap()
            .items,
        vec![renamed]
    );
    api.tags().delete(tag.id).await.unwrap();
    assert!(api.tags().get(tag.id).await.unwrap_err().is(Slug::NotFound));

    let note = api.notes().create(&NoteInput::new("n", "b")).await.unwrap();
    let comments = api.comments(note.id);
    let c = comments.create(&CommentInput::new("first")).await.unwrap();
    assert_eq!(c.note_id, note.id);
    assert_eq!(comments.get(c.id).await.unwrap(), c);
    let c2 = comments
        .update(c.id, &CommentInput::new("edited"))
        .await
        .unwrap();
    assert_eq!(c2.body, "edited");
    let page = comments.list(PageRequest::default()).await.unwrap();
    assert_eq!((page.total, page.items), (1, vec![c2]));
    comments.delete(c.id).await.unwrap();
    assert_eq!(
        comments.list(PageRequest::default()).await.unwrap().total,
        0
    );
    let err = api.comments(999_999).list(PageRequest::default()).await;
    assert!(err.unwrap_err().is(Slug::NotFound));
}
