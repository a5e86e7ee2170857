//! `/v1` (deprecated: every answer carries its warning) and `/v2` notes, one store behind both.

use client::{NoteV1Input, NoteV2Input, PageRequest, Slug};

use crate::{Running, connect};

on_both_backends!(v1_calls_carry_a_deprecation_warning, v2_notes,);

async fn v1_calls_carry_a_deprecation_warning(server: Running) {
    let api = connect(&server);
    let created = api
        .v1_notes()
        .create(&NoteV1Input::new("old").content("style"))
        .await
        .unwrap();
    assert_eq!(created.value.content, "style");
    let warning = created.warning.expect("V1 answers are deprecated");
    assert!(warning.sunset.is_some());
    assert!(warning.days_left.is_some());
    assert_eq!(warning.successor.as_deref(), Some("/v2/notes"));
    let list = api.v1_notes().list(PageRequest::default()).await.unwrap();
    assert_eq!(list.value.notes, vec![created.value.clone()]);
    assert!(list.warning.is_some());
    let one = api.v1_notes().get(created.value.id).await.unwrap();
    assert_eq!(one.value, created.value);
    assert!(one.warning.is_some());
    let err = api.v1_notes().get(424_242).await.unwrap_err();
    assert!(err.is(Slug::NotFound));

    // One store behind both versions; V2 answers carry no warning.
    let v2 = api.v2_notes().get(created.value.id).await.unwrap();
    assert_eq!((v2.title.as_str(), v2.body.as_str()), ("old", "style"));

    // Four V1 calls so far, all from this one (anonymous) caller.
    let usage = api.v1_usage(PageRequest::new(10, 0)).await.unwrap();
    assert_eq!(usage.total, 1);
    assert_eq!(usage.items[0].calls, 4);
    assert!(usage.items[0].caller.starts_with("ip:"), "{usage:?}");
}

async fn v2_notes(server: Running) {
    let api = connect(&server);
    let notes = api.v2_notes();
    let first = notes
        .create(&NoteV2Input::new("one").body("b").tags(["x", "x", "y"]))
        .await
        .unwrap();
    assert_eq!(first.tags, ["x", "x", "y"]);
    let second = notes.create(&NoteV2Input::new("two")).await.unwrap();
    assert_eq!((second.body.as_str(), second.tags.len()), ("", 0));
    assert_eq!(notes.get(first.id).await.unwrap(), first);

    let list = notes.list(PageRequest::new(1, 0)).await.unwrap();
    assert_eq!(list.data, vec![second.clone()], "id descending");
    assert_eq!((list.meta.limit, list.meta.total), (1, 2));

    let tagged = notes.get_tagged(first.id).await.unwrap();
    assert_eq!(tagged.value, first);
    assert_eq!(
        notes
            .get_if_none_match(first.id, &tagged.etag)
            .await
            .unwrap(),
        None
    );
    let other = notes.get_tagged(second.id).await.unwrap().etag;
    assert_ne!(other, tagged.etag);
    let fresh = notes.get_if_none_match(first.id, &other).await.unwrap();
    assert_eq!(fresh, Some(tagged));
    assert!(notes.get(9_999).await.unwrap_err().is(Slug::NotFound));
}
