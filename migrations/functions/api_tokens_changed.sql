-- A token deleted or changed: see steady_credentials_changed.
CREATE OR REPLACE TRIGGER api_tokens_changed AFTER UPDATE OR DELETE OR TRUNCATE ON api_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION steady_credentials_changed();
