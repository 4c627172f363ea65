-- steady_json_compact (migrations/functions) is now one regular expression over jsonb's text in
-- SQL instead of PL/pgSQL walking each container with a query. Its results are the same, byte
-- for byte (test/wire-fields.test.ts holds it to a scanner over jsonb's text on tricky values), so
-- the stored task wire texts stay as they are. The generated column calls it on every task
-- write; the PL/pgSQL version built its queries' state again in every transaction (~30 µs).
-- This migration only records the change, so an instance of the previous build leaves the new
-- definition in place (functions/README.md).
SELECT 1;
