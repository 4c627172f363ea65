-- A task's wire object as jsonb (mutation responses, events, the undo log): the json form
-- parsed, so there is one definition of the wire format.
CREATE OR REPLACE FUNCTION steady_task_json(t tasks) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT steady_task_wire(t)::jsonb $$;
