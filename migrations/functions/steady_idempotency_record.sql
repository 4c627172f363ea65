-- The Idempotency-Key record as builds before migration 0029 wrote it: takes the key's
-- advisory lock (else SK409) and inserts the record (a recorded key fails with 23505). This
-- build records keys with a plain INSERT (see steady_idempotency_busy) and never calls it; it
-- stays for an instance of an earlier build still running during an upgrade. Drop it in a
-- migration (and delete this file) once no such build can be running.
CREATE OR REPLACE FUNCTION steady_idempotency_record(
  p_lock text, p_user integer, p_key text, p_fingerprint text, p_status integer, p_content_type text,
  p_body text, p_created timestamptz, p_expires timestamptz
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended(p_lock, 0)) THEN
    RAISE EXCEPTION 'Idempotency-Key is in use by another transaction' USING ERRCODE = 'SK409';
  END IF;
  INSERT INTO idempotency_keys (user_id, key, fingerprint, status, content_type, body, created_at, expires_at)
  VALUES (p_user, p_key, p_fingerprint, p_status, p_content_type, p_body, p_created, p_expires);
END
$$;
