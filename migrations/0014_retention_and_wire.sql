-- Issue 17: the outbox purge keeps an event while any delivery row of it is left. Deliveries
-- are written in the event's transaction with the event's user, name and instant; this index
-- lets the purge find them for each event instead of scanning the delivery log.
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (user_id, created_at);
