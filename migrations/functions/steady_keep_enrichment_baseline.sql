-- The trigger function of tasks_keep_enrichment_baseline: a create that enriches sends no
-- baseline; until something changes the task, the row itself is that baseline. The first
-- UPDATE of a pending task that has none keeps the row as it was before (OLD), so the create's
-- values survive any edit made before the worker queues the request.
CREATE OR REPLACE FUNCTION steady_keep_enrichment_baseline() RETURNS trigger
LANGUAGE plpgsql
AS $$ BEGIN
  NEW.enrichment_baseline := steady_enrichment_baseline(OLD);
  RETURN NEW;
END $$;
