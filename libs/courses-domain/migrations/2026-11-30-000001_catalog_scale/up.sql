-- Catalog at scale: a maintained count of active courses and a substring index on titles.

-- One row, kept exact by the triggers below in the same transaction as each write, so
-- `total` costs one row read instead of a COUNT(*) that grows with the catalog.
CREATE TABLE catalog_counters (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    active_courses BIGINT NOT NULL CHECK (active_courses >= 0)
);
INSERT INTO catalog_counters (singleton, active_courses)
    SELECT 1, COUNT(*) FROM courses WHERE archived = 0;

CREATE TRIGGER courses_count_insert AFTER INSERT ON courses WHEN new.archived = 0
BEGIN
    UPDATE catalog_counters SET active_courses = active_courses + 1 WHERE singleton = 1;
END;

CREATE TRIGGER courses_count_archive AFTER UPDATE OF archived ON courses WHEN old.archived = 0 AND new.archived = 1
BEGIN
    UPDATE catalog_counters SET active_courses = active_courses - 1 WHERE singleton = 1;
END;

CREATE TRIGGER courses_count_unarchive AFTER UPDATE OF archived ON courses WHEN old.archived = 1 AND new.archived = 0
BEGIN
    UPDATE catalog_counters SET active_courses = active_courses + 1 WHERE singleton = 1;
END;

-- Trigram full-text index over the title comparison keys: serves "title contains" completions
-- (three characters or more) with an index lookup instead of a scan. External content: the
-- text lives in `courses`; rowid = courses.position.
CREATE VIRTUAL TABLE courses_title_search USING fts5(
    title_key,
    content = 'courses',
    content_rowid = 'position',
    tokenize = 'trigram'
);
INSERT INTO courses_title_search (courses_title_search) VALUES ('rebuild');

CREATE TRIGGER courses_search_insert AFTER INSERT ON courses
BEGIN
    INSERT INTO courses_title_search (rowid, title_key) VALUES (new.position, new.title_key);
END;

CREATE TRIGGER courses_search_update AFTER UPDATE OF title_key ON courses WHEN old.title_key <> new.title_key
BEGIN
    INSERT INTO courses_title_search (courses_title_search, rowid, title_key) VALUES ('delete', old.position, old.title_key);
    INSERT INTO courses_title_search (rowid, title_key) VALUES (new.position, new.title_key);
END;
