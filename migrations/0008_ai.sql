-- AI helpers: the enrichment queue, the AI activity log, stored what's-next
-- answers and insights sessions, and `enrichment_status` on the task wire object.

-- null (never queued), pending, done or failed. Kept on the task row, in the same
-- transaction as the queue row, so a task list reads it without a join per task.
ALTER TABLE tasks ADD COLUMN enrichment_status text;

-- One row per task that has had enrichment requested. Durable: a restart loses nothing, and
-- a lease (taken with FOR UPDATE SKIP LOCKED) keeps two instances from enriching one task
-- twice. `baseline` holds the task's fields when the request was made: a field whose value
-- differs when the answer arrives was changed by the user and is left alone.
CREATE TABLE ai_enrichment_queue (
  task_id          integer PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
  user_id          integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  state            text NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL,
  lease_until      timestamptz,
  source_title     text NOT NULL,
  baseline         jsonb NOT NULL,
  last_error       text,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX ai_enrichment_due ON ai_enrichment_queue (next_attempt_at, task_id) WHERE state = 'pending';
CREATE INDEX ai_enrichment_by_user ON ai_enrichment_queue (user_id) WHERE state = 'pending';

-- One row per model call; prompt and answer only with SERVICE_AI_LOG_PROMPTS=true.
CREATE TABLE ai_activity (
  id           bigserial PRIMARY KEY,
  user_id      integer REFERENCES users (id) ON DELETE CASCADE,
  feature      text NOT NULL,
  status       text NOT NULL,
  duration_ms  integer NOT NULL,
  provider     text NOT NULL,
  model        text NOT NULL,
  error        text,
  prompt       text,
  answer       text,
  created_at   timestamptz NOT NULL
);
CREATE INDEX ai_activity_by_user ON ai_activity (user_id, created_at DESC);
CREATE INDEX ai_activity_by_age ON ai_activity (created_at);

-- The day's (UTC) what's-next answer per user.
CREATE TABLE ai_whats_next (
  user_id      integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  day          date NOT NULL,
  result       jsonb NOT NULL,
  PRIMARY KEY (user_id, day)
);

CREATE TABLE ai_insight_sessions (
  id           text PRIMARY KEY,
  user_id      integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  status       text NOT NULL CHECK (status IN ('running', 'complete', 'failed')),
  total_tasks  integer NOT NULL,
  completed    integer NOT NULL DEFAULT 0,
  started_at   timestamptz NOT NULL,
  finished_at  timestamptz,
  error        text,
  -- Written after every chunk; a running session whose heartbeat stops was left by a crash.
  heartbeat_at timestamptz NOT NULL
);
-- At most one running session per user: a second generate is a 409, across instances too.
CREATE UNIQUE INDEX ai_insight_one_running ON ai_insight_sessions (user_id) WHERE status = 'running';
CREATE INDEX ai_insight_by_user ON ai_insight_sessions (user_id, started_at DESC);

CREATE TABLE ai_insight_results (
  session_id   text NOT NULL REFERENCES ai_insight_sessions (id) ON DELETE CASCADE,
  task_id      integer NOT NULL,
  score        integer NOT NULL,
  commentary   text NOT NULL,
  signals      jsonb NOT NULL,
  PRIMARY KEY (session_id, task_id)
);

-- The wire object gains enrichment_status, last (spec §2.1 plus this extra field).
ALTER TYPE steady_task_wire_row ADD ATTRIBUTE enrichment_status text;

CREATE OR REPLACE FUNCTION steady_task_wire(t tasks) RETURNS json
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$ BEGIN RETURN row_to_json(ROW(
  t.id,
  t.user_id,
  t.project_id,
  t.title,
  t.original_title,
  t.short_title,
  t.done,
  steady_iso(t.done_at),
  t.priority,
  steady_iso(t.due_at),
  t.rrule,
  t.recurrence_mode,
  t.anchor_time,
  t.anchor_dow,
  t.anchor_dom,
  steady_iso(t.original_due_at),
  steady_iso(t.target_at),
  steady_iso(t.deadline_at),
  t.horizon,
  steady_iso(t.horizon_set_at),
  steady_iso(t.last_considered_at),
  steady_iso(t.segment_deferred_at),
  steady_iso(t.segment_targeted_at),
  steady_iso(t.target_set_at),
  t.target_auto,
  steady_iso(t.occurrence_at),
  t.deadline_nag_off,
  t.auto_snooze_minutes,
  steady_iso(t.deleted_at),
  steady_iso(t.archived_at),
  t.labels,
  t.notes,
  t.progress_target,
  t.progress_current,
  steady_iso(t.progress_period_start),
  t.quota_prompt_config,
  t.quota_day_state,
  t.completion_count,
  t.skip_count,
  steady_iso(t.first_completed_at),
  steady_iso(t.last_completed_at),
  steady_iso(t.created_at),
  steady_iso(t.updated_at),
  t.rrule IS NOT NULL AND NOT (t.is_tracked OR t.progress_target > 1),
  t.is_reminder,
  t.is_tracked,
  t.snooze_count,
  -- is_snoozed: an open task that was snoozed and is not back on its original due date. A
  -- plain edit of the due date is a reschedule, not a snooze.
  NOT t.done AND t.snooze_count > 0 AND t.due_at IS DISTINCT FROM t.original_due_at,
  t.enrichment_status
)::steady_task_wire_row); END $$;
