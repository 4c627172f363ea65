-- a write's webhook deliveries (CONTRACT §9) are written by
-- one function, which the commit statement calls only when the user has an active webhook.
-- As CTEs of every commit statement they cost about a tenth of a small write's database time
-- even when they wrote nothing (each data-modifying CTE opens its table and indexes). The
-- statements are those of the CTEs they replace: one delivery row per event and matching
-- active webhook, in event order, with its body frozen; beyond p_max waiting deliveries per
-- webhook the oldest are dropped. Returns how many delivery rows were written.
CREATE FUNCTION steady_deliver(p_user integer, p_at timestamptz, p_events jsonb, p_max integer) RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
  written integer;
BEGIN
  WITH fresh AS (
    SELECT w.id AS webhook_id, w.user_id, e.event, e.body, e.n,
      row_number() OVER (PARTITION BY w.id ORDER BY e.n DESC) AS newest
    FROM jsonb_to_recordset(p_events) AS e(n integer, event text, body text)
    JOIN webhooks w ON w.user_id = p_user AND w.active AND w.events @> jsonb_build_array(e.event)
  ), delivered AS (
    INSERT INTO webhook_deliveries (webhook_id, user_id, delivery_id, event, body, status, next_attempt_at, created_at, finished_at)
    SELECT f.webhook_id, f.user_id, gen_random_uuid()::text, f.event, f.body,
      CASE WHEN f.newest > p_max THEN 'dropped' ELSE 'pending' END,
      p_at, p_at,
      CASE WHEN f.newest > p_max THEN p_at END
    FROM fresh f ORDER BY f.n, f.webhook_id
    RETURNING id
  ), overflow AS (
    UPDATE webhook_deliveries SET status = 'dropped', finished_at = p_at
    WHERE lease_until IS NULL AND status = 'pending' AND id IN (
      SELECT old.id FROM webhooks w
      CROSS JOIN LATERAL (
        SELECT d.id FROM webhook_deliveries d
        WHERE d.webhook_id = w.id AND d.status = 'pending'
        ORDER BY d.id DESC
        OFFSET GREATEST(p_max - (SELECT count(*) FROM fresh f WHERE f.webhook_id = w.id), 0)
      ) old
      WHERE w.user_id = p_user
    )
  )
  SELECT count(*)::integer INTO written FROM delivered;
  RETURN written;
END
$$;
