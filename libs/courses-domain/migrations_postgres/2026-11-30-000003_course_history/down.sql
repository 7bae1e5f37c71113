DROP TABLE course_history;
