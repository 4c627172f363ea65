-- The refusal of an Idempotency-Key another transaction holds (SK409). The service records a
-- key with one plain INSERT:
--   INSERT INTO idempotency_keys (…) SELECT …,
--     CASE WHEN pg_try_advisory_xact_lock(…) THEN <created> ELSE steady_idempotency_busy() END, …
-- CASE evaluates its ELSE branch only when the lock is refused, so this runs only then; a key
-- already recorded fails the INSERT on the primary key (23505).
CREATE OR REPLACE FUNCTION steady_idempotency_busy() RETURNS timestamptz LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'Idempotency-Key is in use by another transaction' USING ERRCODE = 'SK409';
END
$$;
