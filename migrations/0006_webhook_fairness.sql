-- Fair claiming and bounded backlogs: the dispatcher walks the users with waiting
-- deliveries and takes each one's oldest due rows, counting what each already has in flight;
-- a new event trims each webhook's waiting rows to the newest ones.
CREATE INDEX webhook_deliveries_user_due ON webhook_deliveries (user_id, next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (user_id) WHERE status = 'pending' AND lease_until IS NOT NULL;
CREATE INDEX webhook_deliveries_webhook_pending ON webhook_deliveries (webhook_id, id DESC) WHERE status = 'pending';
