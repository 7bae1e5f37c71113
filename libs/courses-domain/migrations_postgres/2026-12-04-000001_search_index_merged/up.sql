-- The trigram index's pending list bounded (ADR 0052). GIN's `fastupdate` appends new entries
-- to a pending list that every search reads in full: after a bulk load it held 275 pages, and a
-- rare substring took 7 ms instead of 0.4 ms at a million courses. A 128 kB list (16 pages)
-- keeps inserts batched and bounds what a search reads; what is pending now is merged here.
ALTER INDEX courses_active_title_trigram SET (gin_pending_list_limit = 128);
SELECT gin_clean_pending_list('courses_active_title_trigram'::regclass);
