-- Calendar feed: one secret key per user, kept only as its SHA-256. The key is the
-- feed URL's only credential (calendar apps subscribe without headers); a new key replaces
-- the old one, and deleting it revokes the feed.
CREATE TABLE calendar_keys (
  user_id    integer PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  key_hash   text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL
);

-- Generated once: the feed's UIDs carry it so two Steady instances never collide in one
-- calendar app.
INSERT INTO app_settings (key, value) VALUES ('instance_id', to_jsonb(gen_random_uuid()::text))
ON CONFLICT (key) DO NOTHING;
