-- Goal: enrichment adds nothing to POST /api/tasks. A create that enriches no longer
-- writes a queue row in its own statement. The task row it inserts anyway carries the request:
-- enrichment_status 'pending' and the enriched fields as created (the baseline that tells a
-- later user edit from the create). The worker moves such tasks into ai_enrichment_queue
-- (EnrichmentQueue.promote) just before it claims work, so the durable request is the same row
-- that holds the task, and a create costs one index entry more instead of a second row with
-- its key, its due index and its foreign-key check (~0.14 ms of the embedded database's one
-- thread per create, ~10 % of its create throughput). finish() clears the baseline.
ALTER TABLE tasks ADD COLUMN enrichment_baseline jsonb;
-- Pending tasks in id order (creation order): the promotion's scan, and the pending counts.
CREATE INDEX tasks_enrichment_pending ON tasks (id) WHERE enrichment_status = 'pending';
