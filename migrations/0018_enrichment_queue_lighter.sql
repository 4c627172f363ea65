-- Goal: enrichment adds nothing to POST /api/tasks. The queue row written by a
-- create that enriches carries one foreign key and one partial index less.
-- - The row's user is its task's owner: deleting the user deletes the task, whose foreign key
--   deletes the row (ON DELETE CASCADE), so a second check against users on every create
--   protects nothing.
-- - A user's pending count (GET /api/ai/status) reads the pending rows through
--   ai_enrichment_due; pending rows are few, as the worker drains them.
ALTER TABLE ai_enrichment_queue DROP CONSTRAINT ai_enrichment_queue_user_id_fkey;
DROP INDEX ai_enrichment_by_user;
