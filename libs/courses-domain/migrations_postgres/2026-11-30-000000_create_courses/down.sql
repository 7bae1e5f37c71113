DROP TABLE courses;
