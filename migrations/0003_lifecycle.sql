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

-- The first due date of a recurring task's series: COUNT and INTERVAL count from it, so a
-- COUNT=5 rule really ends after five occurrences however the task was completed or skipped.
ALTER TABLE tasks ADD COLUMN series_start_at timestamptz;

-- Quota periods (spec "Quota period rules"). The current period is [progress_period_start,
-- progress_period_end) on the task; each closed period is recorded here exactly once.
ALTER TABLE tasks ADD COLUMN progress_period_end timestamptz;
CREATE INDEX tasks_quota_period_end ON tasks (progress_period_end)
  WHERE progress_period_end IS NOT NULL AND NOT done AND deleted_at IS NULL;

CREATE TABLE quota_periods (
  id           serial PRIMARY KEY,
  task_id      integer NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  user_id      integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  period_start timestamptz NOT NULL,
  period_end   timestamptz NOT NULL,
  count        integer NOT NULL,
  target       integer NOT NULL,
  met          boolean NOT NULL,
  closed_at    timestamptz NOT NULL,
  closed_early boolean NOT NULL DEFAULT false,
  UNIQUE (task_id, period_start)
);

