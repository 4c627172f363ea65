-- every write a user makes adds to one statistics row per local day, and
-- that row's lock is held until COMMIT. Thirty-two writers of one user took turns on it, so
-- creates and dones ran one at a time however many connections there were. Each PostgreSQL
-- backend now adds to a row of its own (shard = its pid modulo 32): concurrent writes land on
-- different rows, and the statistics are the sums over a day's shards. A day's `id` on the
-- wire is its first row's, which never changes once written.
ALTER TABLE daily_stats ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE daily_stats DROP CONSTRAINT daily_stats_user_id_date_key;
ALTER TABLE daily_stats ADD CONSTRAINT daily_stats_user_date_shard UNIQUE (user_id, date, shard);

-- The shard a statement of this backend writes to.
CREATE FUNCTION steady_stats_shard() RETURNS smallint
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$ SELECT (pg_backend_pid() % 32)::smallint $$;
