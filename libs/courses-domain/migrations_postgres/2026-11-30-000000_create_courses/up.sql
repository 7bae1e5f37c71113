-- The course catalog (PostgreSQL). One row per course, archived ones included (archiving is a
-- soft delete). Same tables, columns and rules as migrations/ (SQLite); ADR 0018 lists the differences.
CREATE TABLE courses (
    -- Creation order, assigned by the database and never reused: the catalog's keyset. Creations
    -- draw it while holding the catalog_counters row lock, so positions commit in order (ADR 0018).
    position BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- UUID v4 in canonical lowercase hyphenated form: the course's public identity. Text in the
    -- "C" collation (byte order), so a prefix is a range on the unique index, as in SQLite.
    id TEXT COLLATE "C" NOT NULL UNIQUE,
    -- The title as the user wrote it, trimmed.
    title TEXT NOT NULL,
    -- The comparison key computed by the domain (CourseTitle::comparison_key): lowercase, inner
    -- whitespace collapsed. "C" collation: byte order, as SQLite's BINARY.
    title_key TEXT COLLATE "C" NOT NULL,
    workload_hours INTEGER NOT NULL CHECK (workload_hours BETWEEN 1 AND 1000),
    archived BOOLEAN NOT NULL DEFAULT FALSE,
    -- Revision counter, bumped on every accepted write; the store's compare-and-swap key.
    version BIGINT NOT NULL CHECK (version >= 1),
    -- UTC instants; the domain keeps millisecond precision.
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- No two active courses share a title: enforced here so two concurrent writers can never both win.
-- The store recognises a violation by this index's name.
CREATE UNIQUE INDEX courses_active_title_key ON courses (title_key) WHERE NOT archived;

-- Serves the catalog's keyset pagination (active courses, oldest first).
CREATE INDEX courses_active_position ON courses (position) WHERE NOT archived;
