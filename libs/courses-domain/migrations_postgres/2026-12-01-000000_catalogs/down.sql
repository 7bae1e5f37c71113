-- Back to one catalog: only the default catalog's rows can stay.
DROP TRIGGER courses_count_insert ON courses;
DROP TRIGGER courses_count_archive ON courses;
DROP TRIGGER courses_count_unarchive ON courses;
DROP TABLE catalog_counters;
DELETE FROM course_creations WHERE catalog <> 'padrao';
ALTER TABLE course_creations DROP CONSTRAINT course_creations_pkey;
ALTER TABLE course_creations DROP COLUMN catalog;
ALTER TABLE course_creations ADD PRIMARY KEY (idempotency_key);
DELETE FROM course_history WHERE catalog <> 'padrao';
ALTER TABLE course_history DROP COLUMN catalog;
DELETE FROM courses WHERE catalog <> 'padrao';
DROP INDEX courses_active_position;
DROP INDEX courses_active_title_key;
ALTER TABLE courses DROP COLUMN catalog;
CREATE UNIQUE INDEX courses_active_title_key ON courses (title_key) WHERE NOT archived;
CREATE INDEX courses_active_position ON courses (position) WHERE NOT archived;
CREATE TABLE catalog_counters (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    active_courses BIGINT NOT NULL CHECK (active_courses >= 0)
);
INSERT INTO catalog_counters (singleton, active_courses) SELECT 1, COUNT(*) FROM courses WHERE NOT archived;
CREATE OR REPLACE FUNCTION catalog_counters_increment() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog_counters SET active_courses = active_courses + 1 WHERE singleton = 1;
    RETURN NULL;
END;
$$;
CREATE OR REPLACE FUNCTION catalog_counters_decrement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog_counters SET active_courses = active_courses - 1 WHERE singleton = 1;
    RETURN NULL;
END;
$$;
CREATE TRIGGER courses_count_insert AFTER INSERT ON courses
    FOR EACH ROW WHEN (NOT new.archived) EXECUTE FUNCTION catalog_counters_increment();
CREATE TRIGGER courses_count_archive AFTER UPDATE OF archived ON courses
    FOR EACH ROW WHEN (NOT old.archived AND new.archived) EXECUTE FUNCTION catalog_counters_decrement();
CREATE TRIGGER courses_count_unarchive AFTER UPDATE OF archived ON courses
    FOR EACH ROW WHEN (old.archived AND NOT new.archived) EXECUTE FUNCTION catalog_counters_increment();
