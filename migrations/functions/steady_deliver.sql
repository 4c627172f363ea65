-- A write's webhook deliveries (CONTRACT §9), called by the commit statement only when the
-- user has an active webhook (WebhookDeliveries.deliveryWrites): as CTEs of every commit
-- statement they cost about a tenth of a small write's database time even when they wrote
-- nothing. One delivery row per event and matching active webhook (subscribed to the event),
-- in event order, with its body frozen. Returns how many delivery rows were written.
--
-- Overflow, per webhook of the user: at most p_max deliveries wait (status 'pending'). The
-- newest are kept: the write's own new deliveries first (beyond p_max of them in one write,
-- the older ones are written as 'dropped'), then what was already waiting, newest first; the
-- rest is dropped, except deliveries in flight (leased), which count but are left alone. The
-- TypeScript twin of this rule is `deliver` in src/webhooks/DeliveryOverflow.ts, checked
-- against this function on random backlogs by test/sql-rules.test.ts.
--
-- A row another transaction holds is skipped, not waited for (SKIP LOCKED): at a full backlog
-- every write drops the oldest waiting rows, so writes at once, and the dispatcher leasing,
-- reach for the same rows. Waiting for them queued a user's writes one behind the other and,
-- at 32 at once, ended in deadlocks and 503s. A row skipped is being dropped by another write
-- or leased; either way it leaves the backlog. Writes that ran at once can leave a few more
-- than p_max waiting (each counts without the others' new rows, as before); the next write
-- trims back to p_max. The newest waiting row to drop (`edge`) comes from the webhook's index
-- of waiting rows, newest first.
CREATE OR REPLACE FUNCTION steady_deliver(p_user integer, p_at timestamptz, p_events jsonb, p_max integer) RETURNS integer
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
    WHERE id IN (
      SELECT d.id FROM webhooks w
      CROSS JOIN LATERAL (
        SELECT b.id AS edge FROM webhook_deliveries b
        WHERE b.webhook_id = w.id AND b.status = 'pending'
        ORDER BY b.id DESC
        OFFSET GREATEST(p_max - (SELECT count(*) FROM fresh f WHERE f.webhook_id = w.id), 0) LIMIT 1
      ) e
      JOIN webhook_deliveries d ON d.webhook_id = w.id AND d.status = 'pending' AND d.id <= e.edge AND d.lease_until IS NULL
      WHERE w.user_id = p_user
      FOR UPDATE OF d SKIP LOCKED
    )
  )
  SELECT count(*)::integer INTO written FROM delivered;
  RETURN written;
END
$$;
