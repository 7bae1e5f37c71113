DROP INDEX courses_active_title_trigram;
DROP TRIGGER courses_count_unarchive ON courses;
DROP TRIGGER courses_count_archive ON courses;
DROP TRIGGER courses_count_insert ON courses;
DROP FUNCTION catalog_counters_decrement();
DROP FUNCTION catalog_counters_increment();
DROP TABLE catalog_counters;
