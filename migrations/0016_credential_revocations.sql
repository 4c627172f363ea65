-- Each instance keeps the tokens it has verified in memory, so a request does
-- not spend a round trip on its token. Anything that revokes or changes what a token stands
-- for (a token deleted, a user deleted, renamed or moved to another zone), made through any
-- instance, the CLI or by hand in SQL, tells every instance at commit to forget what it holds.
CREATE FUNCTION steady_credentials_changed() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_notify('steady_credentials', '');
  RETURN NULL;
END
$$;

CREATE TRIGGER api_tokens_changed AFTER UPDATE OR DELETE OR TRUNCATE ON api_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION steady_credentials_changed();

CREATE TRIGGER users_changed AFTER UPDATE OF username, timezone OR DELETE OR TRUNCATE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION steady_credentials_changed();
