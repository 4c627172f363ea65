-- the list's shared-project branch reads a shared project's open tasks of other
-- users in due order (TaskListSql.taskListBody: `project_id = p.id AND user_id <> $me ... ORDER BY
-- due_at, id LIMIT n`). tasks_open_by_project (0020, 0025) is keyed (project_id, user_id, due_at,
-- id): with `user_id <> $me` only its first key is a condition, its rows come out in owner order,
-- and a never-analyzed database (above ~50,000 tasks) read and sorted every open task of the
-- project before returning the first 50 (bench/scale.ts, 1,000,000 tasks of others, 5,062 of them
-- in the shared project: 7–9 ms as written against 0.6 ms analyzed). Keyed (project_id, due_at,
-- id) the walk is in due order and stops after the page.
--
-- The last clause of the predicate is true of every row (project_id is NOT NULL) and is there so
-- that only the shared branch, which states it word for word (`TaskListSql.sharedWalk`), can use
-- the index: PostgreSQL proves a predicate like this only from an identical clause. Without it,
-- a user's own open tasks in one project (`user_id = $me AND project_id = $p`) took this index,
-- believed as small as tasks_open_by_project, and walked every owner's tasks in the project.
CREATE INDEX tasks_open_in_project_by_due ON tasks (project_id, due_at, id)
  WHERE NOT done AND deleted_at IS NULL AND archived_at IS NULL AND num_nulls(project_id) = 0;
