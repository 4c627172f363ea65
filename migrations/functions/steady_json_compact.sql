-- A jsonb value as compact JSON text, as JSON.stringify writes it: no space after ':' or ','.
-- jsonb's own text output puts one after each, which the wire does not carry (issue 39: compact
-- JSON on the wire). Keys keep jsonb's order, strings, numbers, booleans and null print as jsonb
-- prints them (the same escaping as to_json).
--
-- Exact because jsonb's text holds no space outside a string except the one after each ',' and
-- ':' separator. Two ways, the same result:
-- - No string holds ", " or ": " (nearly every value: `{"date": null, "logged": 0, "did": [], …}`,
--   `["home", "errands"]`): two plain replace() calls drop the separators' spaces.
-- - Otherwise one regular expression walks the text: each match is either a whole string token
--   (a quote, then anything but a quote or backslash, or a backslash and the character it
--   escapes, up to the closing quote), put back as it is, or a separator and its space, put back
--   without the space. A string is matched from its opening quote, so a ", " inside it is kept.
-- The test between them is a match without capture groups, which PostgreSQL runs on its fast
-- path: from the start, whole string tokens and characters outside strings, then an opened
-- string that reaches a ',' or ':' followed by a space. The capturing replacement costs ~15 µs
-- on a quota's day state against ~1.5 µs for the test and the replace() calls, and the generated
-- task wire text calls this on every task write (migration 0039; the quota sweep writes
-- thousands of tasks at once).
--
-- SQL, not PL/pgSQL, and not STRICT, so PostgreSQL inlines it into its caller's expression: a
-- STRICT function whose body is a CASE is not inlined, and a call through the SQL-function
-- executor costs more than the work. NULL gives NULL all the same (every branch is NULL).
-- PL/pgSQL ran a query per container (jsonb_each over SPI), ~30 µs a task write (migration
-- 0036). IMMUTABLE, as a generated column requires.
CREATE OR REPLACE FUNCTION steady_json_compact(j jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE
  WHEN j::text ~ '^(?:[^"]|"(?:[^"\\]|\\.)*")*"(?:[^"\\]|\\.)*[,:] '
    THEN regexp_replace(j::text, '("(?:[^"\\]|\\.)*")|([,:]) ', '\1\2', 'g')
  ELSE replace(replace(j::text, ', ', ','), ': ', ':')
END $$;
