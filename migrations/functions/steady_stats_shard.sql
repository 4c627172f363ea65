-- The daily_stats shard a statement of this backend adds to: its pid modulo 32. Every write a
-- user makes adds to one statistics row per local day, and that row's lock is held until
-- COMMIT; with one row a day, a user's concurrent writes took turns on it. Each backend now
-- adds to a row of its own, and the statistics are the sums over a day's shards.
CREATE OR REPLACE FUNCTION steady_stats_shard() RETURNS smallint
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$ SELECT (pg_backend_pid() % 32)::smallint $$;
