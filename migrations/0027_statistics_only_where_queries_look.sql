-- Cheaper ANALYZE, for the embedded database's maintenance fiber above all: PGlite has one
-- connection, so while it runs `VACUUM (ANALYZE) tasks` every request waits. ANALYZE reads a
-- sample of rows and builds statistics for every column; most of ours are only ever returned,
-- never filtered, joined or grouped on, and the widest (the stored wire text, the undo
-- entries' before/after rows) cost the most to read. Measured on PGlite after 12,000 creates:
-- ANALYZE tasks 270 ms, undo_entries 313 ms, each holding the database that long, under a
-- steady write load once every maintenance poll (10 s).
--
-- A statistics target of 0 leaves a column out of ANALYZE; the planner then uses its default
-- estimates for it, which are what every column gets on a database never analyzed, and every
-- hot read is checked to plan well there (test/query-plans.test.ts). The columns that queries
-- filter or join on keep their statistics: id, user_id, project_id, done, due_at, rrule,
-- deleted_at, archived_at, is_reminder, is_tracked, progress_target, progress_period_end,
-- enrichment_status (tasks); user_id, undone, created_at (undo entries); everything but the
-- payload (outbox events) and the stored answer (idempotency keys). Measured on that copy:
-- ANALYZE tasks 270 → 93 ms, undo_entries 313 → 40 ms, outbox_events 43 → 29 ms.
ALTER TABLE tasks
  ALTER COLUMN title SET STATISTICS 0,
  ALTER COLUMN original_title SET STATISTICS 0,
  ALTER COLUMN short_title SET STATISTICS 0,
  ALTER COLUMN notes SET STATISTICS 0,
  ALTER COLUMN wire_text SET STATISTICS 0,
  ALTER COLUMN labels SET STATISTICS 0,
  ALTER COLUMN done_at SET STATISTICS 0,
  ALTER COLUMN priority SET STATISTICS 0,
  ALTER COLUMN recurrence_mode SET STATISTICS 0,
  ALTER COLUMN anchor_time SET STATISTICS 0,
  ALTER COLUMN anchor_dow SET STATISTICS 0,
  ALTER COLUMN anchor_dom SET STATISTICS 0,
  ALTER COLUMN original_due_at SET STATISTICS 0,
  ALTER COLUMN previous_due_at SET STATISTICS 0,
  ALTER COLUMN target_at SET STATISTICS 0,
  ALTER COLUMN deadline_at SET STATISTICS 0,
  ALTER COLUMN horizon SET STATISTICS 0,
  ALTER COLUMN horizon_set_at SET STATISTICS 0,
  ALTER COLUMN last_considered_at SET STATISTICS 0,
  ALTER COLUMN segment_deferred_at SET STATISTICS 0,
  ALTER COLUMN segment_targeted_at SET STATISTICS 0,
  ALTER COLUMN target_set_at SET STATISTICS 0,
  ALTER COLUMN target_auto SET STATISTICS 0,
  ALTER COLUMN occurrence_at SET STATISTICS 0,
  ALTER COLUMN deadline_nag_off SET STATISTICS 0,
  ALTER COLUMN auto_snooze_minutes SET STATISTICS 0,
  ALTER COLUMN progress_current SET STATISTICS 0,
  ALTER COLUMN progress_period_start SET STATISTICS 0,
  ALTER COLUMN quota_prompt_config SET STATISTICS 0,
  ALTER COLUMN quota_day_state SET STATISTICS 0,
  ALTER COLUMN completion_count SET STATISTICS 0,
  ALTER COLUMN skip_count SET STATISTICS 0,
  ALTER COLUMN snooze_count SET STATISTICS 0,
  ALTER COLUMN first_completed_at SET STATISTICS 0,
  ALTER COLUMN last_completed_at SET STATISTICS 0,
  ALTER COLUMN enrichment_requested_at SET STATISTICS 0,
  ALTER COLUMN created_at SET STATISTICS 0,
  ALTER COLUMN updated_at SET STATISTICS 0,
  ALTER COLUMN series_start_at SET STATISTICS 0,
  ALTER COLUMN enrichment_baseline SET STATISTICS 0;
ALTER TABLE undo_entries
  ALTER COLUMN action SET STATISTICS 0,
  ALTER COLUMN description SET STATISTICS 0,
  ALTER COLUMN changes SET STATISTICS 0,
  ALTER COLUMN tasks_affected SET STATISTICS 0;
ALTER TABLE outbox_events
  ALTER COLUMN payload SET STATISTICS 0;
ALTER TABLE idempotency_keys
  ALTER COLUMN fingerprint SET STATISTICS 0,
  ALTER COLUMN status SET STATISTICS 0,
  ALTER COLUMN content_type SET STATISTICS 0,
  ALTER COLUMN body SET STATISTICS 0;
