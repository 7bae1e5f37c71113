-- Which rule computed the stored title keys (CourseTitle::comparison_key; ADR 0025). The store
-- recomputes every key when it opens a database whose rule is older than its own, in the
-- transaction that migrates it. Databases made before this table existed used rule 1.
CREATE TABLE title_key_rule (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    version INTEGER NOT NULL
);
INSERT INTO title_key_rule (singleton, version) VALUES (1, 1);
