-- The enriched fields of a task (AiEnrichment.ENRICHED_FIELDS) as a baseline, for a create's
-- enrichment request and a reprocess alike: timestamps as steady_iso text, the rest as
-- stored. The baseline tells a later user edit from what the create sent.
CREATE OR REPLACE FUNCTION steady_enrichment_baseline(t tasks) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT jsonb_build_object(
  'project_id', t.project_id, 'title', t.title, 'priority', t.priority, 'labels', t.labels, 'notes', t.notes,
  'due_at', steady_iso(t.due_at), 'rrule', t.rrule, 'recurrence_mode', t.recurrence_mode) $$;
