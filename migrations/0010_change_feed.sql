-- The change feed: one row per object a transaction changed, written in that
-- transaction. `xid` is the writing transaction: readers only take rows whose transaction
-- is older than every transaction still running (pg_snapshot_xmin), so a row that commits
-- late can never land behind a position a reader already passed. Positions are (xid, id).
CREATE TABLE changes (
  id bigserial PRIMARY KEY,
  xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  at timestamptz NOT NULL,
  kind text NOT NULL,
  object_id integer NOT NULL,
  op text NOT NULL,
  -- The object's owner, and whether it was in a shared project (or was a shared project)
  -- when it changed: who may learn that it changed.
  user_id integer NOT NULL,
  shared boolean NOT NULL
);

CREATE INDEX changes_position ON changes (xid, id);
CREATE INDEX changes_user_position ON changes (user_id, xid, id);
CREATE INDEX changes_shared_position ON changes (xid, id) WHERE shared;
CREATE INDEX changes_at ON changes (at);

-- The position of the newest row purged so far: a cursor before it missed rows (410).
CREATE TABLE change_feed_horizon (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  xid xid8 NOT NULL DEFAULT '0',
  id bigint NOT NULL DEFAULT 0
);
INSERT INTO change_feed_horizon DEFAULT VALUES;

-- Below which transaction id every row of this feed is final. pg_snapshot_xmin alone is
-- cluster-wide: one long transaction in another database on the same server (a report, a
-- dump, another app) would hold the feed back for as long as it runs. So the oldest
-- running transaction counts only if it is not known to belong to another database. The
-- test is "known elsewhere", never "known here": a transaction that took its id or ended
-- between the snapshot and the activity read still counts, which can only hold the
-- bound lower, never let a row commit behind it.
CREATE FUNCTION steady_feed_final_below() RETURNS xid8 LANGUAGE sql VOLATILE AS $$
  WITH s AS (SELECT pg_current_snapshot() AS snap)
  SELECT COALESCE(
    (SELECT min(x) FROM s, pg_snapshot_xip(s.snap) AS x
     WHERE NOT EXISTS (
       SELECT 1 FROM pg_stat_activity a
       WHERE a.backend_xid = x::xid
         AND a.datid IS DISTINCT FROM (SELECT oid FROM pg_database WHERE datname = current_database()))),
    (SELECT pg_snapshot_xmax(snap) FROM s))
$$;
