-- The active-course counters are kept per statement on insert, not per row (issue 26, ADR 0058).
-- A per-row trigger updated the catalog's counter row once per inserted course: inside one
-- transaction each update adds a version of that row, and the next one walks every version
-- before it, so a batch of 10,000 rows cost quadratic time (an import into PostgreSQL ran at
-- about 1,400 rows/s). A statement-level trigger sees the statement's new rows as a transition
-- table and adds their count once. Archiving and unarchiving stay per row: the tools change one
-- course at a time, and PostgreSQL allows no transition table on an `UPDATE OF` trigger.
DROP TRIGGER courses_count_insert ON courses;

CREATE FUNCTION catalog_counters_add_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO catalog_counters (catalog, active_courses)
        SELECT catalog, COUNT(*) FROM inserted WHERE NOT archived GROUP BY catalog
        ON CONFLICT (catalog) DO UPDATE SET active_courses = catalog_counters.active_courses + EXCLUDED.active_courses;
    RETURN NULL;
END;
$$;

CREATE TRIGGER courses_count_insert AFTER INSERT ON courses
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_counters_add_inserted();
