-- GET /api/tasks/counts counts a user's open tasks, the overdue ones among them and those due
-- today (TaskListSql.countsOf). tasks_open_by_due (0001) already selects exactly the open tasks
-- and holds user_id and due_at; with the three columns "overdue" also reads (is_reminder and,
-- for "not a quota", is_tracked and progress_target) it answers the counts by an index-only
-- scan: ~40 bytes a task instead of its ~1.5 KB row. On the embedded database, whose buffer
-- pool is small (EMBEDDED_SHARED_BUFFERS), the rows of a 10,000-task user did not stay in it and
-- every count read them from the file cache again.
--
-- The extra columns are INCLUDEd, not keys: the lists read the index in (user_id, due_at, id)
-- order as before. None of them is set by a PATCH of the common fields, so those edits stay
-- HOT updates (0035).
CREATE INDEX tasks_open_by_due_counted ON tasks (user_id, due_at, id)
  INCLUDE (is_reminder, is_tracked, progress_target)
  WHERE NOT done AND deleted_at IS NULL AND archived_at IS NULL;
DROP INDEX tasks_open_by_due;
ALTER INDEX tasks_open_by_due_counted RENAME TO tasks_open_by_due;
