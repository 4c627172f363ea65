-- steady_iso was declared IMMUTABLE, but to_char(timestamp, text) is only STABLE, so
-- PostgreSQL refused to inline it and ran it through the SQL-function executor on every
-- call: ~16 calls per task made that most of the cost of a task list. Declared STABLE (what
-- its body really is) it is inlined into steady_task_json and its callers. Same output.
CREATE OR REPLACE FUNCTION steady_iso(ts timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

-- The task wire object (spec §2.1) as `json`, for lists and single reads. jsonb_build_object
-- sorted and re-encoded 48 keys per task, and json_build_object looks up the type of each of
-- its 96 arguments on every call; row_to_json over a row of a declared composite type does
-- neither, so a page of 50 tasks renders in about a third of the time. The keys come out in
-- the order below (jsonb sorted them); the values are the same.
--
-- Adding a field to the wire: add it to the type and to the ROW(...) in the same position.
CREATE TYPE steady_task_wire_row AS (
  id                    integer,
  user_id               integer,
  project_id            integer,
  title                 text,
  original_title        text,
  short_title           text,
  done                  boolean,
  done_at               text,
  priority              integer,
  due_at                text,
  rrule                 text,
  recurrence_mode       text,
  anchor_time           text,
  anchor_dow            integer,
  anchor_dom            integer,
  original_due_at       text,
  target_at             text,
  deadline_at           text,
  horizon               text,
  horizon_set_at        text,
  last_considered_at    text,
  segment_deferred_at   text,
  segment_targeted_at   text,
  target_set_at         text,
  target_auto           boolean,
  occurrence_at         text,
  deadline_nag_off      boolean,
  auto_snooze_minutes   integer,
  deleted_at            text,
  archived_at           text,
  labels                jsonb,
  notes                 text,
  progress_target       integer,
  progress_current      integer,
  progress_period_start text,
  quota_prompt_config   jsonb,
  quota_day_state       jsonb,
  completion_count      integer,
  skip_count            integer,
  first_completed_at    text,
  last_completed_at     text,
  created_at            text,
  updated_at            text,
  is_recurring          boolean,
  is_reminder           boolean,
  is_tracked            boolean,
  snooze_count          integer,
  is_snoozed            boolean
);

-- PL/pgSQL, not SQL, on purpose. A SQL function would be inlined into every statement that
-- calls it, and the service's driver sends unnamed statements, which PostgreSQL plans on every
-- execution: planning this 48-field expression took longer than rendering a task (~0.2 ms per
-- statement, four fifths of a single-task read). PL/pgSQL plans the expression once per
-- connection and keeps the plan; a call then costs a few microseconds more per task than the
-- inlined form, which only shows on pages of hundreds of tasks.
CREATE FUNCTION steady_task_wire(t tasks) RETURNS json
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
  NOT t.done AND t.snooze_count > 0 AND t.due_at IS DISTINCT FROM t.original_due_at
)::steady_task_wire_row); END $$;

-- One definition of the wire format: the jsonb form (mutation responses, events, the undo
-- log) is the json form parsed.
CREATE OR REPLACE FUNCTION steady_task_json(t tasks) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT steady_task_wire(t)::jsonb $$;

-- Every mutation clears the user's redo stack (DELETE FROM undo_entries WHERE user_id = $1
-- AND undone). Undone entries are few, but without this index that statement scanned the
-- whole undo log, which only grows: ~1 ms per write at 20,000 entries, linear beyond.
CREATE INDEX undo_entries_undone ON undo_entries (user_id) WHERE undone;
