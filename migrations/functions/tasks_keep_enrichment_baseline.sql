-- See steady_keep_enrichment_baseline. EnrichmentQueue.promote takes the kept baseline, else
-- the row. The WHEN is checked in C: other updates pay nothing.
CREATE OR REPLACE TRIGGER tasks_keep_enrichment_baseline BEFORE UPDATE ON tasks FOR EACH ROW
  WHEN (OLD.enrichment_status = 'pending' AND OLD.enrichment_baseline IS NULL AND NEW.enrichment_status = 'pending')
  EXECUTE FUNCTION steady_keep_enrichment_baseline();
