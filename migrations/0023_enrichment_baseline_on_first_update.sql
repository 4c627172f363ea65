-- Goal: enrichment adds nothing to POST /api/tasks. A create that enriches no longer sends
-- its baseline (the enriched fields as created, which tell a later user edit from the create).
-- Until something changes the task, the row itself is that baseline; the first UPDATE of a
-- pending task that has none keeps the row as it was before (OLD), so the create's values
-- survive any edit made before the worker queues the request. EnrichmentQueue.promote takes the
-- kept baseline, else the row. The trigger's WHEN is checked in C: other updates pay nothing.

-- The enriched fields of a task (AiEnrichment.ENRICHED_FIELDS) as a baseline, for a create's
-- request and a reprocess alike: timestamps as steady_iso text, the rest as stored.
CREATE FUNCTION steady_enrichment_baseline(t tasks) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT jsonb_build_object(
  'project_id', t.project_id, 'title', t.title, 'priority', t.priority, 'labels', t.labels, 'notes', t.notes,
  'due_at', steady_iso(t.due_at), 'rrule', t.rrule, 'recurrence_mode', t.recurrence_mode) $$;

CREATE FUNCTION steady_keep_enrichment_baseline() RETURNS trigger
LANGUAGE plpgsql
AS $$ BEGIN
  NEW.enrichment_baseline := steady_enrichment_baseline(OLD);
  RETURN NEW;
END $$;

CREATE TRIGGER tasks_keep_enrichment_baseline BEFORE UPDATE ON tasks FOR EACH ROW
  WHEN (OLD.enrichment_status = 'pending' AND OLD.enrichment_baseline IS NULL AND NEW.enrichment_status = 'pending')
  EXECUTE FUNCTION steady_keep_enrichment_baseline();
