-- Idempotency-Key records: the first answer to a keyed write, per user, kept 24 hours.
-- Written in the same transaction as the write itself, so a write never commits without it.
-- Only the primary key: no foreign key to users and no index on expires_at, since every keyed
-- write pays for each (a referential check, another index insert). The hourly purge scans a
-- day's records at most, and drops a deleted user's records when they expire.
CREATE TABLE idempotency_keys (
  user_id      integer NOT NULL,
  key          text NOT NULL,
  -- sha256 of method, path with query, and body: a reuse for another request is a 422.
  fingerprint  text NOT NULL,
  status       integer NOT NULL,
  content_type text,
  body         text NOT NULL,
  created_at   timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (user_id, key)
);
