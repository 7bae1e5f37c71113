-- Several catalogs on one database (ADR 0035; the same change as migrations/ for SQLite). Every
-- course, idempotent creation, history entry and active count belongs to one catalog; what was
-- there before is in the default one, 'padrao'. The store sets `catalog` on every row it writes and
-- filters every statement by it; no column keeps a default after the rows are filled.
ALTER TABLE courses ADD COLUMN catalog TEXT COLLATE "C" NOT NULL DEFAULT 'padrao';
ALTER TABLE courses ALTER COLUMN catalog DROP DEFAULT;

-- Titles are unique among the active courses of one catalog. The index keeps its name: the store
-- recognises a duplicate title by it (ADR 0033).
DROP INDEX courses_active_title_key;
CREATE UNIQUE INDEX courses_active_title_key ON courses (catalog, title_key) WHERE NOT archived;

-- Serves one catalog's keyset pagination.
DROP INDEX courses_active_position;
CREATE INDEX courses_active_position ON courses (catalog, position) WHERE NOT archived;

ALTER TABLE course_history ADD COLUMN catalog TEXT COLLATE "C" NOT NULL DEFAULT 'padrao';
ALTER TABLE course_history ALTER COLUMN catalog DROP DEFAULT;

-- An idempotency key is one catalog's: the same key in another catalog is another creation.
ALTER TABLE course_creations ADD COLUMN catalog TEXT COLLATE "C" NOT NULL DEFAULT 'padrao';
ALTER TABLE course_creations ALTER COLUMN catalog DROP DEFAULT;
ALTER TABLE course_creations DROP CONSTRAINT course_creations_pkey;
ALTER TABLE course_creations ADD PRIMARY KEY (catalog, idempotency_key);

-- One active count per catalog; its row lock is that catalog's creation lock (ADR 0018, 0035).
DROP TRIGGER courses_count_insert ON courses;
DROP TRIGGER courses_count_archive ON courses;
DROP TRIGGER courses_count_unarchive ON courses;
DROP TABLE catalog_counters;
CREATE TABLE catalog_counters (
    catalog TEXT COLLATE "C" PRIMARY KEY,
    active_courses BIGINT NOT NULL CHECK (active_courses >= 0)
);
INSERT INTO catalog_counters (catalog, active_courses)
    SELECT catalog, COUNT(*) FROM courses WHERE NOT archived GROUP BY catalog;

CREATE OR REPLACE FUNCTION catalog_counters_increment() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO catalog_counters (catalog, active_courses) VALUES (NEW.catalog, 1)
        ON CONFLICT (catalog) DO UPDATE SET active_courses = catalog_counters.active_courses + 1;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION catalog_counters_decrement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog_counters SET active_courses = active_courses - 1 WHERE catalog = NEW.catalog;
    RETURN NULL;
END;
$$;

CREATE TRIGGER courses_count_insert AFTER INSERT ON courses
    FOR EACH ROW WHEN (NOT new.archived) EXECUTE FUNCTION catalog_counters_increment();

CREATE TRIGGER courses_count_archive AFTER UPDATE OF archived ON courses
    FOR EACH ROW WHEN (NOT old.archived AND new.archived) EXECUTE FUNCTION catalog_counters_decrement();

CREATE TRIGGER courses_count_unarchive AFTER UPDATE OF archived ON courses
    FOR EACH ROW WHEN (old.archived AND NOT new.archived) EXECUTE FUNCTION catalog_counters_increment();
