-- The outbox keeps each event's payload as the JSON text the commit statement built, not as
-- jsonb. Nothing reads the payload back in SQL: the webhook deliveries carry their own frozen
-- body, and the purge reads only ids, users, names and instants (WebhookDeliveries.ts). As
-- jsonb, every write's commit statement parsed the payload it had just concatenated (a task's
-- ~1.2 KB wire text inside it) into jsonb's binary form: a fifth of a PATCH's database CPU
-- (docs/performance.md, "The outbox payload as text"). The text is JSON by construction
-- (JSON.stringify, with the stored compact wire text of a task spliced in).
ALTER TABLE outbox_events ALTER COLUMN payload TYPE text USING payload::text;
