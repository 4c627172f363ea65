-- A timestamp as the wire writes it: ISO 8601 in UTC with milliseconds and `Z`, as
-- `Date#toISOString` does (microseconds are cut, not rounded). Every wire shape built in SQL
-- uses it.
--
-- STABLE, not IMMUTABLE: to_char(timestamp, text) is only STABLE, and a function declared
-- stricter than its body is not inlined, so it ran through the SQL-function executor on every
-- call (~16 calls a task). Declared as what it is, callers inline it.
CREATE OR REPLACE FUNCTION steady_iso(ts timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;
