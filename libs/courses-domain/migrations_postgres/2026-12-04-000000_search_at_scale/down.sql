DROP INDEX courses_active_id;
