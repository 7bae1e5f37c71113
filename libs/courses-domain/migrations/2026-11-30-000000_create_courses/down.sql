DROP INDEX courses_active_order;
DROP INDEX courses_active_title_key;
DROP TABLE courses;
