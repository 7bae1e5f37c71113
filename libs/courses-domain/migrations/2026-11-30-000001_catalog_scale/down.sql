DROP TRIGGER courses_search_update;
DROP TRIGGER courses_search_insert;
DROP TABLE courses_title_search;
DROP TRIGGER courses_count_unarchive;
DROP TRIGGER courses_count_archive;
DROP TRIGGER courses_count_insert;
DROP TABLE catalog_counters;
