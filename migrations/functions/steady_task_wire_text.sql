-- A task's wire JSON text: its stored `wire_text` (steady_task_wire_of, rendered when the row
-- was written). For callers that hold a whole row.
CREATE OR REPLACE FUNCTION steady_task_wire_text(t tasks) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT t.wire_text $$;
