DROP TABLE courses_title_search;
CREATE VIRTUAL TABLE courses_title_search USING fts5(
    title_key,
    content = 'courses',
    content_rowid = 'position',
    tokenize = 'trigram'
);
INSERT INTO courses_title_search (courses_title_search) VALUES ('rebuild');
