-- The refusal of a write whose row changed after it was read (SK412). An edit reads its task
-- before its transaction (src/pipeline/Mutations.ts, `readFirst`) and sends its UPDATE with the
-- row's version as read, `WHERE id = … AND xmin = <as read>`; the commit statement's `target`
-- is then `COALESCE((SELECT wire FROM moved), steady_row_moved())`, so an UPDATE that found
-- another version (a write committed in between) fails the whole statement here, whichever CTE
-- reads `target` first, and the service runs the edit again with the row locked.
CREATE OR REPLACE FUNCTION steady_row_moved() RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'The row changed after it was read' USING ERRCODE = 'SK412';
END
$$;
