-- Compact JSON on the wire (issue 39): the stored task wire text printed its jsonb columns
-- (labels, quota_prompt_config, quota_day_state) with jsonb's spacing, `["a", "b"]` and
-- `{"did": [], ...}`; it now prints them as JSON.stringify does, through steady_json_compact.
-- The list and single-task envelopes around it are compact too (src/tasks/TaskListSql.ts).
--
-- This migration needs both functions while it runs, so it defines them as their files in
-- migrations/functions/ do (those are applied after it anyway), then renders every stored wire
-- text again: a generated column is computed on each UPDATE of its row.

CREATE OR REPLACE FUNCTION steady_json_compact(j jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
  CASE jsonb_typeof(j)
    WHEN 'object' THEN
      IF j = '{}'::jsonb THEN RETURN '{}'; END IF;
      RETURN '{' || (SELECT string_agg(to_json(e.key)::text || ':' || steady_json_compact(e.value), ',' ORDER BY e.n)
                     FROM jsonb_each(j) WITH ORDINALITY AS e(key, value, n)) || '}';
    WHEN 'array' THEN
      IF j = '[]'::jsonb THEN RETURN '[]'; END IF;
      RETURN '[' || (SELECT string_agg(steady_json_compact(e.value), ',' ORDER BY e.n)
                     FROM jsonb_array_elements(j) WITH ORDINALITY AS e(value, n)) || ']';
    ELSE
      RETURN j::text;
  END CASE;
END $$;

CREATE OR REPLACE FUNCTION steady_task_wire_of(
  t_id integer,
  t_user_id integer,
  t_project_id integer,
  t_title text,
  t_original_title text,
  t_short_title text,
  t_done boolean,
  t_done_at timestamptz,
  t_priority integer,
  t_due_at timestamptz,
  t_rrule text,
  t_recurrence_mode text,
  t_anchor_time text,
  t_anchor_dow integer,
  t_anchor_dom integer,
  t_original_due_at timestamptz,
  t_target_at timestamptz,
  t_deadline_at timestamptz,
  t_horizon text,
  t_horizon_set_at timestamptz,
  t_last_considered_at timestamptz,
  t_segment_deferred_at timestamptz,
  t_segment_targeted_at timestamptz,
  t_target_set_at timestamptz,
  t_target_auto boolean,
  t_occurrence_at timestamptz,
  t_deadline_nag_off boolean,
  t_auto_snooze_minutes integer,
  t_deleted_at timestamptz,
  t_archived_at timestamptz,
  t_labels jsonb,
  t_notes text,
  t_progress_target integer,
  t_progress_current integer,
  t_progress_period_start timestamptz,
  t_quota_prompt_config jsonb,
  t_quota_day_state jsonb,
  t_completion_count integer,
  t_skip_count integer,
  t_first_completed_at timestamptz,
  t_last_completed_at timestamptz,
  t_created_at timestamptz,
  t_updated_at timestamptz,
  t_is_tracked boolean,
  t_is_reminder boolean,
  t_snooze_count integer,
  t_enrichment_status text
) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$ BEGIN RETURN
    '{"id":' || t_id::text
    || ',"user_id":' || t_user_id::text
    || ',"project_id":' || t_project_id::text
    || ',"title":' || to_json(t_title)::text
    || ',"original_title":' || to_json(t_original_title)::text
    || ',"short_title":' || to_json(t_short_title)::text
    || ',"done":' || steady_json_bool(t_done)
    || ',"done_at":' || steady_json_iso(t_done_at)
    || ',"priority":' || t_priority::text
    || ',"due_at":' || steady_json_iso(t_due_at)
    || ',"rrule":' || COALESCE(to_json(t_rrule)::text, 'null')
    || ',"recurrence_mode":' || to_json(t_recurrence_mode)::text
    || ',"anchor_time":' || COALESCE(to_json(t_anchor_time)::text, 'null')
    || ',"anchor_dow":' || t_anchor_dow::text
    || ',"anchor_dom":' || t_anchor_dom::text
    || ',"original_due_at":' || steady_json_iso(t_original_due_at)
    || ',"target_at":' || steady_json_iso(t_target_at)
    || ',"deadline_at":' || steady_json_iso(t_deadline_at)
    || ',"horizon":' || COALESCE(to_json(t_horizon)::text, 'null')
    || ',"horizon_set_at":' || steady_json_iso(t_horizon_set_at)
    || ',"last_considered_at":' || steady_json_iso(t_last_considered_at)
    || ',"segment_deferred_at":' || steady_json_iso(t_segment_deferred_at)
    || ',"segment_targeted_at":' || steady_json_iso(t_segment_targeted_at)
    || ',"target_set_at":' || steady_json_iso(t_target_set_at)
    || ',"target_auto":' || steady_json_bool(t_target_auto)
    || ',"occurrence_at":' || steady_json_iso(t_occurrence_at)
    || ',"deadline_nag_off":' || steady_json_bool(t_deadline_nag_off)
    || ',"auto_snooze_minutes":' || t_auto_snooze_minutes::text
    || ',"deleted_at":' || steady_json_iso(t_deleted_at)
    || ',"archived_at":' || steady_json_iso(t_archived_at)
    || ',"labels":' || steady_json_compact(t_labels)
    || ',"notes":' || to_json(t_notes)::text
    || ',"progress_target":' || t_progress_target::text
    || ',"progress_current":' || t_progress_current::text
    || ',"progress_period_start":' || steady_json_iso(t_progress_period_start)
    || ',"quota_prompt_config":' || COALESCE(steady_json_compact(t_quota_prompt_config), 'null')
    || ',"quota_day_state":' || steady_json_compact(t_quota_day_state)
    || ',"completion_count":' || t_completion_count::text
    || ',"skip_count":' || t_skip_count::text
    || ',"first_completed_at":' || steady_json_iso(t_first_completed_at)
    || ',"last_completed_at":' || steady_json_iso(t_last_completed_at)
    || ',"created_at":' || steady_json_iso(t_created_at)
    || ',"updated_at":' || steady_json_iso(t_updated_at)
    || ',"is_recurring":' || steady_json_bool(t_rrule IS NOT NULL AND NOT (t_is_tracked OR t_progress_target > 1))
    || ',"is_reminder":' || steady_json_bool(t_is_reminder)
    || ',"is_tracked":' || steady_json_bool(t_is_tracked)
    || ',"snooze_count":' || t_snooze_count::text
    -- is_snoozed: an open task that was snoozed and is not back on its original due date. A
    -- plain edit of the due date is a reschedule, not a snooze.
    || ',"is_snoozed":' || steady_json_bool(NOT t_done AND t_snooze_count > 0 AND t_due_at IS DISTINCT FROM t_original_due_at)
    || ',"enrichment_status":' || COALESCE(to_json(t_enrichment_status)::text, 'null')
    || '}';
END $$;

UPDATE tasks SET labels = labels;
