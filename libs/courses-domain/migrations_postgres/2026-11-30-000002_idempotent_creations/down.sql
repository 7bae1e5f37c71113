DROP TABLE course_creations;
