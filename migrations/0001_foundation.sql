-- Users, their credentials and preferences.
CREATE TABLE users (
  id          serial PRIMARY KEY,
  username    text NOT NULL,
  timezone    text NOT NULL DEFAULT 'UTC',
  preferences jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL
);
CREATE UNIQUE INDEX users_username_key ON users (lower(username));

CREATE TABLE api_tokens (
  id            serial PRIMARY KEY,
  user_id       integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name          text NOT NULL,
  token_hash    text NOT NULL UNIQUE,
  token_preview text NOT NULL,
  created_at    timestamptz NOT NULL,
  last_used_at  timestamptz
);
CREATE INDEX api_tokens_user ON api_tokens (user_id, created_at DESC, id DESC);

-- A browser session minted from a token; revoking the token ends its sessions.
CREATE TABLE auth_sessions (
  id          serial PRIMARY KEY,
  user_id     integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_id    integer REFERENCES api_tokens (id) ON DELETE CASCADE,
  secret_hash text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL
);

CREATE TABLE projects (
  id          serial PRIMARY KEY,
  owner_id    integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name        text NOT NULL,
  shared      boolean NOT NULL DEFAULT false,
  sort_order  integer NOT NULL DEFAULT 0,
  color       text NOT NULL DEFAULT '',
  description text NOT NULL DEFAULT '',
  is_inbox    boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);
CREATE INDEX projects_owner ON projects (owner_id, sort_order, name);
CREATE UNIQUE INDEX projects_one_inbox ON projects (owner_id) WHERE is_inbox;
CREATE INDEX projects_shared ON projects (id) WHERE shared;

CREATE TABLE time_slots (
  id         serial PRIMARY KEY,
  user_id    integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  label      text NOT NULL,
  start_time text NOT NULL,
  sort_order integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  UNIQUE (user_id, start_time)
);

CREATE TABLE tasks (
  id                  serial PRIMARY KEY,
  user_id             integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  project_id          integer NOT NULL REFERENCES projects (id),
  title               text NOT NULL,
  original_title      text NOT NULL,
  short_title         text NOT NULL DEFAULT '',
  done                boolean NOT NULL DEFAULT false,
  done_at             timestamptz,
  priority            integer NOT NULL DEFAULT 0,
  due_at              timestamptz,
  rrule               text,
  recurrence_mode     text NOT NULL DEFAULT 'from_due',
  anchor_time         text,
  anchor_dow          integer NOT NULL DEFAULT 0,
  anchor_dom          integer NOT NULL DEFAULT 0,
  original_due_at     timestamptz,
  previous_due_at     timestamptz,
  target_at           timestamptz,
  deadline_at         timestamptz,
  horizon             text,
  horizon_set_at      timestamptz,
  last_considered_at  timestamptz,
  segment_deferred_at timestamptz,
  segment_targeted_at timestamptz,
  target_set_at       timestamptz,
  target_auto         boolean NOT NULL DEFAULT false,
  occurrence_at       timestamptz,
  deadline_nag_off    boolean NOT NULL DEFAULT false,
  auto_snooze_minutes integer NOT NULL DEFAULT 0,
  deleted_at          timestamptz,
  archived_at         timestamptz,
  labels              jsonb NOT NULL DEFAULT '[]'::jsonb,
  notes               text NOT NULL DEFAULT '',
  is_reminder         boolean NOT NULL DEFAULT false,
  is_tracked          boolean NOT NULL DEFAULT false,
  progress_target     integer NOT NULL DEFAULT 1,
  progress_current    integer NOT NULL DEFAULT 0,
  progress_period_start timestamptz,
  quota_prompt_config jsonb,
  quota_day_state     jsonb NOT NULL DEFAULT '{"date": null, "logged": 0, "did": [], "considered": [], "did_applied": {}}'::jsonb,
  completion_count    integer NOT NULL DEFAULT 0,
  skip_count          integer NOT NULL DEFAULT 0,
  snooze_count        integer NOT NULL DEFAULT 0,
  first_completed_at  timestamptz,
  last_completed_at   timestamptz,
  enrichment_requested_at timestamptz,
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL
);
-- The default list (open, not trashed, not archived, by due date) reads this index in order.
CREATE INDEX tasks_open_by_due ON tasks (user_id, due_at, id)
  WHERE NOT done AND deleted_at IS NULL AND archived_at IS NULL;
CREATE INDEX tasks_by_user ON tasks (user_id, id);
CREATE INDEX tasks_by_project ON tasks (project_id, due_at, id) WHERE deleted_at IS NULL;
CREATE INDEX tasks_trash ON tasks (user_id, deleted_at DESC) WHERE deleted_at IS NOT NULL;

-- The undo log: one row per recorded action, with the before/after of every field it changed.
CREATE TABLE undo_entries (
  id             serial PRIMARY KEY,
  user_id        integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  action         text NOT NULL,
  description    text NOT NULL,
  changes        jsonb NOT NULL,
  tasks_affected integer NOT NULL DEFAULT 0,
  undone         boolean NOT NULL DEFAULT false,
  created_at     timestamptz NOT NULL
);
CREATE INDEX undo_entries_user ON undo_entries (user_id, id DESC);

-- Domain events written in the same transaction as the change (the webhook outbox).
CREATE TABLE outbox_events (
  id          bigserial PRIMARY KEY,
  user_id     integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  event       text NOT NULL,
  task_id     integer,
  payload     jsonb NOT NULL,
  occurred_at timestamptz NOT NULL
);
CREATE INDEX outbox_events_user ON outbox_events (user_id, id);

CREATE TABLE daily_stats (
  id            serial PRIMARY KEY,
  user_id       integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  date          date NOT NULL,
  completions   integer NOT NULL DEFAULT 0,
  tasks_created integer NOT NULL DEFAULT 0,
  snoozes       integer NOT NULL DEFAULT 0,
  UNIQUE (user_id, date)
);

-- Wire formats are built here, once, so lists are one JSON text from the database.
CREATE FUNCTION steady_iso(ts timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

CREATE FUNCTION steady_task_json(t tasks) RETURNS jsonb
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
  'is_snoozed', NOT t.done AND t.due_at IS NOT NULL AND t.original_due_at IS NOT NULL AND t.due_at <> t.original_due_at
) $$;
