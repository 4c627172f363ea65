-- A jsonb value as compact JSON text, as JSON.stringify writes it: no space after ':' or ','.
-- jsonb's own text output puts one after each, which the wire does not carry (issue 39: compact
-- JSON on the wire). Keys keep jsonb's order (jsonb_each walks them as jsonb's text prints them).
-- Strings, numbers, booleans and null print as jsonb prints them (the same escaping as to_json).
--
-- IMMUTABLE: the task wire text (steady_task_wire_of, a generated column) calls it for the
-- jsonb columns; an empty array or object, the common case, returns without a query.
CREATE OR REPLACE FUNCTION steady_json_compact(j jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
  CASE jsonb_typeof(j)
    WHEN 'object' THEN
      IF j = '{}'::jsonb THEN RETURN '{}'; END IF;
      RETURN '{' || (SELECT string_agg(to_json(e.key)::text || ':' || steady_json_compact(e.value), ',' ORDER BY e.n)
                     FROM jsonb_each(j) WITH ORDINALITY AS e(key, value, n)) || '}';
    WHEN 'array' THEN
      IF j = '[]'::jsonb THEN RETURN '[]'; END IF;
      RETURN '[' || (SELECT string_agg(steady_json_compact(e.value), ',' ORDER BY e.n)
                     FROM jsonb_array_elements(j) WITH ORDINALITY AS e(value, n)) || ']';
    ELSE
      RETURN j::text;
  END CASE;
END $$;
