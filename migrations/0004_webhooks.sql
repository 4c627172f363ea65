-- Outgoing webhooks (spec §4.8, §6; CONTRACT §9).
CREATE TABLE webhooks (
  id         serial PRIMARY KEY,
  user_id    integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  url        text NOT NULL,
  events     jsonb NOT NULL,
  secret     text NOT NULL,
  active     boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX webhooks_user ON webhooks (user_id, id);

-- The outbox of deliveries: one row per event and matching webhook, written in the same
-- transaction as the change, with the body bytes frozen then.
CREATE TABLE webhook_deliveries (
  id              bigserial PRIMARY KEY,
  webhook_id      integer NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  user_id         integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  delivery_id     text NOT NULL UNIQUE,
  event           text NOT NULL,
  body            text NOT NULL,
  status          text NOT NULL DEFAULT 'pending',
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  lease_until     timestamptz,
  created_at      timestamptz NOT NULL,
  finished_at     timestamptz
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE status <> 'pending';

-- Every attempt, as GET /api/webhooks/{id}/deliveries shows it.
CREATE TABLE webhook_attempts (
  id          bigserial PRIMARY KEY,
  webhook_id  integer NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  delivery_id text NOT NULL,
  event       text NOT NULL,
  payload     jsonb NOT NULL,
  status_code integer,
  error       text,
  attempt     integer NOT NULL,
  success     boolean NOT NULL,
  duration_ms integer NOT NULL,
  created_at  timestamptz NOT NULL
);
CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, id DESC);
CREATE INDEX webhook_attempts_created ON webhook_attempts (created_at);
