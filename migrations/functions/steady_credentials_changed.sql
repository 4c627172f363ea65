-- Each instance keeps the tokens it has verified in memory (CredentialCache), so a request
-- does not spend a round trip on its token. Anything that revokes or changes what a token
-- stands for, made through any instance, the CLI or by hand in SQL, tells every instance at
-- commit to forget what it holds. The trigger function of api_tokens_changed and users_changed.
CREATE OR REPLACE FUNCTION steady_credentials_changed() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_notify('steady_credentials', '');
  RETURN NULL;
END
$$;
