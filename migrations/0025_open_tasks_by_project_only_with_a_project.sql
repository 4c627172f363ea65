-- no read of a user's own open tasks walks other users' rows. tasks_open_by_project
-- (0020) has the owner as its second key, so "this user's open tasks" (the counts, the candidates
-- of GET /api/process) could be served from it by a condition on that non-leading key: a walk of
-- every user's open tasks, which a never-analyzed database chose about as often as the user's
-- range of tasks_open_by_due (every open-task index is believed empty then, and the costs tie).
-- With `project_id IS NOT NULL` in its predicate (true of every task; project_id is NOT NULL) the
-- index serves only queries that name a project (`project_id = ...` implies it), and a query of
-- the user's open tasks has tasks_open_by_due alone to choose.
CREATE INDEX tasks_open_by_project_named ON tasks (project_id, user_id, due_at, id)
  WHERE NOT done AND deleted_at IS NULL AND archived_at IS NULL AND project_id IS NOT NULL;
DROP INDEX tasks_open_by_project;
ALTER INDEX tasks_open_by_project_named RENAME TO tasks_open_by_project;
