-- A task's wire object as json, for single rows (the change feed, the mutation pipeline's
-- reads). PL/pgSQL on purpose: it plans the expression once per connection, where an inlined
-- call would be planned again by every unprepared statement (~1.5 ms, more than rendering).
CREATE OR REPLACE FUNCTION steady_task_wire(t tasks) RETURNS json
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$ BEGIN RETURN steady_task_wire_text(t)::json; END $$;
