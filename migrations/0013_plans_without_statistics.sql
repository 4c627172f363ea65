-- plans that need no statistics. The trash list reads the shared projects' trashed
-- tasks project by project in due order; without this index that walk had no index to use and
-- an unanalyzed database scanned the whole table.
CREATE INDEX tasks_trash_by_project ON tasks (project_id, due_at, id) WHERE deleted_at IS NOT NULL;

-- A caller's own tasks in one project, in list order. Without it a project filter walked the
-- project's tasks of every user (tasks_by_project), however few of them were the caller's.
CREATE INDEX tasks_own_by_project ON tasks (user_id, project_id, due_at, id) WHERE deleted_at IS NULL;

