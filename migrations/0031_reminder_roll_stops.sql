-- The missed-reminder sweep (MissedReminders) read the first 1,000 candidates by id every
-- minute and passed over, without a trace, those it could not roll: a series that has ended
-- (COUNT spent, UNTIL passed) or a stored rule the expander refuses. Such rows stay missed
-- for ever, so 1,000 of them in front held back every reminder behind them, of every user.
--
-- `roll_stopped_at`: when the sweep found nothing to roll the reminder to (its series has no
-- occurrence after that moment, or its rule is refused); null while it rolls. The reminder
-- itself is left as the user sees it: its last occurrence stays its due date and it waits in
-- the day's reminders like a missed one-off reminder until completed (which archives it).
-- Not part of the wire, so setting it changes nothing a client sees.
ALTER TABLE tasks ADD COLUMN roll_stopped_at timestamptz;

-- Only the reminders the sweep can still roll, keyed by id so the sweep pages through them
-- with an id cursor; `due_at` beside it is checked on the index entries, so the reminders not
-- due yet cost no heap read. The (user_id, due_at) index of migration 0019 stays for a user's
-- own list of open recurring reminders; it holds the same few rows.
CREATE INDEX tasks_reminders_to_roll ON tasks (id, due_at)
  WHERE is_reminder AND rrule IS NOT NULL AND NOT done AND deleted_at IS NULL AND archived_at IS NULL
    AND roll_stopped_at IS NULL;

-- A change to what the next occurrence is computed from (the rule, the due date, the series
-- start, the anchor) puts a stopped reminder back in the sweep's hands, whichever write path
-- made it: a new rule, a rescheduled due date, an undo, an undone completion. The sweep stops
-- it again at once if it still has nothing to roll to. The WHEN is checked in C: other
-- updates pay nothing, and the sweep's own write of the mark changes none of these columns.
CREATE FUNCTION steady_resume_reminder_roll() RETURNS trigger
LANGUAGE plpgsql
AS $$ BEGIN
  NEW.roll_stopped_at := NULL;
  RETURN NEW;
END $$;

CREATE TRIGGER tasks_resume_reminder_roll BEFORE UPDATE ON tasks FOR EACH ROW
  WHEN (OLD.roll_stopped_at IS NOT NULL AND NEW.roll_stopped_at IS NOT NULL AND (
    OLD.rrule IS DISTINCT FROM NEW.rrule OR OLD.due_at IS DISTINCT FROM NEW.due_at
    OR OLD.series_start_at IS DISTINCT FROM NEW.series_start_at OR OLD.anchor_time IS DISTINCT FROM NEW.anchor_time))
  EXECUTE FUNCTION steady_resume_reminder_roll();
