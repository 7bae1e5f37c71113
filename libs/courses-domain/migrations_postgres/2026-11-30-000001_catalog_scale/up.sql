-- Catalog at scale: a maintained count of active courses and a trigram index on title keys.

-- One row, kept exact by the triggers below in the same transaction as each write, so `total`
-- costs one row read. Its row lock is also the creation lock: every write that adds to or removes
-- from the active set takes it first (ADR 0018).
CREATE TABLE catalog_counters (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    active_courses BIGINT NOT NULL CHECK (active_courses >= 0)
);
INSERT INTO catalog_counters (singleton, active_courses)
    SELECT 1, COUNT(*) FROM courses WHERE NOT archived;

CREATE FUNCTION catalog_counters_increment() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog_counters SET active_courses = active_courses + 1 WHERE singleton = 1;
    RETURN NULL;
END;
$$;

CREATE FUNCTION catalog_counters_decrement() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- Trigram index over the active title keys: serves "title contains" completions (three
-- characters or more, `title_key LIKE '%...%'`) with an index lookup instead of a scan.
-- pg_trgm ships with PostgreSQL (contrib) and is a trusted extension: a database owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX courses_active_title_trigram ON courses USING gin (title_key gin_trgm_ops) WHERE NOT archived;
