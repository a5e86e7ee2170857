-- Area C: V1 calls per caller (`user:<X-User-Id>` or `ip:<client address>`), shared by every
-- instance so the counts are complete before the V1 sunset.
CREATE TABLE v1_usage (
    caller TEXT PRIMARY KEY NOT NULL,
    calls BIGINT NOT NULL,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL
);
