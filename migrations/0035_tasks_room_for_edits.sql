-- Leaves 15 % of each new tasks page free, so that an edit usually finds room for the row's new
-- version on the same page: a HOT update, which writes none of the table's 13 index entries.
-- At the default (100) a freshly filled page had no room, and a PATCH of a task written
-- since the last VACUUM wrote a new entry in every index (issue 39: 10 % of a random-task PATCH
-- load was HOT before, 100 % after, and the commit statement's database time fell by ~10 %).
-- A task row is ~1.3 KB, so a page holds 5 rows instead of 6 plus room for one new version;
-- pages already written keep their layout until VACUUM FULL or a dump and restore rewrites them.
ALTER TABLE tasks SET (fillfactor = 85);
