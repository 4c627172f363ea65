-- The minutely sweep that rolls missed recurring reminders forward (ReminderRollForward) read
-- every task of every user: ~2 s of database time a minute at a million tasks, growing with
-- the data. Open recurring reminders are few; this index holds only them, so the sweep reads
-- those rows and nothing else, and a write to any other task only evaluates the predicate.
-- By user first, so a user's own list of recurring reminders can use it too without reading
-- anyone else's.
CREATE INDEX tasks_open_recurring_reminders ON tasks (user_id, due_at)
  WHERE is_reminder AND rrule IS NOT NULL AND NOT done AND deleted_at IS NULL AND archived_at IS NULL;
