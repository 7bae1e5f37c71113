-- The trigram index as one merged segment (ADR 0052). A bulk load (the scale benchmark's, an
-- import) leaves FTS5 many segments, and a search looks each trigram up in every one: a rare
-- substring read about twice the pages it reads once they are merged. Writes after this keep
-- FTS5's own incremental merging. About 5 s at a million courses, once.
INSERT INTO courses_title_search (courses_title_search) VALUES ('optimize');
