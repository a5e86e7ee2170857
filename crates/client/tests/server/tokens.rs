//! Users and tokens: issue, list, verify, rotate, revoke, and tokens as the client's credential.

use client::{Client, ClientError, IssueToken, NoteInput, PageRequest, Scope, Slug, UserInput};
use server::auth::ApiAuth;

use crate::{KEY, Running, connect};

on_both_backends!(
    token_lifecycle,
    issued_tokens_authenticate_the_client => tokens_mode,
);

/// `API_AUTH=tokens`: every route but a few public ones needs a bearer token.
fn tokens_mode(settings: &mut server::Settings) {
    settings.api_auth = ApiAuth::Tokens;
}

async fn token_lifecycle(server: Running) {
    let api = connect(&server);
    let user = api.users().create(&UserInput::new("ann")).await.unwrap();
    assert_eq!(user.name, "ann");
    let tokens = api.users().tokens(user.id);
    let issued = tokens
        .issue(&IssueToken {
            scope: Some(Scope::Write),
            label: Some("ci".into()),
            ..IssueToken::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (issued.user_id, issued.scope, issued.label.as_str()),
        (user.id, Scope::Write, "ci")
    );
    assert_eq!(issued.token.expose().len(), 64);
    assert!(!format!("{issued:?}").contains(issued.token.expose()));

    let check = api.users().verify_token(&issued.token).await.unwrap();
    assert_eq!(
        (check.valid, check.user_id, check.scope),
        (true, Some(user.id), Some(Scope::Write))
    );
    let unknown = client::RawToken::new("0".repeat(64));
    let check = api.users().verify_token(&unknown).await.unwrap();
    assert_eq!(
        (check.valid, check.user_id, check.scope),
        (false, None, None)
    );

    let rotated = tokens.rotate(issued.id).await.unwrap();
    assert_ne!(rotated.token, issued.token);
    assert_eq!(
        (rotated.scope, rotated.label.as_str()),
        (Scope::Write, "ci")
    );
    assert!(!api.users().verify_token(&issued.token).await.unwrap().valid);
    assert!(
        api.users()
            .verify_token(&rotated.token)
            .await
            .unwrap()
            .valid
    );

    let list = tokens.list(PageRequest::default()).await.unwrap();
    assert_eq!(list.total, 2);
    let listed: Vec<_> = list
        .items
        .iter()
        .map(|t| (t.id, t.revoked_at.is_some()))
        .collect();
    assert_eq!(
        listed,
        vec![(rotated.id, false), (issued.id, true)],
        "newest first"
    );
    let page = tokens.list(PageRequest::new(1, 1)).await.unwrap();
    assert_eq!((page.total, page.items.len()), (2, 1));

    tokens.revoke(rotated.id).await.unwrap();
    let check = api.users().verify_token(&rotated.token).await.unwrap();
    assert_eq!((check.valid, check.user_id), (false, Some(user.id)));
    match tokens.revoke(rotated.id).await.unwrap_err() {
        ClientError::Refused { status, error, .. } => {
            assert_eq!((status, error.as_str()), (409, "token already revoked"))
        }
        other => panic!("{other:?}"),
    }
    match api
        .users()
        .tokens(user.id + 100)
        .list(PageRequest::default())
        .await
    {
        Err(ClientError::Refused {
            status: 404, error, ..
        }) => assert_eq!(error, "user not found"),
        other => panic!("{other:?}"),
    }
    match api.users().create(&UserInput::new(" ")).await {
        Err(ClientError::Refused {
            status: 422, error, ..
        }) => assert_eq!(error, "name is required"),
        other => panic!("{other:?}"),
    }
}

async fn issued_tokens_authenticate_the_client(server: Running) {
    let anonymous = connect(&server);
    let err = anonymous
        .notes()
        .list(PageRequest::default())
        .await
        .unwrap_err();
    assert!(err.is(Slug::Unauthorized), "{err:?}");
    // The operator key makes users and their first tokens.
    let operator = Client::builder(&server.base).api_key(KEY).build().unwrap();
    let user = operator
        .users()
        .create(&UserInput::new("ann"))
        .await
        .unwrap();
    let tokens = operator.users().tokens(user.id);
    let scoped = |scope| IssueToken {
        scope: Some(scope),
        ..IssueToken::default()
    };
    let writer = tokens.issue(&scoped(Scope::Write)).await.unwrap();
    let reader = tokens.issue(&scoped(Scope::Read)).await.unwrap();
    let as_user = |token: &client::RawToken| {
        Client::builder(&server.base)
            .bearer_token(token.expose())
            .build()
            .unwrap()
    };

    let note = as_user(&writer.token)
        .notes()
        .create(&NoteInput::new("mine", "b"))
        .await
        .unwrap();
    let reading = as_user(&reader.token);
    assert_eq!(reading.notes().get(note.id).await.unwrap(), note);
    let err = reading
        .notes()
        .create(&NoteInput::new("x", "y"))
        .await
        .unwrap_err();
    assert!(err.is(Slug::Forbidden), "{err:?}");

    tokens.revoke(writer.id).await.unwrap();
    let err = as_user(&writer.token)
        .notes()
        .get(note.id)
        .await
        .unwrap_err();
    assert!(err.is(Slug::Unauthorized), "{err:?}");
    // Verification is public.
    let check = anonymous.users().verify_token(&reader.token).await.unwrap();
    assert_eq!((check.valid, check.scope), (true, Some(Scope::Read)));
}
