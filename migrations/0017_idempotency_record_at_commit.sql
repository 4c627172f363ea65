-- Idempotency-Key records written at the end of the keyed write instead of claimed before it
-- (so a keyed write costs no more than an unkeyed one): one statement takes the key's advisory lock and stores the answer,
-- and refuses (so the COMMIT sent with it never runs) when another transaction holds the key
-- (SK409) or a live record already exists (SK422). The caller then rolls back and replays.
CREATE FUNCTION steady_idempotency_record(
  p_lock text, p_user integer, p_key text, p_fingerprint text, p_status integer, p_content_type text,
  p_body text, p_created timestamptz, p_expires timestamptz
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended(p_lock, 0)) THEN
    RAISE EXCEPTION 'Idempotency-Key is in use by another transaction' USING ERRCODE = 'SK409';
  END IF;
  -- An expired record that the purge has not dropped yet is taken over.
  INSERT INTO idempotency_keys (user_id, key, fingerprint, status, content_type, body, created_at, expires_at)
  VALUES (p_user, p_key, p_fingerprint, p_status, p_content_type, p_body, p_created, p_expires)
  ON CONFLICT (user_id, key) DO UPDATE SET
    fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status, content_type = EXCLUDED.content_type,
    body = EXCLUDED.body, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
  WHERE idempotency_keys.expires_at <= p_created;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Idempotency-Key already has a recorded answer' USING ERRCODE = 'SK422';
  END IF;
END
$$;
