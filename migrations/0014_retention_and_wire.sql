-- the outbox purge keeps an event while any delivery row of it is left. Deliveries
-- are written in the event's transaction with the event's user, name and instant; this index
-- lets the purge find them for each event instead of scanning the delivery log.
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (user_id, created_at);

-- a task rendered in about a third of the time. The task wire object (spec §2.1 plus
-- enrichment_status) was row_to_json over a declared row type inside PL/pgSQL: row_to_json
-- looks up the output of each of its 49 fields on every row, and PL/pgSQL copied each row into
-- a record and read its fields back one by one (~15-50 µs a task). Now the JSON text is
-- concatenated from the columns themselves: casts whose output functions are looked up once
-- per statement, to_json for the strings (the same escaping row_to_json did). Same text,
-- byte for byte, keys in the same order.
--
-- Adding a field to the wire: add it to steady_task_wire_text, in its place.

CREATE FUNCTION steady_json_bool(b boolean) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE b WHEN true THEN 'true' WHEN false THEN 'false' ELSE 'null' END $$;

-- A timestamp as the wire writes it: a quoted steady_iso, or null.
CREATE FUNCTION steady_json_iso(ts timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT COALESCE('"' || steady_iso(ts) || '"', 'null') $$;

-- The wire object as JSON text: the one definition. Inlinable (plain SQL), so a caller that
-- renders many rows in one statement pays its planning once; the columns cast with ::text are
-- NOT NULL in the table (a NULL would null the whole text).
CREATE FUNCTION steady_task_wire_text(t tasks) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT
    '{"id":' || t.id::text
    || ',"user_id":' || t.user_id::text
    || ',"project_id":' || t.project_id::text
    || ',"title":' || to_json(t.title)::text
    || ',"original_title":' || to_json(t.original_title)::text
    || ',"short_title":' || to_json(t.short_title)::text
    || ',"done":' || steady_json_bool(t.done)
    || ',"done_at":' || steady_json_iso(t.done_at)
    || ',"priority":' || t.priority::text
    || ',"due_at":' || steady_json_iso(t.due_at)
    || ',"rrule":' || COALESCE(to_json(t.rrule)::text, 'null')
    || ',"recurrence_mode":' || to_json(t.recurrence_mode)::text
    || ',"anchor_time":' || COALESCE(to_json(t.anchor_time)::text, 'null')
    || ',"anchor_dow":' || t.anchor_dow::text
    || ',"anchor_dom":' || t.anchor_dom::text
    || ',"original_due_at":' || steady_json_iso(t.original_due_at)
    || ',"target_at":' || steady_json_iso(t.target_at)
    || ',"deadline_at":' || steady_json_iso(t.deadline_at)
    || ',"horizon":' || COALESCE(to_json(t.horizon)::text, 'null')
    || ',"horizon_set_at":' || steady_json_iso(t.horizon_set_at)
    || ',"last_considered_at":' || steady_json_iso(t.last_considered_at)
    || ',"segment_deferred_at":' || steady_json_iso(t.segment_deferred_at)
    || ',"segment_targeted_at":' || steady_json_iso(t.segment_targeted_at)
    || ',"target_set_at":' || steady_json_iso(t.target_set_at)
    || ',"target_auto":' || steady_json_bool(t.target_auto)
    || ',"occurrence_at":' || steady_json_iso(t.occurrence_at)
    || ',"deadline_nag_off":' || steady_json_bool(t.deadline_nag_off)
    || ',"auto_snooze_minutes":' || t.auto_snooze_minutes::text
    || ',"deleted_at":' || steady_json_iso(t.deleted_at)
    || ',"archived_at":' || steady_json_iso(t.archived_at)
    || ',"labels":' || t.labels::text
    || ',"notes":' || to_json(t.notes)::text
    || ',"progress_target":' || t.progress_target::text
    || ',"progress_current":' || t.progress_current::text
    || ',"progress_period_start":' || steady_json_iso(t.progress_period_start)
    || ',"quota_prompt_config":' || COALESCE(t.quota_prompt_config::text, 'null')
    || ',"quota_day_state":' || t.quota_day_state::text
    || ',"completion_count":' || t.completion_count::text
    || ',"skip_count":' || t.skip_count::text
    || ',"first_completed_at":' || steady_json_iso(t.first_completed_at)
    || ',"last_completed_at":' || steady_json_iso(t.last_completed_at)
    || ',"created_at":' || steady_json_iso(t.created_at)
    || ',"updated_at":' || steady_json_iso(t.updated_at)
    || ',"is_recurring":' || steady_json_bool(t.rrule IS NOT NULL AND NOT (t.is_tracked OR t.progress_target > 1))
    || ',"is_reminder":' || steady_json_bool(t.is_reminder)
    || ',"is_tracked":' || steady_json_bool(t.is_tracked)
    || ',"snooze_count":' || t.snooze_count::text
    -- is_snoozed: an open task that was snoozed and is not back on its original due date. A
    -- plain edit of the due date is a reschedule, not a snooze.
    || ',"is_snoozed":' || steady_json_bool(NOT t.done AND t.snooze_count > 0 AND t.due_at IS DISTINCT FROM t.original_due_at)
    || ',"enrichment_status":' || COALESCE(to_json(t.enrichment_status)::text, 'null')
    || '}'
$$;

-- The wire object as json, for single rows (gets, mutation responses, events, the undo log).
-- PL/pgSQL on purpose: it plans the expression once per connection, where an inlined call
-- would be planned again by every unprepared statement (~1.5 ms, more than rendering a row).
CREATE OR REPLACE FUNCTION steady_task_wire(t tasks) RETURNS json
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$ BEGIN RETURN steady_task_wire_text(t)::json; END $$;

-- A page of tasks as one JSON array text, in the order of `rows`, as json_agg writes one (lists,
-- the trash). The expression is planned once per connection, as above, and reads the columns
-- of each unnested row directly: no record copied per row, no row looked up again.
CREATE FUNCTION steady_tasks_wire(rows tasks[]) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$ BEGIN
  RETURN '[' || COALESCE((SELECT string_agg(steady_task_wire_text(t), ', ') FROM unnest(rows) t), '') || ']';
END $$;

DROP TYPE steady_task_wire_row;
