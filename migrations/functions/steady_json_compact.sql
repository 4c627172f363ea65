-- A jsonb value as compact JSON text, as JSON.stringify writes it: no space after ':' or ','.
-- jsonb's own text output puts one after each, which the wire does not carry (issue 39: compact
-- JSON on the wire). Keys keep jsonb's order, strings, numbers, booleans and null print as jsonb
-- prints them (the same escaping as to_json).
--
-- One regular expression over jsonb's text, which is exact: the text holds no space outside a
-- string except the one after each ',' and ':' separator. Each match is either a whole string
-- token (a quote, then anything but a quote or backslash, or a backslash and the character it
-- escapes, up to the closing quote), put back as it is, or a separator and its space, put back
-- without the space. A string is matched from its opening quote, before anything inside it, so a
-- ", " or ": " inside a string is never touched.
--
-- SQL, not PL/pgSQL: the task wire text (steady_task_wire_of, a generated column) calls it for
-- the jsonb columns on every task write, and PL/pgSQL ran a query per container (jsonb_each
-- over SPI) whose state every transaction built again, ~30 µs a task write (migration 0036).
-- Inlined into its caller's expression; IMMUTABLE, as a generated column requires.
CREATE OR REPLACE FUNCTION steady_json_compact(j jsonb) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT regexp_replace(j::text, '("(?:[^"\\]|\\.)*")|([,:]) ', '\1\2', 'g') $$;
