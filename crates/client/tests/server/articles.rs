//! Articles: single pages by offset and cursor, and streams that walk every page.

use client::{ArticleInput, CursorRequest, PageRequest, TryStreamExt};

use crate::{Running, connect};

on_both_backends!(articles_pages_and_streams,);

async fn articles_pages_and_streams(server: Running) {
    let api = connect(&server);
    let articles = api.articles();
    let mut made = Vec::new();
    for i in 0..8 {
        let input = ArticleInput::new(format!("article {i}"), "Ann");
        let input = if i % 2 == 0 {
            input.category("even")
        } else {
            input
        };
        made.push(articles.create(&input).await.unwrap());
    }
    assert_eq!(made[0].category.as_deref(), Some("even"));
    assert_eq!(made[1].category, None);
    made.reverse(); // both lists are id descending
    let ids = |list: &[client::Article]| list.iter().map(|a| a.id).collect::<Vec<_>>();

    let page = articles.list_offset(PageRequest::new(3, 3)).await.unwrap();
    assert_eq!(page.items, made[3..6]);
    assert_eq!(
        (page.total, page.has_more, page.next_offset),
        (8, true, Some(6))
    );
    let last = articles.list_offset(PageRequest::new(3, 6)).await.unwrap();
    assert_eq!((ids(&last.items), last.has_more), (ids(&made[6..]), false));

    let first = articles.list_cursor(CursorRequest::new(3)).await.unwrap();
    assert_eq!(first.items, made[..3]);
    assert_eq!(first.next_cursor, Some(made[2].id));
    let next = articles
        .list_cursor(CursorRequest::new(3).after(made[2].id))
        .await
        .unwrap();
    assert_eq!(next.items, made[3..6]);

    // Three pages of three: every article once, in order, by either route.
    let by_offset: Vec<_> = articles.offset_stream(3).try_collect().await.unwrap();
    assert_eq!(by_offset, made);
    let by_cursor: Vec<_> = articles.cursor_stream(3).try_collect().await.unwrap();
    assert_eq!(by_cursor, made);
    let one_page: Vec<_> = articles.cursor_stream(100).try_collect().await.unwrap();
    assert_eq!(one_page, made);

    // Rows inserted while the cursor walk runs never make it repeat or skip one.
    let mut walk = std::pin::pin!(articles.cursor_stream(2));
    let mut seen = vec![walk.try_next().await.unwrap().unwrap()];
    articles
        .create(&ArticleInput::new("late", "Bob"))
        .await
        .unwrap();
    while let Some(article) = walk.try_next().await.unwrap() {
        seen.push(article);
    }
    assert_eq!(seen, made);
}
