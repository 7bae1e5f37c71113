-- Back to one catalog: only the default catalog's rows can stay (the others would break the
-- single-catalog title index and idempotency keys).
DROP TRIGGER courses_count_insert;
DROP TRIGGER courses_count_archive;
DROP TRIGGER courses_count_unarchive;
DROP TABLE catalog_counters;
DELETE FROM course_creations WHERE catalog <> 'padrao';
CREATE TABLE course_creations_single (
    idempotency_key TEXT PRIMARY KEY NOT NULL,
    fingerprint TEXT NOT NULL,
    course_id TEXT NOT NULL REFERENCES courses (id),
    created_at TEXT NOT NULL
);
INSERT INTO course_creations_single SELECT idempotency_key, fingerprint, course_id, created_at FROM course_creations;
DROP TABLE course_creations;
ALTER TABLE course_creations_single RENAME TO course_creations;
DELETE FROM course_history WHERE catalog <> 'padrao';
DELETE FROM courses WHERE catalog <> 'padrao';
ALTER TABLE course_history DROP COLUMN catalog;
DROP INDEX courses_active_position;
DROP INDEX courses_active_title_key;
ALTER TABLE courses DROP COLUMN catalog;
CREATE UNIQUE INDEX courses_active_title_key ON courses (title_key) WHERE archived = 0;
CREATE INDEX courses_active_position ON courses (position) WHERE archived = 0;
CREATE TABLE catalog_counters (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    active_courses BIGINT NOT NULL CHECK (active_courses >= 0)
);
INSERT INTO catalog_counters (singleton, active_courses) SELECT 1, COUNT(*) FROM courses WHERE archived = 0;
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
