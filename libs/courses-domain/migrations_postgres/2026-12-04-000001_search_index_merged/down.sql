ALTER INDEX courses_active_title_trigram RESET (gin_pending_list_limit);
