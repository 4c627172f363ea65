-- A user deleted, renamed or moved to another zone (what a verified token carries): see
-- steady_credentials_changed.
CREATE OR REPLACE TRIGGER users_changed AFTER UPDATE OF username, timezone OR DELETE OR TRUNCATE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION steady_credentials_changed();
