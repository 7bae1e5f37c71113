DROP INDEX courses_active_position;
DROP INDEX courses_active_title_key;
DROP TABLE courses;
