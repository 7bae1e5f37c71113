-- The trigram index without positions (`detail = none`; issue 26, ADR 0059). A search asks it for a
-- cover of the key's trigrams, each one term, and keeps the title keys that hold the key (ADR
-- 0055): it never asks for a phrase, the one query that needs each trigram's positions. Without
-- them the index is a third of the size (48 against 143 MB at a million courses), is built in 5.3 s
-- instead of 9.1 s, and answers the same cover in the same time. About 5 s at a million courses,
-- once; the triggers that keep it name it and stay as they are.
DROP TABLE courses_title_search;
CREATE VIRTUAL TABLE courses_title_search USING fts5(
    title_key,
    content = 'courses',
    content_rowid = 'position',
    tokenize = 'trigram',
    detail = none
);
INSERT INTO courses_title_search (courses_title_search) VALUES ('rebuild');
