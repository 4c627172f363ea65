-- A change to what the next occurrence is computed from (the rule, the due date, the series
-- start, the anchor) puts a stopped reminder back in the sweep's hands, whichever write path
-- made it: a new rule, a rescheduled due date, an undo, an undone completion. The sweep stops
-- it again at once if it still has nothing to roll to. The WHEN is checked in C: other updates
-- pay nothing, and the sweep's own write of the mark changes none of these columns.
CREATE OR REPLACE TRIGGER tasks_resume_reminder_roll BEFORE UPDATE ON tasks FOR EACH ROW
  WHEN (OLD.roll_stopped_at IS NOT NULL AND NEW.roll_stopped_at IS NOT NULL AND (
    OLD.rrule IS DISTINCT FROM NEW.rrule OR OLD.due_at IS DISTINCT FROM NEW.due_at
    OR OLD.series_start_at IS DISTINCT FROM NEW.series_start_at OR OLD.anchor_time IS DISTINCT FROM NEW.anchor_time))
  EXECUTE FUNCTION steady_resume_reminder_roll();
