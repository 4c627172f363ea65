-- Instance-wide settings generated once, such as the web push (VAPID) key pair.
CREATE TABLE app_settings (
  key   text PRIMARY KEY,
  value jsonb NOT NULL
);
