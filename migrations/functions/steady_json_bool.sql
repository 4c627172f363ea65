-- A boolean as JSON text, for the wire text concatenated in steady_task_wire_of.
CREATE OR REPLACE FUNCTION steady_json_bool(b boolean) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE b WHEN true THEN 'true' WHEN false THEN 'false' ELSE 'null' END $$;
