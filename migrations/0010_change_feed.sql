-- The change feed (issue 14 §2): one row per object a transaction changed, written in that
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
