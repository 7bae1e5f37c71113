-- The course catalog. One row per course, archived ones included (archiving is a soft delete).
CREATE TABLE courses (
    -- Creation order, assigned by the database and never reused: the catalog's keyset.
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    -- UUID v4 in canonical lowercase hyphenated form: the course's public identity.
    id TEXT NOT NULL UNIQUE,
    -- The title as the user wrote it, trimmed.
    title TEXT NOT NULL,
    -- The comparison key computed by the domain (CourseTitle::comparison_key): lowercase, inner whitespace collapsed.
    title_key TEXT NOT NULL,
    workload_hours INTEGER NOT NULL CHECK (workload_hours BETWEEN 1 AND 1000),
    archived BOOLEAN NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
    -- Revision counter, bumped on every accepted write; the store's compare-and-swap key.
    version BIGINT NOT NULL CHECK (version >= 1),
    -- RFC 3339 UTC with millisecond precision (fixed width, so text order is time order).
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- No two active courses share a title: enforced here so two concurrent writers can never both win.
CREATE UNIQUE INDEX courses_active_title_key ON courses (title_key) WHERE archived = 0;

-- Serves the catalog's keyset pagination (active courses, oldest first) and its count.
CREATE INDEX courses_active_position ON courses (position) WHERE archived = 0;
