-- Search at scale (ADR 0052; the same index as migrations/ for SQLite): an id prefix is a range on
-- one catalog's active ids, read in id order ("C" collation: byte order, as SQLite's), stopping at
-- the limit.
CREATE INDEX courses_active_id ON courses (catalog, id) WHERE NOT archived;
