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

-- is_snoozed: an open task that was snoozed and is not back on its original due date. A
-- plain edit of the due date is a reschedule, not a snooze.
CREATE OR REPLACE FUNCTION steady_task_json(t tasks) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT jsonb_build_object(
  'id', t.id,
  'user_id', t.user_id,
  'project_id', t.project_id,
  'title', t.title,
  'original_title', t.original_title,
  'short_title', t.short_title,
  'done', t.done,
  'done_at', steady_iso(t.done_at),
  'priority', t.priority,
  'due_at', steady_iso(t.due_at),
  'rrule', t.rrule,
  'recurrence_mode', t.recurrence_mode,
  'anchor_time', t.anchor_time,
  'anchor_dow', t.anchor_dow,
  'anchor_dom', t.anchor_dom,
  'original_due_at', steady_iso(t.original_due_at),
  'target_at', steady_iso(t.target_at),
  'deadline_at', steady_iso(t.deadline_at),
  'horizon', t.horizon,
  'horizon_set_at', steady_iso(t.horizon_set_at),
  'last_considered_at', steady_iso(t.last_considered_at),
  'segment_deferred_at', steady_iso(t.segment_deferred_at),
  'segment_targeted_at', steady_iso(t.segment_targeted_at),
  'target_set_at', steady_iso(t.target_set_at),
  'target_auto', t.target_auto,
  'occurrence_at', steady_iso(t.occurrence_at),
  'deadline_nag_off', t.deadline_nag_off,
  'auto_snooze_minutes', t.auto_snooze_minutes,
  'deleted_at', steady_iso(t.deleted_at),
  'archived_at', steady_iso(t.archived_at),
  'labels', t.labels,
  'notes', t.notes,
  'progress_target', t.progress_target,
  'progress_current', t.progress_current,
  'progress_period_start', steady_iso(t.progress_period_start),
  'quota_prompt_config', t.quota_prompt_config,
  'quota_day_state', t.quota_day_state,
  'completion_count', t.completion_count,
  'skip_count', t.skip_count,
  'first_completed_at', steady_iso(t.first_completed_at),
  'last_completed_at', steady_iso(t.last_completed_at),
  'created_at', steady_iso(t.created_at),
  'updated_at', steady_iso(t.updated_at)
) || jsonb_build_object(
  'is_recurring', t.rrule IS NOT NULL AND NOT (t.is_tracked OR t.progress_target > 1),
  'is_reminder', t.is_reminder,
  'is_tracked', t.is_tracked,
  'snooze_count', t.snooze_count,
  'is_snoozed', NOT t.done AND t.snooze_count > 0 AND t.due_at IS DISTINCT FROM t.original_due_at
) $$;
