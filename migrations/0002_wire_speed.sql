-- steady_iso was declared IMMUTABLE, but to_char(timestamp, text) is only STABLE, so
-- PostgreSQL refused to inline it and ran it through the SQL-function executor on every
-- call: ~16 calls per task made that most of the cost of a task list. Declared STABLE (what
-- its body really is) it is inlined into steady_task_json and its callers. Same output.
CREATE OR REPLACE FUNCTION steady_iso(ts timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;
