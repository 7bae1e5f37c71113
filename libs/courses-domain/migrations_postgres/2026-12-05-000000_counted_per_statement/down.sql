DROP TRIGGER courses_count_insert ON courses;
DROP FUNCTION catalog_counters_add_inserted();
CREATE TRIGGER courses_count_insert AFTER INSERT ON courses
    FOR EACH ROW WHEN (NOT new.archived) EXECUTE FUNCTION catalog_counters_increment();
