-- Several catalogs on one database (ADR 0035). Every course, idempotent creation, history entry
-- and active count belongs to one catalog; what was there before is in the default one, 'padrao'.
-- The store sets `catalog` on every row it writes and filters every statement by it.
ALTER TABLE courses ADD COLUMN catalog TEXT NOT NULL DEFAULT 'padrao';

-- Titles are unique among the active courses of one catalog. The index keeps its name: the store
-- recognises a duplicate title by it (ADR 0033).
DROP INDEX courses_active_title_key;
CREATE UNIQUE INDEX courses_active_title_key ON courses (catalog, title_key) WHERE archived = 0;

-- Serves one catalog's keyset pagination.
DROP INDEX courses_active_position;
CREATE INDEX courses_active_position ON courses (catalog, position) WHERE archived = 0;

-- The history says whose catalog it is: another process following the file (ADR 0030) announces
-- each change to that catalog's listeners only.
ALTER TABLE course_history ADD COLUMN catalog TEXT NOT NULL DEFAULT 'padrao';

-- An idempotency key is one catalog's: the same key in another catalog is another creation.
CREATE TABLE course_creations_by_catalog (
    catalog TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    course_id TEXT NOT NULL REFERENCES courses (id),
    created_at TEXT NOT NULL,
    PRIMARY KEY (catalog, idempotency_key)
);
INSERT INTO course_creations_by_catalog (catalog, idempotency_key, fingerprint, course_id, created_at)
    SELECT 'padrao', idempotency_key, fingerprint, course_id, created_at FROM course_creations;
DROP TABLE course_creations;
ALTER TABLE course_creations_by_catalog RENAME TO course_creations;

-- One active count per catalog (a row appears with the catalog's first course).
DROP TRIGGER courses_count_insert;
DROP TRIGGER courses_count_archive;
DROP TRIGGER courses_count_unarchive;
DROP TABLE catalog_counters;
CREATE TABLE catalog_counters (
    catalog TEXT PRIMARY KEY NOT NULL,
    active_courses BIGINT NOT NULL CHECK (active_courses >= 0)
);
INSERT INTO catalog_counters (catalog, active_courses)
    SELECT catalog, COUNT(*) FROM courses WHERE archived = 0 GROUP BY catalog;

CREATE TRIGGER courses_count_insert AFTER INSERT ON courses WHEN new.archived = 0
BEGIN
    INSERT INTO catalog_counters (catalog, active_courses) VALUES (new.catalog, 1)
        ON CONFLICT (catalog) DO UPDATE SET active_courses = active_courses + 1;
END;

CREATE TRIGGER courses_count_archive AFTER UPDATE OF archived ON courses WHEN old.archived = 0 AND new.archived = 1
BEGIN
    UPDATE catalog_counters SET active_courses = active_courses - 1 WHERE catalog = new.catalog;
END;

CREATE TRIGGER courses_count_unarchive AFTER UPDATE OF archived ON courses WHEN old.archived = 1 AND new.archived = 0
BEGIN
    INSERT INTO catalog_counters (catalog, active_courses) VALUES (new.catalog, 1)
        ON CONFLICT (catalog) DO UPDATE SET active_courses = active_courses + 1;
END;
