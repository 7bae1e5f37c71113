DROP TABLE course_history_evidence;
