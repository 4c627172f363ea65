-- The change feed's horizon: below which transaction id every row of `changes` is final. A
-- reader takes only rows whose transaction is older than every transaction still running, so
-- a row that commits late can never land behind a position a reader already passed.
--
-- pg_snapshot_xmin alone is cluster-wide: one long transaction in another database on the
-- same server (a report, a dump, another app) would hold the feed back for as long as it runs.
-- So the oldest running transaction counts only if it is not known to belong to another
-- database. The test is "known elsewhere", never "known here": a transaction that took its id
-- or ended between the snapshot and the activity read still counts, which can only hold the
-- bound lower, never let a row commit behind it.
CREATE OR REPLACE FUNCTION steady_feed_final_below() RETURNS xid8 LANGUAGE sql VOLATILE AS $$
  WITH s AS (SELECT pg_current_snapshot() AS snap)
  SELECT COALESCE(
    (SELECT min(x) FROM s, pg_snapshot_xip(s.snap) AS x
     WHERE NOT EXISTS (
       SELECT 1 FROM pg_stat_activity a
       WHERE a.backend_xid = x::xid
         AND a.datid IS DISTINCT FROM (SELECT oid FROM pg_database WHERE datname = current_database()))),
    (SELECT pg_snapshot_xmax(snap) FROM s))
$$;
