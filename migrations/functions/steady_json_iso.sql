-- A timestamp as JSON text: a quoted steady_iso, or null. For the wire text concatenated in
-- steady_task_wire_of.
CREATE OR REPLACE FUNCTION steady_json_iso(ts timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT COALESCE('"' || steady_iso(ts) || '"', 'null') $$;
