-- Per-user token buckets for the AI endpoints that reach the model on demand (reprocess,
-- quick take). In the database rather than in a process's memory, so several instances
-- behind one load balancer share one limit per user. One row per user and limit: `tokens`
-- as of `updated_at`, refilled continuously when the next request reads it.
CREATE TABLE ai_rate_limits (
  user_id     integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  bucket      text NOT NULL CHECK (bucket IN ('reprocess', 'quick_take')),
  tokens      double precision NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (user_id, bucket)
);
