-- Completion history (spec §2.3). A row is written when a task is marked done (and, for
-- quotas, when a period that met its target closes); taking a completion back deletes it.
CREATE TABLE completions (
  id              serial PRIMARY KEY,
  task_id         integer NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  user_id         integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  completed_at    timestamptz NOT NULL,
  due_at_was      timestamptz,
  due_at_next     timestamptz,
  task_title      text NOT NULL,
  project_id      integer NOT NULL,
  is_reminder     boolean NOT NULL DEFAULT false,
  is_tracked      boolean NOT NULL DEFAULT false,
  progress_target integer NOT NULL DEFAULT 1
);
CREATE INDEX completions_user_time ON completions (user_id, completed_at DESC, id DESC);
CREATE INDEX completions_task ON completions (task_id, completed_at DESC, id DESC);
