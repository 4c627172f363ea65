-- The rollover sweep claims ended quotas in batches, in (period end, id) order after a
-- cursor; with the id in the index that order is read straight off it even when 100,000
-- periods end at the same instant (one local midnight). Same name, same predicate.
DROP INDEX tasks_quota_period_end;
CREATE INDEX tasks_quota_period_end ON tasks (progress_period_end, id)
  WHERE progress_period_end IS NOT NULL AND NOT done AND deleted_at IS NULL;

-- Review sessions (spec §4.4), in the database so that any instance can execute a session
-- another one numbered. One per user: a new review replaces the last. `seq` orders them by
-- creation for the global cap (the oldest go first); `tasks` holds the task ids by number.
CREATE TABLE review_sessions (
  id         uuid PRIMARY KEY,
  user_id    integer NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
  seq        bigserial NOT NULL,
  created_at timestamptz NOT NULL,
  tasks      integer[] NOT NULL
);
CREATE INDEX review_sessions_seq ON review_sessions (seq);
CREATE INDEX review_sessions_created ON review_sessions (created_at);
