-- The list's shared-project branch (TaskQueries.listJson) reads each shared project's open
-- tasks in due order. On a server whose tables were never analyzed it did that by a full scan
-- of tasks_open_by_due, every user's open tasks (0.5 s at a million tasks): indexes built by
-- these migrations on an empty table keep reltuples = 0 until the first VACUUM or ANALYZE, so
-- PostgreSQL believes a partial index whose predicate a query implies is empty and a full scan
-- of it free. An index with the branch's exact predicate, led by the project and in due order,
-- is believed as small and needs neither a filter nor a sort, so it is the one chosen, with
-- statistics or without (bench/scale.ts: 470 → ~10 ms as written, 1,000,000 others' tasks).
CREATE INDEX tasks_open_by_project ON tasks (project_id, user_id, due_at, id)
  WHERE NOT done AND deleted_at IS NULL AND archived_at IS NULL;
