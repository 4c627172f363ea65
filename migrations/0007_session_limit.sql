-- A user's browser sessions are trimmed when a new one is minted: by user, newest first.
CREATE INDEX auth_sessions_user ON auth_sessions (user_id, id DESC);
